#include <onnxstream/ops/export_caffe.hpp>

#include "bound_operation.hpp"
#include "export_caffe_report.hpp"

#include <onnxstream/caffe/blob_limits.hpp>
#include <onnxstream/caffe/caffemodel_writer.hpp>
#include <onnxstream/caffe/layer_mapping.hpp>
#include <onnxstream/caffe/opencv_runner.hpp>
#include <onnxstream/caffe/prototxt_writer.hpp>
#include <onnxstream/caffe/reference_evaluator.hpp>
#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/io/spill_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/passes/pass_driver.hpp>
#include <onnxstream/passes/pass_registry.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using graph::none;

bool caffe_check_available() noexcept { return caffe::opencv_available(); }

namespace {

constexpr std::size_t inline_limit = 64;  // computed blobs up to this many floats stay in the plan

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One ValueInfoProto's tensor shape: numbers, or empty optionals for symbolic dims.
struct declared_shape {
    bool known = false;
    std::vector<std::optional<std::int64_t>> dims;
    std::vector<std::string> symbols;
};

result<declared_shape> read_declared_shape(const onnx::message_tree& tree, std::uint32_t value_info) {
    declared_shape out;
    const auto* type = tree.find(value_info, onnx::number(onnx::value_info_field::type));
    if (type == nullptr) return out;
    const auto bytes = tree.bytes();
    auto fields_of = [&](std::uint64_t begin, std::uint64_t end) -> result<std::vector<proto::field_token>> {
        std::vector<proto::field_token> f;
        ONNXSTREAM_TRY(proto::tokenize(bytes, begin, end, f));
        return f;
    };
    ONNXSTREAM_ASSIGN(const auto type_fields, fields_of(type->payload_offset(), type->end_offset()));
    for (const auto& tt : type_fields) {
        if (tt.number != onnx::number(onnx::type_field::tensor_type) || tt.type != proto::wire_type::length_delimited) continue;
        ONNXSTREAM_ASSIGN(const auto tensor_fields, fields_of(tt.payload_offset, tt.end_offset()));
        for (const auto& sf : tensor_fields) {
            if (sf.number != onnx::number(onnx::tensor_type_field::shape) || sf.type != proto::wire_type::length_delimited)
                continue;
            out.known = true;
            ONNXSTREAM_ASSIGN(const auto shape_fields, fields_of(sf.payload_offset, sf.end_offset()));
            for (const auto& d : shape_fields) {
                if (d.number != onnx::number(onnx::shape_field::dim) || d.type != proto::wire_type::length_delimited) continue;
                ONNXSTREAM_ASSIGN(const auto dim_fields, fields_of(d.payload_offset, d.end_offset()));
                std::optional<std::int64_t> value;
                std::string symbol;
                for (const auto& x : dim_fields) {
                    if (x.number == onnx::number(onnx::dimension_field::dim_value) && x.type == proto::wire_type::varint)
                        value = static_cast<std::int64_t>(x.value);
                    if (x.number == onnx::number(onnx::dimension_field::dim_param) &&
                        x.type == proto::wire_type::length_delimited)
                        symbol.assign(reinterpret_cast<const char*>(bytes.data() + x.payload_offset), x.payload_length);
                }
                out.dims.push_back(value);
                out.symbols.push_back(symbol.empty() ? "?" : symbol);
            }
        }
    }
    return out;
}

// Places blob bytes: unchanged FLOAT tensors as slices of the model or its data files,
// everything else as floats, inline when tiny or in the spill file.
class blob_placer final : public caffe::weight_store {
public:
    blob_placer(const graph::graph_model& model, const onnx::bound_model& bound, const graph::tensor_reader& reader,
                io::spill_file& spill, std::uint32_t spill_source)
        : model_(model), bound_(bound), reader_(reader), spill_(spill), spill_source_(spill_source) {}

