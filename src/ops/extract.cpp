// extract (ops/extract.hpp): a walk back from the outputs over a graph_index, the rest of
// the main graph removed in the graph model, and the main graph's input and output fields
// replaced by tree edits of their own (build_edits leaves the main graph's interface as it
// was read). Nothing but the interface's types is read: no weight, unless shape inference
// needs a small constant (a Reshape's shape) for a new input or output.
#include <onnxstream/ops/extract.hpp>

#include "bound_operation.hpp"
#include "kept_data.hpp"

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/model_edits.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/io/spill_file.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/passes/dead_code.hpp>
#include <onnxstream/proto/encoded_message.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using graph::none;

const char* to_string(io_type_source source) noexcept {
    switch (source) {
        case io_type_source::graph_input: return "graph input";
        case io_type_source::graph_output: return "graph output";
        case io_type_source::value_info: return "value_info";
        case io_type_source::initializer: return "initializer";
        case io_type_source::inferred: return "inferred";
        case io_type_source::element_type_only: return "element type only";
    }
    return "inferred";
}

namespace {

// A new graph input or output: its ValueInfoProto, encoded.
struct interface_value {
    extracted_value reported;
    std::vector<std::byte> encoded;
};

// The ValueInfoProto of a tensor of `data_type` and `dims` (nullopt: rank unknown; -1: a
// dim not known, written as a Dimension with neither value nor name, as ONNX does).
std::vector<std::byte> encode_value_info(std::string_view name, std::int32_t data_type,
                                         const std::optional<std::vector<std::int64_t>>& dims) {
    using onnx::number;
    proto::encoded_message tensor_type;
    tensor_type.varint_field(number(onnx::tensor_type_field::elem_type), static_cast<std::uint64_t>(data_type));
    if (dims) {
        proto::encoded_message shape;
        for (const auto d : *dims) {
            proto::encoded_message dim;
            if (d >= 0) dim.varint_field(number(onnx::dimension_field::dim_value), static_cast<std::uint64_t>(d));
            shape.message_field(number(onnx::shape_field::dim), dim);
        }
        tensor_type.message_field(number(onnx::tensor_type_field::shape), shape);
    }
    proto::encoded_message type;
    type.message_field(number(onnx::type_field::tensor_type), tensor_type);
    proto::encoded_message out;
    out.text_field(number(onnx::value_info_field::name), name);
    out.message_field(number(onnx::value_info_field::type), type);
    const auto pool = out.pool();
    return {pool.begin(), pool.end()};
}

// What an operator's output `slot` has for element type: a fixed one, the type of one of its
// inputs, or not known here. Only the common operators: this serves when shape inference
// does not reach a value, for its element type alone.
struct type_rule {
    std::int32_t fixed = 0;              // a TensorProto.DataType, or 0
    std::optional<std::size_t> same_as;  // the input whose type it has
};

type_rule element_type_rule(std::string_view op, std::size_t slot) {
    constexpr std::int32_t int64 = 7;
    constexpr std::int32_t boolean = 9;
    static constexpr std::string_view int64_ops[] = {"Shape", "Size", "ArgMax", "ArgMin", "NonZero", "NonMaxSuppression"};
    static constexpr std::string_view bool_ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
                                                    "And",   "Or",   "Xor",     "IsNaN",       "IsInf"};
    static constexpr std::string_view first_input_ops[] = {"Abs",
                                                           "Add",
                                                           "AveragePool",
                                                           "BatchNormalization",
                                                           "Ceil",
                                                           "Celu",
                                                           "Clip",
                                                           "Concat",
                                                           "Conv",
                                                           "ConvTranspose",
                                                           "Cos",
                                                           "CumSum",
                                                           "DepthToSpace",
                                                           "Div",
                                                           "Dropout",
                                                           "Einsum",
                                                           "Elu",
                                                           "Erf",
                                                           "Exp",
                                                           "Expand",
                                                           "Flatten",
                                                           "Floor",
                                                           "Gather",
                                                           "GatherElements",
                                                           "GatherND",
                                                           "Gelu",
                                                           "Gemm",
                                                           "GlobalAveragePool",
                                                           "GlobalMaxPool",
                                                           "GroupNormalization",
                                                           "HardSigmoid",
                                                           "HardSwish",
                                                           "Identity",
                                                           "InstanceNormalization",
                                                           "LayerNormalization",
                                                           "LeakyRelu",
                                                           "Log",
                                                           "LogSoftmax",
                                                           "LpNormalization",
                                                           "LRN",
                                                           "MatMul",
                                                           "Max",
                                                           "MaxPool",
                                                           "Mean",
                                                           "Min",
                                                           "Mish",
                                                           "Mod",
                                                           "Mul",
                                                           "Neg",
                                                           "Pad",
                                                           "Pow",
                                                           "PRelu",
                                                           "Reciprocal",
                                                           "ReduceL1",
                                                           "ReduceL2",
                                                           "ReduceLogSumExp",
                                                           "ReduceMax",
                                                           "ReduceMean",
                                                           "ReduceMin",
                                                           "ReduceProd",
                                                           "ReduceSum",
                                                           "ReduceSumSquare",
                                                           "Relu",
                                                           "Reshape",
                                                           "Resize",
                                                           "Round",
                                                           "ScatterElements",
                                                           "ScatterND",
                                                           "Selu",
                                                           "Sigmoid",
                                                           "Sign",
                                                           "Sin",
                                                           "Slice",
                                                           "Softmax",
                                                           "Softplus",
                                                           "Softsign",
                                                           "SpaceToDepth",
                                                           "Split",
                                                           "Sqrt",
                                                           "Squeeze",
                                                           "Sub",
                                                           "Sum",
                                                           "Tanh",
                                                           "Tile",
                                                           "TopK",
                                                           "Transpose",
                                                           "Trilu",
                                                           "Unsqueeze",
                                                           "Upsample"};
    const auto in = [op](const auto& list) { return std::find(std::begin(list), std::end(list), op) != std::end(list); };
    if (in(int64_ops)) return {int64, {}};
    if (in(bool_ops)) return {boolean, {}};
    if (op == "Dropout" && slot == 1) return {boolean, {}};
    if ((op == "MaxPool" || op == "TopK") && slot == 1) return {int64, {}};
    if (op == "Where") return {0, 1};
    if (in(first_input_ops)) return {0, 0};
    return {};
}

