#include <onnxstream/ops/infer_shapes.hpp>

#include "bound_operation.hpp"

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/encoded_message.hpp>

#include <chrono>
#include <unordered_map>
#include <unordered_set>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using graph::none;

namespace {

bool fully_named(const graph::value_shape& s) {
    return s.data_type != 0 && s.dims &&
           std::all_of(s.dims->begin(), s.dims->end(), [](std::int64_t d) { return d != graph::unknown_dim; });
}

class shape_writer : detail::bound_operation<infer_shapes_options, infer_shapes_report> {
public:
    using bound_operation::bound_operation;

    result<infer_shapes_report> run() {
        const auto started = std::chrono::steady_clock::now();
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, "shapes") : options_.output;
        // Node fields stay in the tree: value_info goes into subgraphs too, which live in them.
        ONNXSTREAM_TRY(open_session({}, onnx::tensor_reading::on_demand, true));
        ONNXSTREAM_TRY(check_locations());
        ONNXSTREAM_TRY(session_.claim_output(report_.output));
        const graph::tensor_reader reader(model_, &bound_.data);
        ONNXSTREAM_ASSIGN(auto model, graph::graph_model::build(model_));
        const graph::graph_index index(model);
        ONNXSTREAM_ASSIGN(const auto shapes, graph::infer_shapes(model, index, reader, options_.input_shapes));
        session_.release_model_pages();

        onnx::tree_edits edits;
        for (const auto s : model.scopes.ids()) {
            const auto& scope = model.scopes[s];
            if (scope.removed || scope.kind == graph::scope_kind::function) continue;
            add_value_info(model, index, shapes, s, edits);
        }
        fix_inputs(model, index, shapes, edits);
        ONNXSTREAM_TRY(bound_.data.check_unchanged());
        ONNXSTREAM_ASSIGN(auto planned, session_.plan_model(edits));
        ONNXSTREAM_TRY(finish_rewrite(planned, edits));
        report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        return std::move(report_);
    }

private:
    // External data is found by a location relative to the model: the output must sit in
    // the input's folder for the locations to hold (a copy elsewhere would need new ones).
    result<void> check_locations() const {
        if (bound_.data.files.empty()) return {};
        std::error_code a, b;
        const auto out_folder = report_.output.parent_path().empty() ? fs::path(".") : report_.output.parent_path();
        const auto in_folder = model_path_.parent_path().empty() ? fs::path(".") : model_path_.parent_path();
        if (fs::equivalent(out_folder, in_folder, a) && !a) return {};
        (void)b;
        return failure(error_code::invalid_argument,
                       "the output " + report_.output.string() + " is not in the folder of " + model_path_.string() +
                           ", whose external data it points at by the same locations",
                       "write the output beside the input model (the default), or merge or repack the model first");
    }

    // value_info of scope `s`: every node output of it with a known type (graph outputs
    // aside), replacing the entries for those names.
    void add_value_info(const graph::graph_model& model, const graph::graph_index& index, const graph::shape_table& shapes,
                        graph::scope_id s, onnx::tree_edits& edits) {
        const auto& tree = model_.tree;
        const auto message = model.scopes[s].message;
        if (!tree.stores_fields(message)) return;
        std::unordered_set<std::string_view> written;
        std::vector<proto::encoded_message> entries;
        for (const auto n : model.scopes[s].nodes) {
            if (!model.node_live(n) || model.nodes[n].scope != s) continue;
            const auto& nd = model.nodes[n];
            for (std::size_t k = 0; k < nd.outputs.size(); ++k) {
                if (nd.outputs[k] == graph::empty_name) continue;
                const auto v = index.output(n, k);
                if (v == none || index.is_graph_output(v)) continue;
                const auto name = model.text(nd.outputs[k]);
                if (!written.insert(name).second) continue;
                ++report_.values;
                const auto& shape = shapes[v];
                if (fully_named(shape)) ++report_.inferred;
                else {
                    ++(shape.data_type == 0 ? report_.unknown : report_.partial);
                    ++report_.unknown_by_op[nd.domain.empty()
                                                ? std::string(nd.op_type.view())
                                                : std::string(nd.domain.view()) + "." + std::string(nd.op_type.view())];
                }
                if (shape.data_type == 0) {
                    written.erase(name);
                    continue;
                }
                proto::encoded_message entry;
                entry.text_field(onnx::number(onnx::value_info_field::name), name);
                entry.message_field(onnx::number(onnx::value_info_field::type), graph::encode_type(shape, shapes));
                entries.push_back(std::move(entry));
            }
        }
        if (entries.empty()) return;
        std::vector<onnx::field_entry> scratch;
        const auto fields = tree.read_fields(message, scratch);
        std::uint32_t position = 0;
        for (const auto& f : fields) {
            if (f.number() == onnx::number(onnx::graph_field::value_info) && f.child != onnx::no_index &&
                written.contains(tree.find_text(f.child, onnx::number(onnx::value_info_field::name)))) {
                edits.drop(tree, message, position);
                ++report_.value_info_replaced;
            }
            ++position;
        }
        for (const auto& e : entries) {
            edits.insert(message, static_cast<std::uint32_t>(fields.size()),
                         edits.bytes(onnx::number(onnx::graph_field::value_info), e.pool()));
            ++report_.value_info_written;
        }
    }

    // --input-shape: the inputs named get the type inferred from the dims given.
    void fix_inputs(const graph::graph_model& model, const graph::graph_index& index, const graph::shape_table& shapes,
                    onnx::tree_edits& edits) {
        if (options_.input_shapes.empty()) return;
        const auto& tree = model_.tree;
        const auto& main = model.scopes[graph::main_scope];
        for (const auto& f : tree.fields(main.message)) {
            if (f.number() != onnx::number(onnx::graph_field::input) || f.child == onnx::no_index) continue;
            const auto name = tree.find_text(f.child, onnx::number(onnx::value_info_field::name));
            const bool named = std::any_of(options_.input_shapes.begin(), options_.input_shapes.end(),
                                           [&](const auto& o) { return o.name == name; });
            const auto id = model.names.find(name);
            if (!named || !id) continue;
            const auto v = index.resolve(graph::main_scope, *id);
            if (v == none) continue;
            const auto type = graph::encode_type(shapes[v], shapes);
            std::uint32_t position = 0, at = none;
            const auto inner = tree.fields(f.child);
            for (const auto& g : inner) {
                if (g.number() == onnx::number(onnx::value_info_field::type)) {
                    edits.drop(tree.index_of(g));
                    at = position;
                }
                ++position;
            }
            edits.insert(f.child, at == none ? static_cast<std::uint32_t>(inner.size()) : at,
                         edits.bytes(onnx::number(onnx::value_info_field::type), type.pool()));
            ++report_.inputs_fixed;
        }
    }
};

}  // namespace

result<infer_shapes_report> infer_shapes(const fs::path& model, const infer_shapes_options& options) {
    return shape_writer(model, options).run();
}

}  // namespace onnxstream::ops