    result<caffe::blob_data> constant_data(const graph::constant& c) override {
        if (c.data_type == static_cast<std::int32_t>(onnx::data_type::float32) && c.site != none && !c.inline_values &&
            (c.tensor == none || model_.tensors[c.tensor].site != none)) {
            const auto& info = model_.file().tensors[c.site];
            const auto bytes = c.element_count * 4;
            if (info.storage == onnx::tensor_storage::raw) {
                const auto& f = model_.tree().field(info.raw_field);
                if (f.payload_length() == bytes) return slice(0, f.payload_offset(), bytes);
            } else if (info.storage == onnx::tensor_storage::typed && info.typed_fields.size() == 1) {
                const auto& f = model_.tree().field(info.typed_fields[0]);
                if (f.number() == onnx::number(onnx::tensor_field::float_data) &&
                    f.type() == proto::wire_type::length_delimited && f.payload_length() == bytes)
                    return slice(0, f.payload_offset(), bytes);
            } else if (info.storage == onnx::tensor_storage::external && bound_.binding_of(c.site) != none) {
                const auto& b = bound_.data.tensors[bound_.binding_of(c.site)];
                if (b.usable && b.length == bytes) return slice(onnx::bound_model::source_of_file(b.file).value, b.offset, bytes);
            }
        }
        if (c.data_type == static_cast<std::int32_t>(onnx::data_type::float32) && c.tensor != none &&
            model_.tensors[c.tensor].site == none) {
            // A folded weight: produced in its own type (float32 bytes, little-endian), once.
            ONNXSTREAM_ASSIGN(const auto bytes, reader_.tensor_bytes(model_, c.tensor));
            caffe::blob_data d;
            ONNXSTREAM_ASSIGN(d.offset, spill_.append(bytes));
            d.source = spill_source_;
            computed_bytes += bytes.size();
            return d;
        }
        ONNXSTREAM_ASSIGN(const auto v, graph::constant_elements(model_, reader_, c, 1ULL << 31));
        std::vector<float> f(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) f[i] = static_cast<float>(v[i]);
        return computed_data(std::move(f));
    }

    result<caffe::blob_data> computed_data(std::vector<float> values) override {
        caffe::blob_data d;
        if (values.size() <= inline_limit) {
            d.values = std::move(values);
            return d;
        }
        std::vector<std::byte> bytes(values.size() * 4);
        for (std::size_t i = 0; i < values.size(); ++i) {
            const auto bits = std::bit_cast<std::uint32_t>(values[i]);
            for (std::size_t k = 0; k < 4; ++k) bytes[i * 4 + k] = static_cast<std::byte>((bits >> (8 * k)) & 0xffU);
        }
        ONNXSTREAM_ASSIGN(d.offset, spill_.append(bytes));
        d.source = spill_source_;
        computed_bytes += bytes.size();
        return d;
    }

    std::uint64_t copied_bytes = 0;
    std::uint64_t computed_bytes = 0;

private:
    caffe::blob_data slice(std::uint32_t source, std::uint64_t offset, std::uint64_t bytes) {
        caffe::blob_data d;
        d.source = source;
        d.offset = offset;
        copied_bytes += bytes;
        return d;
    }

    const graph::graph_model& model_;
    const onnx::bound_model& bound_;
    const graph::tensor_reader& reader_;
    io::spill_file& spill_;
    std::uint32_t spill_source_;
};

std::string shape_text(const caffe::shape& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
    return out;
}

class exporter : detail::bound_operation<export_caffe_options, export_caffe_report> {
public:
    using bound_operation::bound_operation;

    result<export_caffe_report> run() {
        const auto start = std::chrono::steady_clock::now();
        report_.input = model_path_;
        report_.dialect = options_.dialect == caffe::dialect::opencv ? "opencv" : "bvlc";
        ONNXSTREAM_TRY(name_outputs());

        ONNXSTREAM_TRY(open_session());
        // The weights are read where they are (copied slices, computed blobs), not through
        // one checked copy: their checksums are checked first.
        ONNXSTREAM_TRY(session_.verify_checksums());
        const graph::tensor_reader reader(model_, &bound_.data);
        ONNXSTREAM_ASSIGN(graph_, graph::graph_model::build(model_));
        ONNXSTREAM_ASSIGN(auto shapes, input_shapes());
        // After the inputs are known good: a model no Caffe can hold is said first.
        if (options_.check && !caffe::opencv_available())
            return failure(error_code::unsupported,
                           "the check runs the export in OpenCV, but " + caffe::opencv_unavailable_reason(),
                           "install libopencv-dnn-dev (apt-get install libopencv-dnn-dev) and rebuild, or leave out {0}",
                           {{remedy::leave_out_check, {}}});
        run_passes(reader);
        ONNXSTREAM_TRY(check_outputs());

        const auto folder = report_.caffemodel.parent_path().empty() ? fs::path(".") : report_.caffemodel.parent_path();
        ONNXSTREAM_ASSIGN(auto spill, io::spill_file::create(folder));
        blob_placer placer(graph_, bound_, reader, spill, static_cast<std::uint32_t>(session_.sources().size()));
        ONNXSTREAM_ASSIGN(auto mapped, map_network(reader, placer, shapes));
        if (!report_.refusals.empty()) {
            report_.seconds = seconds_since(start);
            return std::move(report_);
        }
        mapped.network.name = model_path_.stem().string();
        ONNXSTREAM_ASSIGN(auto spill_reader, spill.open_source());
        session_.add_source(spill_reader);
        ONNXSTREAM_TRY(write_outputs(reader, shapes, mapped, start));
        return std::move(report_);
    }

private:
    result<void> name_outputs() {
        if (!options_.output.empty()) ONNXSTREAM_TRY(check_caffe_prefix(options_.output));
        const auto prefix = options_.output.empty() ? model_path_.parent_path() / model_path_.stem() : options_.output;
        report_.prototxt = fs::path(prefix.string() + ".prototxt");
        report_.caffemodel = fs::path(prefix.string() + ".caffemodel");
        if (options_.report) {
            report_.report_json = fs::path(prefix.string() + ".caffe-report.json");
            report_.report_html = fs::path(prefix.string() + ".caffe-report.html");
        }
        return {};
    }