// The elem_type a ValueInfoProto declares for its tensor, or 0.
std::int32_t declared_element_type(const onnx::message_tree& tree, std::uint32_t value_info) {
    const auto* type = tree.find(value_info, onnx::number(onnx::value_info_field::type));
    if (type == nullptr || type->type() != proto::wire_type::length_delimited) return 0;
    std::vector<proto::field_token> fields;
    if (!proto::tokenize(tree.bytes(), type->payload_offset(), type->end_offset(), fields)) return 0;
    for (const auto& f : fields) {
        if (f.number != onnx::number(onnx::type_field::tensor_type) || f.type != proto::wire_type::length_delimited) continue;
        std::vector<proto::field_token> inner;
        if (!proto::tokenize(tree.bytes(), f.payload_offset, f.end_offset(), inner)) return 0;
        for (const auto& g : inner)
            if (g.number == onnx::number(onnx::tensor_type_field::elem_type) && g.type == proto::wire_type::varint &&
                g.value > 0 && g.value <= 0x7fffffff)
                return static_cast<std::int32_t>(g.value);
    }
    return 0;
}

class extractor : detail::bound_operation<extract_options, extract_report> {
public:
    using bound_operation::bound_operation;

    result<extract_report> run() {
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, "extract") : options_.output;
        if (options_.outputs.empty())
            return failure(error_code::invalid_argument, "no output to extract",
                           "name at least one value for the extracted model to compute");
        ONNXSTREAM_TRY(check_unique(options_.outputs, "the outputs"));
        ONNXSTREAM_TRY(check_unique(options_.inputs, "the inputs"));
        // Tensors read only if shape inference asks; the tree drops their bodies' fields.
        ONNXSTREAM_TRY(open_session(onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));
        ONNXSTREAM_TRY(session_.claim_output(report_.output));
        ONNXSTREAM_ASSIGN(graph_, graph::graph_model::build(model_));
        ONNXSTREAM_TRY(choose());
        session_.release_model_pages();
        if (options_.cancel != nullptr && options_.cancel->load()) return failure(error_code::interrupted, "interrupted");
        ONNXSTREAM_TRY(write());
        return std::move(report_);
    }

