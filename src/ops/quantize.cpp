#include <onnxstream/ops/quantize.hpp>

#include "bound_operation.hpp"
#include "data_layout.hpp"
#include "quantize_blocks.hpp"
#include "quantize_kernels.hpp"

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/model_edits.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/tensor_encoding.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/proto/encoded_message.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using graph::none;

namespace {

// An allocator whose resize leaves new floats unset: quantize's step is refilled by memcpy,
// and a std::vector<float>'s resize would first zero up to 8 MiB a step.
template <class T>
struct uninitialized_allocator : std::allocator<T> {
    using std::allocator<T>::allocator;
    template <class U>
    void construct(U* at) noexcept {
        ::new (static_cast<void*>(at)) U;
    }
};

constexpr std::int64_t quantize_opset = 21;  // DequantizeLinear with block_size, int4/uint4
constexpr std::int64_t quantize_ir_version = 10;
constexpr std::int64_t lowest_raised_opset = 13;  // below it, many operators moved attributes to inputs
constexpr auto float32 = static_cast<std::int32_t>(onnx::data_type::float32);
constexpr auto float16 = static_cast<std::int32_t>(onnx::data_type::float16);
constexpr std::string_view microsoft_domain = "com.microsoft";

const char* type_name(quantized_type t) {
    switch (t) {
        case quantized_type::int8: return "int8";
        case quantized_type::int4: return "int4";
        case quantized_type::uint4: return "uint4";
    }
    return "";
}

std::int32_t onnx_type(quantized_type t) {
    switch (t) {
        case quantized_type::int8: return static_cast<std::int32_t>(onnx::data_type::int8);
        case quantized_type::int4: return static_cast<std::int32_t>(onnx::data_type::int4);
        case quantized_type::uint4: return static_cast<std::int32_t>(onnx::data_type::uint4);
    }
    return 0;
}

// One weight to quantize and the tensors that replace it.
struct weight_job {
    graph::tensor_id source = none;
    onnx::site_id site = none;
    graph::scope_id scope = none;
    std::int32_t type = 0;
    std::int64_t rows = 0;     // dims[0]
    std::int64_t columns = 0;  // dims[1]
    std::int64_t axis = 0;
    graph::tensor_id values = none;
    graph::tensor_id scales = none;
    graph::tensor_id zero_points = none;
    std::size_t report = 0;                 // index into report_.quantized
    std::vector<graph::node_id> consumers;  // matmulnbits: the MatMul nodes replaced
};

// Operators whose meaning at opset 21 differs from their meaning at an earlier opset in a
// way a model would notice (not only new types or new optional inputs): raising the opset
// under them would change what the model computes. They block below `before`.
struct opset_blocker {
    std::string_view op_type;
    std::int64_t before;
};
constexpr opset_blocker opset_blockers[] = {
    {"RoiAlign", 16},            // coordinate_transformation_mode's default became half_pixel
    {"GridSample", 20},          // modes renamed (bilinear -> linear)
    {"DFT", 20},                 // axis moved to an input
    {"GroupNormalization", 21},  // scale and bias per channel instead of per group
};

// Reductions whose `axes` attribute became an input at opset 18 (ReduceSum at 13): below
// 18 they are rewritten, the attribute's values moved to a new int64 initializer.
constexpr std::string_view axes_moved_at_18[] = {"ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",     "ReduceL1",
                                                 "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

class quantizer : detail::bound_operation<quantize_options, quantize_report> {
public:
    using bound_operation::bound_operation;

    result<quantize_report> run() {
        ONNXSTREAM_TRY(check_options());
        report_.input = model_path_;
        report_.weights = type_name(options_.weights);
        report_.block_size = options_.block_size;
        report_.symmetric = options_.symmetric;
        report_.format = nbits() ? "matmulnbits" : "qdq";
        report_.output = options_.output.empty() ? default_output(model_path_, report_.weights) : options_.output;
        ONNXSTREAM_ASSIGN(data_name_, choose_data_name(report_.output, options_.data_name));
        ONNXSTREAM_TRY(open_session(onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));
        const graph::tensor_reader reader(model_, &bound_.data);
        ONNXSTREAM_ASSIGN(graph_, graph::graph_model::build(model_));
        if (nbits()) {
            // A contrib operator: the default-domain opset stays as it is.
            report_.opset_before = report_.opset_after = graph_.opset("");
            report_.ir_version_before = report_.ir_version_after = ir_version();
        } else {
            ONNXSTREAM_TRY(check_opset());
        }
        ONNXSTREAM_TRY(choose_weights(reader));
        if (jobs_.empty()) {
            std::string why;
            for (std::size_t i = 0; i < report_.skipped.size() && i < 3; ++i)
                why += (i == 0 ? ": " : "; ") + report_.skipped[i].name + " (" + report_.skipped[i].reason + ")";
            return failure(error_code::unsupported,
                           "nothing to quantize: no constant float weight of " + op_list() + " qualifies" + why,
                           "check --ops, --min-size and --exclude; nothing was written");
        }
        edit_graph();
        session_.release_model_pages();
        ONNXSTREAM_TRY(bound_.data.check_unchanged());
        ONNXSTREAM_TRY(write(reader));
        for (const auto& q : report_.quantized) {
            report_.bytes_before += q.bytes_before;
            report_.bytes_after += q.bytes_after;
            report_.max_relative_error = std::max(report_.max_relative_error, q.max_relative_error);
        }
        return std::move(report_);
    }

private:
    result<void> check_options() const {
        const auto b = options_.block_size;
        if (b != 32 && b != 64 && b != 128 && b != 256)
            return failure(error_code::invalid_argument, "block size " + std::to_string(b) + " is not one of 32, 64, 128, 256",
                           "choose a power of two from 32 to 256 (the last block of a weight may be short; it is padded "
                           "as the ONNX spec says)");
        for (const auto& op : options_.ops)
            if (op != "MatMul" && op != "Gemm" && op != "Gather")
                return failure(error_code::invalid_argument, "cannot quantize the weights of '" + op + "'",
                               "--ops takes MatMul, Gemm and Gather");
        if (nbits() && options_.weights == quantized_type::int8)
            return failure(error_code::invalid_argument, "--format matmulnbits takes 4-bit weights",
                           "use --weights int4 or uint4 with it, or --format qdq for int8");
        if (options_.ops.empty())
            return failure(error_code::invalid_argument, "no operator to quantize the weights of", "--ops takes MatMul,Gemm");
        return {};
    }

    bool nbits() const noexcept { return options_.format == quantized_format::matmulnbits; }

    std::string op_list() const {
        std::string list;
        for (const auto& op : options_.ops) list += (list.empty() ? "" : "/") + op;
        return list;
    }

    bool chosen(std::string_view op) const {
        return std::find(options_.ops.begin(), options_.ops.end(), op) != options_.ops.end();
    }

    std::int64_t ir_version() const {
        const auto* f = model_.tree.find(0, onnx::number(onnx::model_field::ir_version));
        return f != nullptr ? static_cast<std::int64_t>(model_.tree.value(*f)) : 0;
    }

    // The opset can be raised to 21 when nothing in the graphs means something else there.
    result<void> check_opset() {
        report_.opset_before = graph_.opset("");
        report_.ir_version_before = ir_version();
        report_.opset_after = std::max<std::int64_t>(report_.opset_before, quantize_opset);
        report_.ir_version_after = std::max<std::int64_t>(report_.ir_version_before, quantize_ir_version);
        const auto opset = report_.opset_before;
        if (opset >= quantize_opset) return {};
        if (opset == 0)
            return failure(error_code::unsupported, "the model imports no default-domain opset to raise to 21",
                           "export the model with opset 21 (or at least 13), then quantize it");
        if (opset < lowest_raised_opset)
            return failure(error_code::unsupported,
                           "the model's opset " + std::to_string(opset) +
                               " is too old to raise to 21 (blocked DequantizeLinear needs 21; many operators changed "
                               "since " +
                               std::to_string(opset) + ")",
                           "export the model with opset 21 (or at least 13), then quantize it");
        std::set<std::string> blocking;
        std::vector<graph::node_id> reductions;
        for (const auto n : graph_.nodes.ids()) {
            if (!graph_.node_live(n) || !graph_.nodes[n].domain().empty()) continue;
            if (graph_.scopes[graph_.nodes[n].scope].kind == graph::scope_kind::function) continue;
            const auto op = graph_.nodes[n].op_type();
            for (const auto& b : opset_blockers)
                if (b.op_type == op && opset < b.before) blocking.insert(std::string(op));
            if (opset < 18 &&
                std::find(std::begin(axes_moved_at_18), std::end(axes_moved_at_18), op) != std::end(axes_moved_at_18) &&
                graph_.attribute(n, "axes"))
                reductions.push_back(n);
        }
        if (!blocking.empty()) {
            std::string list;
            for (const auto& b : blocking) list += (list.empty() ? "" : ", ") + b;
            return failure(
                error_code::unsupported,
                "cannot raise the opset from " + std::to_string(opset) + " to 21: " + list + " means something else at opset 21",
                "export the model with opset 21, then quantize it");
        }
        for (const auto n : reductions) move_axes_to_input(n);
        return {};
    }

    // Reduce*(data) {axes = [...]} -> Reduce*(data, axes_initializer): the opset 18 form.
    void move_axes_to_input(graph::node_id n) {
        const auto axes = graph_.attribute(n, "axes")->ints;
        graph::computed_values values;
        values.has_bytes = true;
        for (const auto a : axes) {
            auto bits = static_cast<std::uint64_t>(a);
            for (int i = 0; i < 8; ++i, bits >>= 8U) values.bytes.push_back(static_cast<std::byte>(bits & 0xFFU));
        }
        const auto scope = graph_.nodes[n].scope;
        const auto name = graph_.names.fresh(std::string(graph_.node_name(n).empty() ? "reduce" : graph_.node_name(n)) + "_axes");
        graph_.add_tensor(scope, name, static_cast<std::int32_t>(onnx::data_type::int64),
                          {static_cast<std::int64_t>(axes.size())}, std::move(values));
        graph_.set_input(n, 1, name);
        graph_.drop_attribute(n, "axes");
        ++report_.nodes_upgraded;
    }

    // Which initializers are quantized; the others read by a chosen op are listed as skipped.
    result<void> choose_weights(const graph::tensor_reader& reader) {
        const graph::graph_index index(graph_);
        std::set<std::string, std::less<>> excluded(options_.exclude.begin(), options_.exclude.end());
        std::set<std::string, std::less<>> seen;
        graph::file_walk walk(graph_);
        for (const auto t : graph_.tensors.ids()) {
            if (!graph_.tensor_live(t)) continue;
            walk.reached(t);
            const auto& x = graph_.tensors[t];
            const auto name = graph_.text(x.name);
            if (excluded.contains(name)) seen.insert(std::string(name));
            const auto v = index.resolve(x.scope, x.name);
            if (v == none) continue;
            const auto value = index.at(v);
            if (value.kind != graph::value_kind::initializer || value.tensor != t) continue;
            // Only weights some chosen op reads as B are considered (and reported).
            std::int64_t axis = -1;
            std::string other;  // why another use prevents it
            std::vector<graph::node_id> consumers;
            bool read_by_chosen = false;  // as B of a chosen op, whatever else reads it
            for (const auto& use : index.uses(v)) {
                if (use.node == none) {
                    other = "it is a graph output";
                    continue;
                }
                const auto& nd = graph_.nodes[use.node];
                const auto op = nd.op_type();
                // The weight of MatMul and Gemm is input B; an embedding is Gather's data.
                const std::uint32_t weight_slot = op == "Gather" ? 0 : 1;
                if (!nd.domain().empty() || use.slot != weight_slot || !chosen(op)) {
                    other = "node " + graph_.node_label(use.node) + " reads it too";
                    continue;
                }
                read_by_chosen = true;
                if (use.scope != x.scope) {
                    other = "a subgraph reads it";
                    continue;
                }
                if (op == "Gather") {
                    const auto gather_axis = graph_.attribute(use.node, "axis");
                    if (gather_axis && gather_axis->i && *gather_axis->i != 0) {
                        other = "Gather reads it along axis " + std::to_string(*gather_axis->i) + ", not as an embedding";
                        continue;
                    }
                }
                if (nbits() && op != "MatMul") {
                    other = "--format matmulnbits replaces MatMul nodes only";
                    continue;
                }
                // Blocks along the reduction axis; an embedding's rows are looked up whole, so
                // its blocks run along each row (axis 1).
                std::int64_t this_axis = op == "Gather" ? 1 : 0;
                if (op == "Gemm") {
                    const auto trans = graph_.attribute(use.node, "transB");
                    this_axis = trans && trans->i && *trans->i != 0 ? 1 : 0;
                }
                if (axis >= 0 && axis != this_axis) other = "its readers need blocks along different axes";
                axis = this_axis;
                consumers.push_back(use.node);
            }
            if (!read_by_chosen) continue;
            const auto skip = [&](std::string reason) { report_.skipped.push_back({std::string(name), std::move(reason)}); };
            const auto type = graph_.tensor_type(t);
            const auto dims = graph_.tensor_dims(t);
            const auto bytes = graph_.tensor_bytes(t);
            if (excluded.contains(name)) skip("excluded");
            else if (value.overridable) skip("also a graph input, so not constant");
            else if (value.pinned) skip("a training graph uses it");
            else if (!other.empty()) skip(other);
            else if (type != float32 && type != float16) skip("not float32 or float16");
            else if (dims.size() != 2) skip(std::to_string(dims.size()) + "-D, not a 2-D weight");
            else if (dims[0] <= 0 || dims[1] <= 0) skip("empty");
            else if (bytes < options_.min_size) skip("smaller than --min-size (" + std::to_string(bytes) + " bytes)");
            else if (x.site == none || !reader.readable(x.site)) skip("its bytes cannot be read");
            else {
                weight_job job;
                job.source = t;
                job.site = x.site;
                job.scope = x.scope;
                job.type = type;
                job.rows = dims[0];
                job.columns = dims[1];
                job.axis = axis;
                job.report = report_.quantized.size();
                job.consumers = std::move(consumers);
                report_.quantized.push_back({std::string(name), dims, axis, bytes, 0, 0});
                jobs_.push_back(job);
            }
        }
        for (const auto& name : options_.exclude)
            if (!seen.contains(name))
                return failure(error_code::invalid_argument, "--exclude names '" + name + "', which no initializer is called",
                               "check the names with `onnxstream inspect`; nothing was written");
        return {};
    }

    // Each weight becomes DequantizeLinear(values, scales[, zero points]) named like it, so
    // its readers stay as they are. The nodes go first in their scope: their inputs are
    // all initializers.
    void edit_graph() {
        if (nbits()) {
            edit_graph_nbits();
            return;
        }
        const auto type = onnx_type(options_.weights);
        const bool zero = detail::has_zero_point(options_.weights, options_.symmetric);
        std::vector<std::vector<graph::node_id>> added(graph_.scopes.size());
        for (auto& job : jobs_) {
            const auto name_id = graph_.tensors[job.source].name;
            const std::string name(graph_.text(name_id));
            const auto blocks = [&](std::int64_t d) {
                return (d + static_cast<std::int64_t>(options_.block_size) - 1) / static_cast<std::int64_t>(options_.block_size);
            };
            std::vector<std::int64_t> scale_dims{job.rows, job.columns};
            scale_dims[static_cast<std::size_t>(job.axis)] = blocks(scale_dims[static_cast<std::size_t>(job.axis)]);
            graph_.remove_tensor(job.source);
            const auto values_name = graph_.names.fresh(name + "_quantized");
            const auto scales_name = graph_.names.fresh(name + "_scale");
            job.values = graph_.add_tensor(job.scope, values_name, type, {job.rows, job.columns}, {});
            job.scales = graph_.add_tensor(job.scope, scales_name, job.type, scale_dims, {});
            graph::name_list inputs{values_name, scales_name};
            if (zero) {
                const auto zero_name = graph_.names.fresh(name + "_zero_point");
                job.zero_points = graph_.add_tensor(job.scope, zero_name, type, scale_dims, {});
                inputs.push_back(zero_name);
            }
            const auto n = graph_.add_node(job.scope, none, "DequantizeLinear", std::move(inputs), graph::name_list{name_id},
                                           name + "_DequantizeLinear");
            graph_.set_attribute(n, {"axis", job.axis, {}});
            graph_.set_attribute(n, {"block_size", static_cast<std::int64_t>(options_.block_size), {}});
            added[job.scope.value].push_back(n);
        }
        for (const auto s : graph_.scopes.ids()) {
            const auto& nodes = added[s.value];
            if (nodes.empty()) continue;
            auto& list = graph_.scopes[s].nodes;
            list.erase(std::remove_if(list.begin(), list.end(),
                                      [&](graph::node_id n) { return std::find(nodes.begin(), nodes.end(), n) != nodes.end(); }),
                       list.end());
            list.insert(list.begin(), nodes.begin(), nodes.end());
        }
    }

    std::uint64_t blocks_along_k(const weight_job& job) const {
        return (static_cast<std::uint64_t>(job.rows) + options_.block_size - 1) / options_.block_size;
    }

    // Each MatMul(A, W) becomes com.microsoft MatMulNBits(A, B, scales[, zero points])
    // {K, N, bits = 4, block_size}: B [N, blocks, block_size / 2] holds each column's
    // blocks, unsigned 4-bit (ONNX Runtime's own quantizer's layout); scales [N * blocks]
    // column by column; zero points (asymmetric) [N * ceil(blocks / 2)], absent meaning 8.
    void edit_graph_nbits() {
        const auto uint8 = static_cast<std::int32_t>(onnx::data_type::uint8);
        for (auto& job : jobs_) {
            const auto name_id = graph_.tensors[job.source].name;
            const std::string name(graph_.text(name_id));
            const auto n = static_cast<std::int64_t>(job.columns);
            const auto blocks = static_cast<std::int64_t>(blocks_along_k(job));
            const auto blob = static_cast<std::int64_t>(options_.block_size / 2);
            graph_.remove_tensor(job.source);
            const auto values_name = graph_.names.fresh(name + "_quantized");
            const auto scales_name = graph_.names.fresh(name + "_scale");
            job.values = graph_.add_tensor(job.scope, values_name, uint8, {n, blocks, blob}, {});
            job.scales = graph_.add_tensor(job.scope, scales_name, job.type, {n * blocks}, {});
            graph::name_list inputs{graph::empty_name, values_name, scales_name};
            if (!options_.symmetric) {
                const auto zero_name = graph_.names.fresh(name + "_zero_point");
                job.zero_points = graph_.add_tensor(job.scope, zero_name, uint8, {n * ((blocks + 1) / 2)}, {});
                inputs.push_back(zero_name);
            }
            for (const auto m : job.consumers) {
                auto node_inputs = inputs;
                node_inputs[0] = graph_.nodes[m].inputs[0];
                const auto label = std::string(graph_.node_name(m).empty() ? name : graph_.node_name(m)) + "_MatMulNBits";
                const auto added = graph_.add_node(graph_.nodes[m].scope, m, "MatMulNBits", std::move(node_inputs),
                                                   graph_.nodes[m].outputs, label);
                graph_.nodes[added].op = graph_.operator_of(microsoft_domain, "MatMulNBits");
                graph_.set_attribute(added, {"K", job.rows, {}});
                graph_.set_attribute(added, {"N", job.columns, {}});
                graph_.set_attribute(added, {"bits", 4, {}});
                graph_.set_attribute(added, {"block_size", static_cast<std::int64_t>(options_.block_size), {}});
                graph_.remove_node(m);
            }
        }
    }

    std::uint64_t values_length(const weight_job& job) const {
        if (nbits()) return static_cast<std::uint64_t>(job.columns) * blocks_along_k(job) * (options_.block_size / 2);
        return detail::packed_bytes(static_cast<std::uint64_t>(job.rows) * static_cast<std::uint64_t>(job.columns),
                                    detail::bits_of(options_.weights));
    }
    std::uint64_t scale_count(const weight_job& job) const {
        const auto b = options_.block_size;
        const auto r = static_cast<std::uint64_t>(job.rows);
        const auto c = static_cast<std::uint64_t>(job.columns);
        return job.axis == 0 ? (r + b - 1) / b * c : r * ((c + b - 1) / b);
    }

    // Starts computed tensor `t` in the spill file: its TensorProto header when it stays
    // embedded, then (the caller appends them) its `length` bytes.
    result<void> begin_tensor(graph::tensor_id t, std::uint64_t length, bool external, io::spill_file& spill,
                              graph::storage_plan& plan) const {
        const auto& c = *graph_.computed(t);
        auto& placed = plan.placement(t);
        placed.length = length;
        if (!external) {
            proto::encoded_message header;
            onnx::encode_tensor_header(header, c.dims, c.data_type, graph_.text(graph_.tensors[t].name));
            const auto tag = proto::encode_varint(
                proto::make_tag(onnx::number(onnx::tensor_field::raw_data), proto::wire_type::length_delimited));
            const auto size = proto::encode_varint(length);
            header.append_bytes(tag.view());
            header.append_bytes(size.view());
            ONNXSTREAM_ASSIGN(placed.message_offset, spill.append(header.pool()));
            placed.message_length = header.size() + length;
        }
        placed.data_offset = spill.size();
        return {};
    }

    // One weight, read a block of rows at a time (axis 0: block_size rows, whose columns
    // are the blocks; axis 1: whole rows, each cut into blocks), into the spill file.
    result<void> quantize_weight(const graph::tensor_reader& reader, weight_job& job, bool external, io::spill_file& spill,
                                 graph::storage_plan& plan) {
        // MatMulNBits values are unsigned: int4 is computed as uint4 (the same levels, shifted by 8).
        const auto qtype = nbits() ? quantized_type::uint4 : options_.weights;
        const auto range = detail::range_of(qtype);
        const auto bits = detail::bits_of(qtype);
        const auto round = job.type == float16 ? &detail::round_to_float16 : &detail::keep_float32;
        const std::uint64_t element = job.type == float16 ? 2 : 4;
        const auto rows = static_cast<std::uint64_t>(job.rows);
        const auto columns = static_cast<std::uint64_t>(job.columns);
        const std::uint64_t block = options_.block_size;
        const std::uint64_t rows_per_step = job.axis == 0 ? block : std::max<std::uint64_t>(1, (1U << 20) / (columns * element));
        const std::uint64_t step_values = rows_per_step * columns;

        if (!nbits()) ONNXSTREAM_TRY(begin_tensor(job.values, values_length(job), external, spill, plan));
        // matmulnbits: the blocks go column by column, so the values are held (an eighth of
        // a float32 weight) and written at the end.
        const std::uint64_t blocks = blocks_along_k(job);
        const std::uint64_t blob = block / 2;
        std::vector<std::byte> columns_out;
        if (nbits()) columns_out.assign(static_cast<std::size_t>(columns * blocks * blob), std::byte{0});
        std::uint64_t first_row = 0;  // of the rows in `step`
        std::vector<float> scales;
        std::vector<int> zeros;
        scales.reserve(static_cast<std::size_t>(scale_count(job)));
        std::vector<float, uninitialized_allocator<float>> step;  // the values of the rows in hand
        step.reserve(static_cast<std::size_t>(std::min(step_values, rows * columns)));
        std::vector<std::byte> carry;                                // an element split between two pieces
        std::vector<float> column_low, column_high, column_largest;  // axis 0: each column's block statistics
        std::vector<float> column_scales;                            // axis 0: each column's parameters
        std::vector<std::int32_t> column_zeros;
        // The quantized levels of a row (axis 0) or of a block (axis 1), before packing.
        std::vector<std::int8_t> levels(static_cast<std::size_t>(job.axis == 0 ? columns : block));
        const auto& kernels = detail::quantize_kernels_on(onnx::active_conversion_path());
        std::vector<std::byte> out;
        detail::value_packer packer(bits, out);
        double largest_error = 0;
        float largest_weight = 0;
        result<void> failed = {};

        const auto flush = [&]() -> result<void> {
            if (out.empty()) return {};
            ONNXSTREAM_TRY(spill.append(out));
            out.clear();
            return {};
        };
        // matmulnbits: a row's levels go to their columns' blocks, a nibble each.
        const auto place_nibbles = [&](std::span<const std::int8_t> q, std::uint64_t row, std::uint64_t first_column) {
            const auto in_block = row % block;
            const unsigned shift = in_block % 2 == 0 ? 0U : 4U;
            for (std::uint64_t i = 0; i < q.size(); ++i) {
                auto& b = columns_out[static_cast<std::size_t>(((first_column + i) * blocks + row / block) * blob + in_block / 2)];
                b |= static_cast<std::byte>((static_cast<unsigned>(q[i]) & 0x0FU) << shift);
            }
        };
        // The rows in `step` (whole rows; a short last block at the end).
        const auto process = [&]() -> result<void> {
            const auto in_step = static_cast<std::uint64_t>(step.size()) / columns;
            if (job.axis == 0) {
                // Each column's block statistics, gathered row by row: a row is contiguous, a
                // column strides by a whole row.
                column_low.assign(static_cast<std::size_t>(columns), 0.0F);
                column_high.assign(static_cast<std::size_t>(columns), 0.0F);
                column_largest.assign(static_cast<std::size_t>(columns), 0.0F);
                for (std::uint64_t r = 0; r < in_step; ++r)
                    kernels.scan_columns(step.data() + r * columns, static_cast<std::size_t>(columns), column_low.data(),
                                         column_high.data(), column_largest.data());
                column_scales.resize(static_cast<std::size_t>(columns));
                column_zeros.resize(static_cast<std::size_t>(columns));
                for (std::uint64_t c = 0; c < columns; ++c) {
                    const auto p = detail::parameters_of(column_low[c], column_high[c], column_largest[c], qtype,
                                                         options_.symmetric, round);
                    column_scales[c] = p.scale;
                    column_zeros[c] = p.zero_point;
                    scales.push_back(p.scale);
                    zeros.push_back(p.zero_point);
                    largest_weight = std::max(largest_weight, column_largest[c]);
                }
                for (std::uint64_t r = 0; r < in_step; ++r) {
                    largest_error = std::max(
                        largest_error, kernels.quantize_columns(step.data() + r * columns, levels.size(), column_scales.data(),
                                                                column_zeros.data(), range, levels.data()));
                    if (nbits()) place_nibbles(levels, first_row + r, 0);
                    else packer.add_all(levels);
                }
                // MatMulNBits pads the last block: the padding dequantizes to 0.
                if (nbits())
                    for (std::uint64_t r = in_step; r < block && in_step < block; ++r)
                        for (std::uint64_t c = 0; c < columns; ++c) {
                            auto& b = columns_out[static_cast<std::size_t>((c * blocks + (first_row + r) / block) * blob + r / 2)];
                            b |= static_cast<std::byte>((static_cast<unsigned>(column_zeros[c]) & 0x0FU)
                                                        << (r % 2 == 0 ? 0U : 4U));
                        }
            } else {
                for (std::uint64_t r = 0; r < in_step; ++r) {
                    for (std::uint64_t b = 0; b < columns; b += block) {
                        const auto count = static_cast<std::size_t>(std::min(block, columns - b));
                        const float* first = step.data() + r * columns + b;
                        detail::value_range seen;
                        kernels.scan(first, count, seen);
                        const auto p = detail::parameters_of(seen.low, seen.high, seen.largest, qtype, options_.symmetric, round);
                        scales.push_back(p.scale);
                        zeros.push_back(p.zero_point);
                        largest_weight = std::max(largest_weight, seen.largest);
                        largest_error = std::max(largest_error, kernels.quantize(first, count, p, range, levels.data()));
                        const auto q = std::span<const std::int8_t>(levels).first(count);
                        if (nbits()) place_nibbles(q, first_row + r, b);
                        else packer.add_all(q);
                    }
                }
            }
            first_row += in_step;
            step.clear();
            if (out.size() >= (1U << 20)) return flush();
            return {};
        };
        // Little-endian whatever the host: assembled byte by byte.
        const auto decode = [&](const std::byte* at) -> float {
            std::uint32_t bits_le = 0;
            for (std::uint64_t i = 0; i < element; ++i)
                bits_le |= static_cast<std::uint32_t>(std::to_integer<std::uint8_t>(at[i])) << (8U * i);
            if (element == 2) return static_cast<float>(graph::half_to_double(static_cast<std::uint16_t>(bits_le)));
            return std::bit_cast<float>(bits_le);
        };
        // An external weight's `checksum` key is checked on the way, as every rewrite does.
        std::optional<io::sha1_digest> expected;
        {
            const auto handle = model_.tensor(job.site);
            expected = onnx::expected_sha1(*handle, report_.warnings);
        }
        io::sha1_hasher hasher;
        const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(step_values * element, 64U << 20));
        ONNXSTREAM_TRY(reader.for_each_chunk(job.site, std::max<std::size_t>(chunk, 4096), [&](std::span<const std::byte> piece) {
            if (!failed) return;
            if (expected) hasher.update(piece);
            std::size_t at = 0;
            if (!carry.empty()) {
                while (carry.size() < element && at < piece.size()) carry.push_back(piece[at++]);
                if (carry.size() < element) return;
                step.push_back(decode(carry.data()));
                carry.clear();
                if (step.size() == step_values) failed = process();
            }
            while (at + element <= piece.size()) {
                // As many whole elements as the piece holds and the step has room for.
                const auto count = std::min<std::uint64_t>((piece.size() - at) / element, step_values - step.size());
                const auto* from = piece.data() + at;
                if (element == 4 && std::endian::native == std::endian::little) {
                    const auto old_size = step.size();
                    step.resize(old_size + static_cast<std::size_t>(count));
                    std::memcpy(step.data() + old_size, from, static_cast<std::size_t>(count * 4));
                } else {
                    for (std::uint64_t i = 0; i < count; ++i) step.push_back(decode(from + i * element));
                }
                at += static_cast<std::size_t>(count * element);
                if (step.size() == step_values) {
                    failed = process();
                    if (!failed) return;
                }
            }
            carry.assign(piece.begin() + static_cast<std::ptrdiff_t>(at), piece.end());
        }));
        ONNXSTREAM_TRY(std::move(failed));
        if (expected) {
            const auto found = hasher.finish();
            if (found != *expected) {
                auto e = onnx::checksum_mismatch(report_.quantized[job.report].name, *expected, found, options_.strict);
                if (options_.strict) return failure(std::move(e));
                report_.warnings.push_back(std::move(e));
            }
        }
        if (!step.empty()) ONNXSTREAM_TRY(process());
        packer.finish();
        ONNXSTREAM_TRY(flush());
        auto& report = report_.quantized[job.report];
        report.max_relative_error = largest_weight > 0 ? largest_error / static_cast<double>(largest_weight) : 0;

        if (nbits()) {
            ONNXSTREAM_TRY(begin_tensor(job.values, columns_out.size(), external, spill, plan));
            ONNXSTREAM_TRY(spill.append(columns_out));
            columns_out = {};
            // Scales and zero points column by column ([N, blocks]), not block row by block row.
            std::vector<float> by_column(scales.size());
            std::vector<int> zeros_by_column(zeros.size());
            for (std::uint64_t kb = 0; kb < blocks; ++kb)
                for (std::uint64_t c = 0; c < columns; ++c) {
                    by_column[c * blocks + kb] = scales[kb * columns + c];
                    zeros_by_column[c * blocks + kb] = zeros[kb * columns + c];
                }
            scales = std::move(by_column);
            zeros = std::move(zeros_by_column);
        }
        // The scales in the weight's type, then the zero points packed like the values.
        std::vector<std::byte> scale_bytes(scales.size() * element);
        for (std::size_t i = 0; i < scales.size(); ++i) {
            // Exact: each scale is already a value of the weight's type.
            graph::encode_element(job.type, static_cast<double>(scales[i]), scale_bytes, i);
        }
        ONNXSTREAM_TRY(
            begin_tensor(job.scales, scale_bytes.size(), external && scale_bytes.size() >= default_threshold, spill, plan));
        ONNXSTREAM_TRY(spill.append(scale_bytes));
        std::uint64_t after = values_length(job) + scale_bytes.size();
        if (job.zero_points != none) {
            std::vector<std::byte> zero_bytes;
            detail::value_packer zero_packer(bits, zero_bytes);
            for (std::size_t i = 0; i < zeros.size(); ++i) {
                zero_packer.add(zeros[i]);
                // matmulnbits: each column's zero points start on a byte.
                if (nbits() && (i + 1) % blocks == 0) zero_packer.finish();
            }
            zero_packer.finish();
            ONNXSTREAM_TRY(begin_tensor(job.zero_points, zero_bytes.size(), external && zero_bytes.size() >= default_threshold,
                                        spill, plan));
            ONNXSTREAM_TRY(spill.append(zero_bytes));
            after += zero_bytes.size();
        }
        report.bytes_after = after;
        return {};
    }

    // A tensor's place in the new data file.
    struct data_entry {
        std::uint32_t source = 0;
        std::uint64_t source_offset = 0;
        std::uint64_t length = 0;
        std::uint64_t offset = 0;  // in the data file
        std::uint32_t shard = 0;
        onnx::site_id site = none;       // the tensor it keeps, or none for a computed tensor
        graph::tensor_id tensor = none;  // the computed graph_model tensor, or none
    };

    // As optimize writes: the model's edits over a spill file holding the new tensors; with
    // external data, fresh data files (one, or shards of --shard-size) with the surviving
    // and new tensors.
    result<void> write(const graph::tensor_reader& reader) {
        const bool external = !bound_.data.files.empty();
        const auto folder = report_.output.parent_path().empty() ? fs::path(".") : report_.output.parent_path();
        ONNXSTREAM_TRY(session_.claim_output(report_.output));

        graph::storage_plan plan;
        plan.spill_source = static_cast<std::uint32_t>(session_.sources().size());
        std::vector<data_entry> entries;
        if (external) {
            const auto survive = graph::surviving_sites(graph_);
            for (const auto site : model_.sites.ids()) {
                const auto b = bound_.binding_of(site);
                if (!survive[site] || b == none) continue;
                const auto& binding = bound_.data.tensors[b];
                entries.push_back(
                    {onnx::bound_model::source_of_file(binding.file).value, binding.offset, binding.length, 0, 0, site, none});
            }
        }
        ONNXSTREAM_ASSIGN(auto spill, io::spill_file::create(folder));
        // Progress: the weights' bytes read, a tensor at a time.
        std::uint64_t total = 0;
        for (const auto& q : report_.quantized) total += q.bytes_before;
        std::uint64_t done = 0;
        const std::string stage = "quantize " + report_.output.filename().string();
        for (auto& job : jobs_) {
            if (options_.cancel != nullptr && options_.cancel->load()) return failure(error_code::interrupted, "interrupted");
            if (options_.on_progress) options_.on_progress({stage, done, total, report_.quantized[job.report].name, {}});
            done += report_.quantized[job.report].bytes_before;
            const bool values_external = external && values_length(job) >= default_threshold;
            ONNXSTREAM_TRY(quantize_weight(reader, job, values_external, spill, plan));
            if (values_external) entries.push_back({plan.spill_source, 0, values_length(job), 0, 0, none, job.values});
            if (external && scale_count(job) * (job.type == float16 ? 2 : 4) >= default_threshold)
                entries.push_back({plan.spill_source, 0, plan.placement(job.scales).length, 0, 0, none, job.scales});
            if (job.zero_points != none && external && plan.placement(job.zero_points).length >= default_threshold)
                entries.push_back({plan.spill_source, 0, plan.placement(job.zero_points).length, 0, 0, none, job.zero_points});
        }
        // Other computed tensors (the axes of upgraded reductions): small, embedded.
        for (const auto t : graph_.tensors.ids()) {
            if (!graph_.tensor_live(t) || graph_.tensors[t].site != none || std::as_const(plan).placement(t) != nullptr) continue;
            const auto& c = *graph_.computed(t);
            ONNXSTREAM_ASSIGN(const auto bytes, reader.compute(c.data_type, c.dims, c.values));
            ONNXSTREAM_TRY(begin_tensor(t, bytes.size(), false, spill, plan));
            ONNXSTREAM_TRY(spill.append(bytes));
        }
        const auto shards = lay_out(entries, plan);
        for (std::uint32_t shard = 0; shard < shards; ++shard) {
            const auto path = folder / data_file_name(data_name_, options_.shard_size, shard, shards);
            ONNXSTREAM_TRY(
                session_.claim_output(path, {.model_output = report_.output, .rename_data = remedy::choose_data_name}));
        }

        // The model's edits; the spill file is readable while they stream into it.
        ONNXSTREAM_ASSIGN(auto spill_reader, spill.open_source());
        const auto spill_index = session_.add_source(spill_reader);
        ONNXSTREAM_ASSIGN(auto edits, graph::build_edits(graph_, plan, spill, session_.sources()));
        raise_versions(edits);
        graph_ = graph::graph_model{};
        plan = graph::storage_plan{};
        ONNXSTREAM_ASSIGN(auto spill_source, spill.open_source());
        session_.replace_source(spill_index, spill_source);
        session_.release_model_pages();
        ONNXSTREAM_ASSIGN(auto planned, session_.plan_model(edits));
        report_.output_size = planned.size();

        // The data files and the model: all or none (the session commits them as one).
        for (std::uint32_t shard = 0; shard < shards; ++shard)
            ONNXSTREAM_TRY(
                write_data_file(folder / data_file_name(data_name_, options_.shard_size, shard, shards), shard, entries));
        ONNXSTREAM_TRY(session_.write(report_.output, planned, edits));
        report_.writer = session_.writer();
        return session_.commit();
    }

    // Places every entry as repack lays tensors out; returns the number of data files.
    std::uint32_t lay_out(std::vector<data_entry>& entries, graph::storage_plan& plan) const {
        data_layout layout({default_alignment, aligned_tensor_minimum, options_.shard_size});
        for (auto& e : entries) {
            if (e.tensor != none) e.source_offset = plan.placement(e.tensor).data_offset;
            const auto place = layout.add(e.length);
            e.offset = place.offset;
            e.shard = place.shard;
        }
        const auto shards = layout.shard_count();
        for (auto& e : entries) {
            const graph::external_location where{data_file_name(data_name_, options_.shard_size, e.shard, shards), e.offset,
                                                 e.length};
            if (e.site != none) plan.move_site(e.site, where);
            else plan.placement(e.tensor).external = where;
        }
        return shards;
    }

    result<void> write_data_file(const fs::path& path, std::uint32_t shard, std::span<const data_entry> entries) {
        plan::write_plan data_plan;
        std::uint64_t tensors = 0;
        for (const auto& e : entries) {
            if (e.shard != shard) continue;
            ++tensors;
            if (e.offset > data_plan.size()) data_plan.skip(e.offset - data_plan.size());
            data_plan.copy(e.source, e.source_offset, e.length,
                           e.site != none ? session_.checksum_check(data_plan, e.site) : io::no_check);
        }
        ONNXSTREAM_TRY(session_.write(path, data_plan));
        report_.data_files.push_back({path, data_plan.size(), tensors});
        return {};
    }

    // The default-domain opset_import's version to 21 and ir_version to 10, where lower.
    void raise_versions(onnx::tree_edits& edits) const {
        const auto& tree = model_.tree;
        const auto replace = [&](std::uint32_t message, std::uint32_t number, std::uint64_t value) {
            const auto fields = tree.fields(message);
            for (std::uint32_t i = 0; i < fields.size(); ++i) {
                if (fields[i].number() != number) continue;
                edits.drop(tree, message, i);
                edits.insert(message, i, edits.varint(number, value));
                return;
            }
            edits.insert(message, static_cast<std::uint32_t>(fields.size()), edits.varint(number, value));
        };
        if (nbits()) add_microsoft_import(edits);
        if (report_.ir_version_after != report_.ir_version_before)
            replace(0, onnx::number(onnx::model_field::ir_version), static_cast<std::uint64_t>(report_.ir_version_after));
        if (report_.opset_after == report_.opset_before) return;
        const auto opset_field = onnx::number(onnx::model_field::opset_import);
        for (const auto& f : tree.fields(0)) {
            if (f.number() != opset_field) continue;
            // The child message of this field: the one whose parent_field it is.
            const auto field_index = tree.index_of(f);
            for (std::uint32_t m = 0; m < tree.messages().size(); ++m) {
                const auto& msg = tree.at(m);
                if (msg.parent != 0 || msg.parent_field != field_index) continue;
                const auto domain = tree.find_text(m, 1);
                if (!domain.empty() && domain != "ai.onnx") break;
                replace(m, 2, static_cast<std::uint64_t>(report_.opset_after));
                break;
            }
        }
    }

    // opset_import {domain: "com.microsoft", version: 1}, unless the model has one.
    void add_microsoft_import(onnx::tree_edits& edits) const {
        const auto& tree = model_.tree;
        const auto opset_field = onnx::number(onnx::model_field::opset_import);
        const auto fields = tree.fields(0);
        std::uint32_t after = static_cast<std::uint32_t>(fields.size());
        for (std::uint32_t i = 0; i < fields.size(); ++i) {
            if (fields[i].number() != opset_field) continue;
            after = i + 1;
            const auto field_index = tree.index_of(fields[i]);
            for (std::uint32_t m = 0; m < tree.messages().size(); ++m)
                if (tree.at(m).parent == 0 && tree.at(m).parent_field == field_index && tree.find_text(m, 1) == microsoft_domain)
                    return;
        }
        proto::encoded_message entry;
        entry.text_field(1, microsoft_domain);
        entry.varint_field(2, 1);
        edits.insert(0, after, edits.bytes(opset_field, entry.pool()));
    }

    std::string data_name_;
    graph::graph_model graph_;
    std::vector<weight_job> jobs_;
};

}  // namespace

result<quantize_report> quantize(const fs::path& model, const quantize_options& options) {
    return quantizer(model, options).run();
}

}  // namespace onnxstream::ops