    result<void> check_outputs() const {
        std::vector<fs::path> outputs{report_.prototxt, report_.caffemodel};
        if (options_.report) {
            outputs.push_back(report_.report_json);
            outputs.push_back(report_.report_html);
        }
        for (const auto& o : outputs) ONNXSTREAM_TRY(session_.claim_output(o));
        return {};
    }

    // The Caffe network, with a report row per layer (the BatchNormalizations folded into
    // a layer listed among its sources).
    result<caffe::mapping> map_network(const graph::tensor_reader& reader, blob_placer& placer,
                                       const std::map<std::string, caffe::shape>& shapes) {
        caffe::mapping_options mapping_options;
        mapping_options.target = options_.dialect;
        mapping_options.input_shapes = shapes;
        ONNXSTREAM_ASSIGN(auto mapped, caffe::map_graph(graph_, reader, placer, mapping_options));
        for (auto& d : mapped.decisions) report_.decisions.push_back(std::move(d));
        report_.refusals = std::move(mapped.refusals);
        report_.blocked = std::move(mapped.blocked);
        report_.outputs = mapped.outputs;
        for (const auto& l : mapped.network.layers) {
            caffe_layer_row row{l.name, l.type, l.bottoms, l.tops, {}, l.sources, {}, {}};
            for (const auto& t : l.tops) row.top_shapes.push_back(mapped.blob_shapes[t]);
            if (l.type == "Convolution" || l.type == "Deconvolution" || l.type == "InnerProduct")
                for (const auto& source : l.sources)
                    if (const auto found = folded_into_.find(source); found != folded_into_.end())
                        row.sources.insert(row.sources.end(), found->second.begin(), found->second.end());
            report_.layers.push_back(std::move(row));
        }
        report_.copied_bytes = placer.copied_bytes;
        report_.computed_bytes = placer.computed_bytes;
        return mapped;
    }

    // Every output as a temporary, checked (--check) and, for the audit report, digested,
    // then renamed as one transaction: never one half of an export without the other, and a
    // replaced file comes back when a later rename fails.
    result<void> write_outputs(const graph::tensor_reader& reader, const std::map<std::string, caffe::shape>& shapes,
                               const caffe::mapping& mapped, std::chrono::steady_clock::time_point start) {
        const auto text = caffe::write_prototxt(mapped.network);
        ONNXSTREAM_ASSIGN(const auto binary, caffe::plan_caffemodel(mapped.network));
        report_.caffemodel_size = binary.size();
        ONNXSTREAM_TRY(session_.write_text(report_.prototxt, text));
        const auto prototxt = session_.last_readable_path();
        ONNXSTREAM_TRY(session_.write(report_.caffemodel, binary));
        const auto caffemodel = session_.last_readable_path();

        if (options_.check) ONNXSTREAM_TRY(check(reader, shapes, mapped, prototxt, caffemodel));

        report_.written = true;
        report_.seconds = seconds_since(start);
        if (options_.report) {
            // Only the report shows them, and they read every byte of the inputs and the
            // outputs once more: without --report that doubled the export's time.
            ONNXSTREAM_TRY(digest(model_path_, "model"));
            for (const auto& f : bound_.data.files)
                if (f.found) ONNXSTREAM_TRY(digest(f.found->path, "data"));
            ONNXSTREAM_TRY(digest(prototxt, "prototxt", report_.prototxt));
            ONNXSTREAM_TRY(digest(caffemodel, "caffemodel", report_.caffemodel));
            ONNXSTREAM_TRY(session_.write_text(report_.report_json, report_json(report_)));
            ONNXSTREAM_TRY(session_.write_text(report_.report_html, report_html(report_)));
        }
        ONNXSTREAM_TRY(session_.check_sources_unchanged());
        return session_.commit();
    }