private:
    static result<void> check_unique(const std::vector<std::string>& names, std::string_view which) {
        std::set<std::string_view> seen;
        for (const auto& name : names) {
            if (name.empty())
                return failure(error_code::invalid_argument, std::string(which) + " hold an empty name",
                               "separate the names with single commas");
            if (!seen.insert(name).second)
                return failure(error_code::invalid_argument, std::string(which) + " name '" + name + "' twice",
                               "name each value once");
        }
        return {};
    }

    // The main graph's value called `name`, or none.
    graph::value_id lookup(const graph::graph_index& index, std::string_view name) const {
        const auto id = graph_.names.find(name);
        if (!id) return none;
        const auto v = index.resolve(graph::main_scope, *id);
        if (v == none || index.at(v).kind == graph::value_kind::undefined) return none;
        return v;
    }

    // The kept set, then the graph model edited to it, and the new interface encoded.
    result<void> choose() {
        const graph::graph_index index(graph_);
        const auto& main = graph_.scopes[graph::main_scope];

        std::vector<std::string> input_names = options_.inputs;
        if (input_names.empty()) {
            for (const auto name : main.inputs) {
                const auto v = index.resolve(graph::main_scope, name);
                if (v != none && index.at(v).kind == graph::value_kind::initializer) continue;  // a default, not an input
                input_names.emplace_back(graph_.text(name));
            }
        }
        indexed_vector<graph::value_id, bool> stop(index.size(), false);
        std::vector<graph::value_id> input_values;
        for (const auto& name : input_names) {
            const auto v = lookup(index, name);
            if (v == none)
                return failure(error_code::invalid_argument, "the input '" + name + "' is no value of the main graph",
                               "an input is a graph input, an initializer or a node output of the main graph; check the "
                               "name (names are case-sensitive)");
            stop[v] = true;
            input_values.push_back(v);
        }
        std::vector<graph::value_id> output_values;
        for (const auto& name : options_.outputs) {
            const auto v = lookup(index, name);
            if (v == none)
                return failure(error_code::invalid_argument, "nothing computes the output '" + name + "'",
                               "an output is a node output, a graph input or an initializer of the main graph; check the "
                               "name (names are case-sensitive)");
            output_values.push_back(v);
        }

        walk(index, output_values, stop);
        if (!unreached_.empty()) {
            std::string list;
            for (const auto& name : unreached_) list += (list.empty() ? "'" : ", '") + name + "'";
            return failure(error_code::invalid_argument,
                           "the inputs do not cut the graph: computing the outputs reads the graph input(s) " + list +
                               ", which the inputs do not give",
                           "add them to the inputs, or name as inputs the values between them and the outputs");
        }

        // The interface first, while the tree's value_info and the index still say everything.
        ONNXSTREAM_ASSIGN(new_inputs_, interface_of(index, input_names, input_values));
        ONNXSTREAM_ASSIGN(new_outputs_, interface_of(index, options_.outputs, output_values));
        if (!graph::can_add_initializers(graph_)) keep_initializer_inputs(index);

        for (const auto n : main.nodes) {
            if (!graph_.node_live(n)) continue;
            if (kept_node_[n]) {
                ++report_.nodes_kept;
                continue;
            }
            graph_.remove_node(n);
            ++report_.nodes_dropped;
        }
        for (const auto f : graph_.functions.ids()) {
            if (graph_.functions[f].removed) continue;
            if (kept_function_[f]) {
                ++report_.functions_kept;
                continue;
            }
            graph_.remove_function(f);
            ++report_.functions_dropped;
        }
        for (const auto t : main.initializers) {
            if (!graph_.tensor_live(t)) continue;
            if (kept_tensor_[t]) {
                ++report_.initializers_kept;
                report_.initializer_bytes_kept += graph_.tensor_bytes(t);
                continue;
            }
            graph_.remove_tensor(t);
            ++report_.initializers_dropped;
        }
        graph_.compact();
        (void)passes::drop_stale_value_info(graph_);
        // A value that became a graph input is no intermediate value any more.
        std::set<std::string_view> input_set;
        for (const auto& v : new_inputs_) input_set.insert(v.reported.name);
        for (const auto vi : graph_.scopes[graph::main_scope].value_infos)
            if (!graph_.value_infos[vi].removed && input_set.contains(graph_.text(graph_.value_infos[vi].name)))
                graph_.remove_value_info(vi);
        graph_.compact();
        return {};
    }

    // Marks what computing `outputs` from the values `stop` needs: main-graph nodes walked
    // back to, subgraphs of kept nodes whole (and the outer values they read), the
    // functions kept nodes call, the initializers kept nodes read.
    void walk(const graph::graph_index& index, std::span<const graph::value_id> outputs,
              const indexed_vector<graph::value_id, bool>& stop) {
        kept_node_.assign(graph_.nodes.size(), false);
        kept_function_.assign(graph_.functions.size(), false);
        kept_tensor_.assign(graph_.tensors.size(), false);
        indexed_vector<graph::value_id, bool> seen(index.size(), false);
        std::vector<graph::value_id> pending;
        const auto need = [&](graph::value_id v) {
            if (v != none && !seen[v]) {
                seen[v] = true;
                pending.push_back(v);
            }
        };
        // The local functions by domain and name (a node's op type): looked up per kept node.
        const auto function_key = [](std::string_view domain, std::string_view name) {
            return std::string(domain) + '\0' + std::string(name);
        };
        std::unordered_map<std::string, std::vector<graph::function_id>> functions;
        for (const auto f : graph_.functions.ids())
            if (!graph_.functions[f].removed)
                functions[function_key(graph_.functions[f].domain, graph_.functions[f].name)].push_back(f);
        // A node and everything it holds; a stack rather than recursion (subgraphs nest).
        std::vector<graph::node_id> nodes;
        const auto keep = [&](graph::node_id first) {
            nodes.push_back(first);
            while (!nodes.empty()) {
                const auto n = nodes.back();
                nodes.pop_back();
                if (n == none || kept_node_[n] || !graph_.node_live(n)) continue;
                kept_node_[n] = true;
                const auto& nd = graph_.nodes[n];
                for (std::size_t k = 0; k < nd.inputs.size(); ++k) need(index.input(n, k));
                std::vector<graph::scope_id> bodies(nd.subgraphs().begin(), nd.subgraphs().end());
                if (const auto called = functions.find(function_key(nd.domain(), nd.op_type())); called != functions.end()) {
                    for (const auto f : called->second) {
                        const auto& fn = graph_.functions[f];
                        if (kept_function_[f] || fn.overload != nd.overload()) continue;
                        kept_function_[f] = true;
                        bodies.push_back(fn.scope);
                    }
                }
                for (const auto s : bodies) {
                    for (std::size_t k = 0; k < graph_.scopes[s].outputs.size(); ++k) need(index.graph_output(s, k));
                    for (const auto inner : graph_.scopes[s].nodes) nodes.push_back(inner);
                }
            }
        };
        for (const auto v : outputs) need(v);
        while (!pending.empty()) {
            const auto v = pending.back();
            pending.pop_back();
            const auto value = index.at(v);
            if (value.kind == graph::value_kind::initializer) kept_tensor_[value.tensor] = true;  // also when an input
            if (stop[v]) continue;
            if (value.kind == graph::value_kind::node_output) keep(value.node);
            else if (value.kind == graph::value_kind::graph_input && value.scope == graph::main_scope)
                unreached_.emplace_back(graph_.text(value.name));
        }
    }

    // The ValueInfoProto of each name: the model's own (graph input, graph output,
    // value_info, in that order), an initializer's type, or the inferred one.
    result<std::vector<interface_value>> interface_of(const graph::graph_index& index, std::span<const std::string> names,
                                                      std::span<const graph::value_id> values) {
        const auto& tree = model_.tree;
        if (declared_.empty()) {
            const auto graph_message = graph_.scopes[graph::main_scope].message;
            for (const auto& f : tree.fields(graph_message)) {
                const auto k = f.number();
                const auto source = k == onnx::number(onnx::graph_field::input)        ? io_type_source::graph_input
                                    : k == onnx::number(onnx::graph_field::output)     ? io_type_source::graph_output
                                    : k == onnx::number(onnx::graph_field::value_info) ? io_type_source::value_info
                                                                                       : io_type_source::inferred;
                if (source == io_type_source::inferred || f.child == none) continue;
                const auto name = tree.find_text(f.child, onnx::number(onnx::value_info_field::name));
                const auto at = declared_.find(name);
                if (at == declared_.end() || source < at->second.first) declared_[name] = {source, tree.index_of(f)};
            }
        }
        std::vector<interface_value> out;
        for (std::size_t i = 0; i < names.size(); ++i) {
            interface_value iv;
            iv.reported.name = names[i];
            const auto value = index.at(values[i]);
            if (const auto at = declared_.find(names[i]); at != declared_.end()) {
                iv.reported.type = at->second.first;
                const auto payload = tree.payload(tree.field(at->second.second));
                iv.encoded.assign(payload.begin(), payload.end());
            } else if (value.kind == graph::value_kind::initializer) {
                iv.reported.type = io_type_source::initializer;
                iv.encoded = encode_value_info(names[i], graph_.tensor_type(value.tensor), graph_.tensor_dims(value.tensor));
            } else {
                if (!shapes_) {
                    const graph::tensor_reader reader(model_, &bound_.data);
                    shapes_.emplace(graph::infer_shapes(graph_, index, reader));
                }
                auto shape = (*shapes_)[values[i]];
                if (shape.data_type == 0) {
                    shape.data_type = element_type(index, values[i]);
                    shape.dims.reset();
                }
                if (shape.data_type == 0)
                    return failure(error_code::invalid_argument,
                                   "the type of '" + names[i] +
                                       "' is not known: the model has no value_info for it and it "
                                       "cannot be inferred",
                                   "add value_info for it (e.g. with onnx.shape_inference), or extract at another value");
                iv.reported.type = shape.dims ? io_type_source::inferred : io_type_source::element_type_only;
                iv.encoded = encode_value_info(names[i], shape.data_type, shape.dims);
            }
            out.push_back(std::move(iv));
        }
        return out;
    }

    // The element type of value `v` when inference does not reach it: followed back
    // through operators whose output has the type of one of their inputs (element_type_rule)
    // to a value whose type is declared, inferred or fixed by its operator; 0 if none.
    std::int32_t element_type(const graph::graph_index& index, graph::value_id v) const {
        const auto& tree = model_.tree;
        for (std::size_t steps = 0; v != none && steps < graph_.nodes.size() + 1; ++steps) {
            if (const auto t = (*shapes_)[v].data_type; t != 0) return t;
            const auto value = index.at(v);
            if (value.kind == graph::value_kind::initializer) return graph_.tensor_type(value.tensor);
            if (const auto at = declared_.find(graph_.text(value.name)); at != declared_.end())
                if (const auto t = declared_element_type(tree, tree.field(at->second.second).child); t != 0) return t;
            if (value.kind != graph::value_kind::node_output) return 0;
            const auto& nd = graph_.nodes[value.node];
            if (!nd.domain().empty() && nd.domain() != "ai.onnx") return 0;
            if (nd.op_type() == "Cast") {
                const auto to = graph_.attribute(value.node, "to");
                return to && to->i ? static_cast<std::int32_t>(*to->i) : 0;
            }
            if (nd.op_type() == "If" || nd.op_type() == "Loop") {
                // The branch's or body's output (a Loop's outputs follow its body's condition).
                const auto slot = nd.op_type() == "If" ? value.slot : value.slot + 1;
                const auto bodies = nd.subgraphs();
                if (bodies.empty() || slot >= graph_.scopes[bodies.front()].outputs.size()) return 0;
                const auto& body = graph_.scopes[bodies.front()];
                if (slot < body.output_messages.size() && body.output_messages[slot] != none)
                    if (const auto t = declared_element_type(tree, body.output_messages[slot]); t != 0) return t;
                v = index.graph_output(bodies.front(), slot);
                continue;
            }
            const auto rule = element_type_rule(nd.op_type(), value.slot);
            if (rule.fixed != 0) return rule.fixed;
            if (!rule.same_as || *rule.same_as >= nd.inputs.size()) return 0;
            v = index.input(value.node, *rule.same_as);
        }
        return 0;
    }

    // IR version 3 wants every initializer among the graph inputs: the kept ones that were
    // stay there, after the inputs asked for.
    void keep_initializer_inputs(const graph::graph_index& index) {
        std::set<std::string_view> listed;
        for (const auto& v : new_inputs_) listed.insert(v.reported.name);
        for (const auto name : graph_.scopes[graph::main_scope].inputs) {
            const auto v = index.resolve(graph::main_scope, name);
            if (v == none) continue;
            const auto value = index.at(v);
            if (value.kind != graph::value_kind::initializer || !kept_tensor_[value.tensor] || listed.contains(graph_.text(name)))
                continue;
            const auto at = declared_.find(graph_.text(name));
            if (at == declared_.end()) continue;
            interface_value iv;
            iv.reported = {std::string(graph_.text(name)), at->second.first};
            const auto payload = model_.tree.payload(model_.tree.field(at->second.second));
            iv.encoded.assign(payload.begin(), payload.end());
            new_inputs_.push_back(std::move(iv));
        }
    }

    // The main graph's input and output fields replaced by the new ones, where the first
    // of each was (or at the end of the graph when it had none).
    void edit_interface(onnx::tree_edits& edits) const {
        const auto& tree = model_.tree;
        const auto graph_message = graph_.scopes[graph::main_scope].message;
        const auto fields = tree.fields(graph_message);
        const auto first = tree.at(graph_message).first_field;
        const auto count = static_cast<std::uint32_t>(fields.size());
        std::optional<std::uint32_t> input_at;
        std::optional<std::uint32_t> output_at;
        std::optional<std::uint32_t> value_info_at;
        for (std::uint32_t i = 0; i < count; ++i) {
            const auto k = fields[i].number();
            if (k == onnx::number(onnx::graph_field::input)) {
                if (!input_at) input_at = i;
                edits.drop(first + i);
            } else if (k == onnx::number(onnx::graph_field::output)) {
                if (!output_at) output_at = i;
                edits.drop(first + i);
            } else if (k == onnx::number(onnx::graph_field::value_info) && !value_info_at) {
                value_info_at = i;
            }
        }
        const auto outputs_position = output_at.value_or(value_info_at.value_or(count));
        const auto inputs_position = input_at.value_or(outputs_position);
        for (const auto& v : new_inputs_)
            edits.insert(graph_message, inputs_position, edits.bytes(onnx::number(onnx::graph_field::input), v.encoded));
        for (const auto& v : new_outputs_)
            edits.insert(graph_message, outputs_position, edits.bytes(onnx::number(onnx::graph_field::output), v.encoded));
    }

    result<void> write() {
        const bool external = !bound_.data.files.empty();
        report_.storage = !external ? "embedded" : options_.reuse_data ? "reuse-data" : "external";
        for (const auto& v : new_inputs_) report_.inputs.push_back(v.reported);
        for (const auto& v : new_outputs_) report_.outputs.push_back(v.reported);
        const auto folder = report_.output.parent_path().empty() ? fs::path(".") : report_.output.parent_path();
        const auto data_path = folder / (report_.output.filename().string() + ".data");

        graph::storage_plan plan;
        plan.spill_source = static_cast<std::uint32_t>(session_.sources().size());
        std::vector<detail::data_entry> entries;
        if (external) {
            ONNXSTREAM_ASSIGN(report_.bytes_copied,
                              detail::keep_surviving_external(bound_, graph_, options_.reuse_data, folder, plan, entries));
        }
        if (!entries.empty())
            ONNXSTREAM_TRY(
                session_.claim_output(data_path, {.model_output = report_.output, .rename_data = remedy::choose_output}));
        detail::lay_out(data_path.filename().string(), entries, plan);

        ONNXSTREAM_ASSIGN(auto spill, io::spill_file::create(folder));
        ONNXSTREAM_ASSIGN(auto spill_reader, spill.open_source());
        const auto spill_index = session_.add_source(spill_reader);
        ONNXSTREAM_ASSIGN(auto edits, graph::build_edits(graph_, plan, spill, session_.sources()));
        edit_interface(edits);
        graph_ = graph::graph_model{};
        ONNXSTREAM_ASSIGN(auto spill_source, spill.open_source());
        session_.replace_source(spill_index, spill_source);
        session_.release_model_pages();
        ONNXSTREAM_TRY(bound_.data.check_unchanged());  // what shape inference read from it
        ONNXSTREAM_ASSIGN(auto planned, session_.plan_model(edits));
        return finish_rewrite(planned, edits, data_path, entries);
    }

    graph::graph_model graph_;
    indexed_vector<graph::node_id, bool> kept_node_;
    indexed_vector<graph::function_id, bool> kept_function_;
    indexed_vector<graph::tensor_id, bool> kept_tensor_;
    std::vector<std::string> unreached_;  // graph inputs the kept part reads that are not inputs
    // The main graph's ValueInfoProtos by name: where the first one of the most telling kind is.
    std::unordered_map<std::string_view, std::pair<io_type_source, std::uint32_t>> declared_;
    std::optional<graph::shape_table> shapes_;
    std::vector<interface_value> new_inputs_;
    std::vector<interface_value> new_outputs_;
};

}  // namespace

result<extract_report> extract(const fs::path& model, const extract_options& options) { return extractor(model, options).run(); }

}  // namespace onnxstream::ops