    result<std::map<std::string, caffe::shape>> input_shapes() {
        std::map<std::string, caffe::shape> out;
        const auto& main = graph_.scopes[graph::main_scope];
        const graph::graph_index index(graph_);
        std::set<std::string> names;
        for (const auto& f : graph_.tree().fields(main.message)) {
            if (f.number() != onnx::number(onnx::graph_field::input) || f.child == onnx::no_index) continue;
            const auto name = std::string(graph_.tree().find_text(f.child, onnx::number(onnx::value_info_field::name)));
            const auto id = graph_.names.find(name);
            if (!id) continue;
            const auto v = index.resolve(graph::main_scope, *id);
            if (v == none || index.at(v).kind != graph::value_kind::graph_input) continue;
            names.insert(name);
            if (const auto given = options_.input_shapes.find(name); given != options_.input_shapes.end()) {
                out[name] = given->second;
                report_.decisions.push_back({"input-shape", name, "as given: " + shape_text(given->second)});
                continue;
            }
            ONNXSTREAM_ASSIGN(const auto declared, read_declared_shape(graph_.tree(), f.child));
            if (!declared.known)
                return failure(error_code::invalid_argument, "the input '" + name + "' has no declared shape", "give it with {0}",
                               {{remedy::give_input_shape, name + "=1,3,224,224"}});
            caffe::shape s;
            for (std::size_t i = 0; i < declared.dims.size(); ++i) {
                if (declared.dims[i]) {
                    s.push_back(*declared.dims[i]);
                } else if (i == 0) {
                    s.push_back(1);
                    report_.decisions.push_back({"input-shape", name, "symbolic batch '" + declared.symbols[i] + "' taken as 1"});
                } else {
                    return failure(error_code::invalid_argument,
                                   "the input '" + name + "' has a symbolic dimension '" + declared.symbols[i] + "' at axis " +
                                       std::to_string(i),
                                   "Caffe needs static shapes; give one with {0}",
                                   {{remedy::give_input_shape, name + "=1,3,224,224"}});
                }
            }
            out[name] = s;
        }
        for (const auto& [name, s] : options_.input_shapes)
            if (!names.contains(name))
                return failure(
                    error_code::invalid_argument, "a shape is given for '" + name + "', which is not an input of the model",
                    "give {0} only for the inputs {1} lists", {{remedy::give_input_shape, {}}, {remedy::inspect_model, {}}});
        // Every size the export computes starts here: bounded once, at the boundary.
        std::uint64_t total = 0;
        for (const auto& [name, s] : out) {
            if (const auto bad = caffe::blob_shape_problem(s))
                return failure(error_code::unsupported, "the input '" + name + "' cannot be a Caffe blob: " + *bad,
                               "give a smaller shape with {0}", {{remedy::give_input_shape, name + "=1,3,224,224"}});
            if (!options_.check) continue;
            const auto count = caffe::element_count(s, options_.check_limits.max_tensor_elements);
            total += count.value_or(0);
            if (!count || total > options_.check_limits.max_total_elements)
                return failure(error_code::limit_exceeded,
                               "the check's random input for '" + name + "' (shape " + shape_text(s) + ") is past the " +
                                   std::to_string(options_.check_limits.max_tensor_elements) +
                                   " elements the check's reference evaluation may hold",
                               "leave out {0}, or give a smaller shape with {1}",
                               {{remedy::leave_out_check, {}}, {remedy::give_input_shape, name + "=1,3,224,224"}});
        }
        return out;
    }

    void run_passes(const graph::tensor_reader& reader) {
        std::map<std::string, double> epsilon_of;  // BatchNormalization label -> epsilon
        for (const auto n : graph_.nodes.ids())
            if (graph_.node_live(n) && graph_.nodes[n].op_type() == "BatchNormalization") {
                const auto a = graph_.attribute(n, "epsilon");
                epsilon_of[graph_.node_label(n)] = a && a->f ? *a->f : 1e-5;
            }
        // What export needs folded (shape arithmetic, constant subgraphs, Constant nodes as
        // initializers) and cleaned it runs through the registry and the driver, as optimize
        // does, with its own limit: a folded tensor becomes a Caffe weight, not a model to write.
        std::vector<const passes::pass_entry*> entries;
        for (const auto name : {"shape", "fold-constants", "dce", "identity", "fold-bn"}) {
            if (std::string_view(name) == "fold-bn" && !options_.fold_batchnorm) continue;
            if (const auto* pass = passes::find_pass(name)) entries.push_back(pass);
        }
        std::vector<error> warnings;
        passes::fixed_point_options driver;
        driver.limits.fold_bytes = options_.fold_bytes;
        const auto ran = passes::run_to_fixed_point(
            graph_, reader, entries, [this](std::size_t) { return passes::finding_sink(report_.pass_findings); }, warnings,
            driver);
        if (options_.fold_batchnorm) report_.folded_batchnorms += ran.changes.back();
        graph_.compact();
        for (auto& w : warnings) report_.warnings.push_back(std::move(w));
        for (const auto& f : report_.pass_findings) {
            if (f.kind == passes::finding_kind::folded_batchnorm && f.names.size() > 1) {
                char eps[32];
                std::snprintf(eps, sizeof eps, "%.9g", epsilon_of.contains(f.names[0]) ? epsilon_of[f.names[0]] : 1e-5);
                report_.decisions.push_back({"fold-bn", f.names[1], f.names[0] + " folded " + f.detail + " (eps " + eps + ")"});
                folded_into_[f.names[1]].push_back(f.names[0]);
            } else if (f.kind == passes::finding_kind::identity_node && !f.names.empty())
                report_.decisions.push_back({"removed", "", f.op_type + " " + f.names[0] + " removed"});
        }
    }

    result<void> digest(const fs::path& path, const std::string& role, const fs::path& shown = {}) {
        ONNXSTREAM_ASSIGN(auto d, sha256_of_file(path));
        d.path = shown.empty() ? path : shown;
        d.role = role;
        report_.digests.push_back(std::move(d));
        return {};
    }

    result<void> check(const graph::tensor_reader& reader, const std::map<std::string, caffe::shape>& shapes,
                       const caffe::mapping& mapped, const fs::path& prototxt, const fs::path& caffemodel) {
        auto& c = report_.check;
        c.ran = true;
        std::mt19937_64 random(options_.seed);
        std::uniform_real_distribution<double> uniform(-1.0, 1.0);
        std::map<std::string, caffe::dense_tensor> inputs;
        for (const auto& [name, s] : shapes) {
            caffe::dense_tensor t;
            t.shape = s;
            // input_shapes() held every shape to the check's limits.
            t.values.resize(
                static_cast<std::size_t>(caffe::element_count(s, options_.check_limits.max_tensor_elements).value_or(0)));
            // float-representable, so both sides see the same numbers
            for (auto& v : t.values) v = static_cast<double>(static_cast<float>(uniform(random)));
            inputs[name] = std::move(t);
        }
        ONNXSTREAM_ASSIGN(const auto original, graph::graph_model::build(model_));
        auto start = std::chrono::steady_clock::now();
        ONNXSTREAM_ASSIGN(const auto reference, caffe::evaluate_onnx(original, reader, inputs, options_.check_limits));
        c.reference_seconds = seconds_since(start);
        if (!options_.check_dump.empty()) {
            ONNXSTREAM_TRY(dump(options_.check_dump, inputs, true));
            std::map<std::string, caffe::dense_tensor> outputs;
            for (const auto& name : mapped.outputs)
                if (const auto found = reference.find(name); found != reference.end()) outputs[name] = found->second;
            ONNXSTREAM_TRY(dump(options_.check_dump / "reference", outputs, false));
        }
        // Every top that is also an ONNX value is compared.
        std::vector<caffe::opencv_request> requests;
        std::map<std::string, std::size_t> row_of;  // top -> layer row
        for (std::size_t i = 0; i < mapped.network.layers.size(); ++i) {
            const auto& l = mapped.network.layers[i];
            if (l.type == "Input") continue;
            for (std::size_t k = 0; k < l.tops.size(); ++k) {
                if (!reference.contains(l.tops[k])) continue;
                requests.push_back({l.name, l.tops[0], l.tops[k], k});
                row_of[l.tops[k]] = i;
            }
        }
        ONNXSTREAM_ASSIGN(const auto run, caffe::run_opencv(prototxt, caffemodel, inputs, requests));
        c.opencv_seconds = run.seconds;
        std::map<std::string, std::pair<double, double>> by_top;  // top -> (max abs error, magnitude)
        for (const auto& [top, got] : run.outputs) {
            auto& row = report_.layers[row_of[top]];
            const auto& want = reference.at(top);
            double err = 0, magnitude = 0;
            if (got.values.size() != want.values.size()) {
                err = std::numeric_limits<double>::infinity();
            } else {
                for (std::size_t i = 0; i < want.values.size(); ++i) {
                    err = std::max(err, std::abs(got.values[i] - want.values[i]));
                    magnitude = std::max(magnitude, std::abs(want.values[i]));
                }
            }
            const auto relative = err / std::max(magnitude, 1e-12);
            if (!row.max_abs_error || err > *row.max_abs_error) row.max_abs_error = err;
            if (!row.max_rel_error || relative > *row.max_rel_error) row.max_rel_error = relative;
            by_top[top] = {err, magnitude};
            ++c.compared_blobs;
        }
        c.passed = true;
        for (const auto& name : mapped.outputs) {
            caffe_output_check o;
            o.name = name;
            if (const auto found = by_top.find(name); found != by_top.end()) {
                o.max_abs_error = found->second.first;
                o.magnitude = found->second.second;
            } else {
                o.max_abs_error = std::numeric_limits<double>::infinity();
            }
            o.relative_error = o.max_abs_error / std::max(o.magnitude, 1e-12);
            c.max_relative_error = std::max(c.max_relative_error, o.relative_error);
            if (!(o.relative_error <= options_.tolerance)) c.passed = false;
            c.outputs.push_back(std::move(o));
        }
        return {};
    }

    static result<void> dump(const fs::path& folder, const std::map<std::string, caffe::dense_tensor>& tensors, bool as_float) {
        std::error_code ec;
        fs::create_directories(folder, ec);
        if (ec) return failure(error_code::io, "cannot create " + folder.string() + ": " + ec.message());
        std::string manifest = "[";
        std::size_t index = 0;
        for (const auto& [name, t] : tensors) {
            const auto file = "t" + std::to_string(index) + ".bin";
            std::ofstream out(folder / file, std::ios::binary);
            for (const auto v : t.values) {
                if (as_float) {
                    const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(v));
                    for (int k = 0; k < 4; ++k) out.put(static_cast<char>((bits >> (8 * k)) & 0xffU));
                } else {
                    const auto bits = std::bit_cast<std::uint64_t>(v);
                    for (int k = 0; k < 8; ++k) out.put(static_cast<char>((bits >> (8 * k)) & 0xffU));
                }
            }
            if (!out) return failure(error_code::io, "cannot write " + (folder / file).string());
            std::string dims;
            for (std::size_t i = 0; i < t.shape.size(); ++i) dims += (i ? "," : "") + std::to_string(t.shape[i]);
            std::string escaped;
            for (const char ch : name) {
                if (ch == '"' || ch == '\\') escaped += '\\';
                if (static_cast<unsigned char>(ch) >= 0x20) escaped += ch;
            }
            manifest += std::string(index ? "," : "") + "{\"name\": \"" + escaped + "\", \"dtype\": \"" +
                        (as_float ? "float32" : "float64") + "\", \"dims\": [" + dims + "], \"file\": \"" + file + "\"}";
            ++index;
        }
        std::ofstream m(folder / "manifest.json");
        m << manifest << "]\n";
        if (!m) return failure(error_code::io, "cannot write " + (folder / "manifest.json").string());
        return {};
    }

    graph::graph_model graph_;
    std::map<std::string, std::vector<std::string>> folded_into_;  // producer label -> BatchNormalizations folded into it
};

}  // namespace

result<void> check_caffe_prefix(const fs::path& output) {
    const auto text = output.string();
    const auto hint = "give -o a file-name prefix such as DIR/model (the outputs are PREFIX.prototxt and PREFIX.caffemodel)";
    // A trailing separator names a folder even when none exists yet; "", "." and ".."
    // as the last part would make hidden files or files outside the folder named.
    const auto name = output.filename().string();
    if (text.empty() || !output.has_filename() || name == "." || name == "..")
        return failure(error_code::invalid_argument, "the output prefix '" + text + "' names a folder, not a file name", hint);
    std::error_code ec;
    if (fs::is_directory(output, ec))
        return failure(error_code::invalid_argument, "the output prefix '" + text + "' is a folder", hint);
    return {};
}

result<export_caffe_report> export_caffe(const fs::path& model, const export_caffe_options& options) {
    return exporter(model, options).run();
}

}  // namespace onnxstream::ops
