#include <onnxstream/ops/infer_shapes.hpp>

#include "bound_operation.hpp"

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/encoded_message.hpp>

#include <chrono>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using graph::none;

namespace {

bool fully_named(const graph::value_shape& s) {
    return s.data_type != 0 && s.dims &&
           std::all_of(s.dims->begin(), s.dims->end(), [](std::int64_t d) { return d != graph::unknown_dim; });
}

// The TypeProto of each distinct shape of a shape_table, encoded once (the table holds each
// shape once, where it stays: a million values have a few hundred shapes).
class encoded_types {
public:
    explicit encoded_types(const graph::shape_table& shapes) noexcept : shapes_(shapes) {}

    [[nodiscard]] std::span<const std::byte> of(const graph::value_shape& shape) {
        auto [at, added] = types_.try_emplace(&shape);
        if (added) {
            const auto encoded = graph::encode_type(shape, shapes_);
            at->second.assign(encoded.pool().begin(), encoded.pool().end());
        }
        return at->second;
    }

private:
    const graph::shape_table& shapes_;
    std::unordered_map<const graph::value_shape*, std::vector<std::byte>> types_;
};

class shape_writer : detail::bound_operation<infer_shapes_options, infer_shapes_report> {
public:
    using bound_operation::bound_operation;

    result<infer_shapes_report> run() {
        const auto started = std::chrono::steady_clock::now();
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, "shapes") : options_.output;
        // A node's fields are read on demand: one with a subgraph (where value_info goes
        // too) has attributes, and a node with attributes keeps its fields in the tree.
        ONNXSTREAM_TRY(open_session(onnx::nodes_on_demand(), onnx::tensor_reading::on_demand, true));
        ONNXSTREAM_TRY(check_locations());
        ONNXSTREAM_TRY(session_.claim_output(report_.output));
        onnx::tree_edits edits;
        {
            // The graph model and the shapes go before the planning (the edits hold what the
            // output needs of them), and the index before the entries are encoded.
            const graph::tensor_reader reader(model_, &bound_.data);
            ONNXSTREAM_ASSIGN(auto model, graph::graph_model::build(model_));
            std::optional<graph::graph_index> index(std::in_place, model);
            ONNXSTREAM_ASSIGN(const auto shapes, graph::infer_shapes(model, *index, reader, options_.input_shapes));
            session_.release_model_pages();
            fix_inputs(model, *index, shapes, edits);
            const auto outputs = shapes_of_outputs(model, *index, shapes);
            index.reset();
            // By name, the stamp of the scope that wrote it (the scope's number + 1).
            std::vector<std::uint32_t> written(model.names.size(), 0);
            encoded_types types(shapes);
            for (const auto s : model.scopes.ids()) {
                const auto& scope = model.scopes[s];
                if (scope.removed || scope.kind == graph::scope_kind::function) continue;
                add_value_info(model, outputs, types, s, written, s.value + 1, edits);
            }
        }
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

    // What add_value_info needs of the index, which is let go before the entries are
    // encoded (53 bytes a node, where this keeps 12): by node output, its shape, or null when
    // it gets no entry (no value of its own, or a graph output).
    struct output_shapes {
        std::vector<std::uint32_t> first;              // by node: where its outputs start in `shape`
        std::vector<const graph::value_shape*> shape;  // by output
    };

    static output_shapes shapes_of_outputs(const graph::graph_model& model, const graph::graph_index& index,
                                           const graph::shape_table& shapes) {
        output_shapes out;
        out.first.reserve(model.nodes.size());
        std::size_t count = 0;
        for (const auto n : model.nodes.ids()) count += model.nodes[n].outputs.size();
        out.shape.reserve(count);
        for (const auto n : model.nodes.ids()) {
            out.first.push_back(static_cast<std::uint32_t>(out.shape.size()));
            for (std::size_t k = 0; k < model.nodes[n].outputs.size(); ++k) {
                const auto v = index.output(n, k);
                out.shape.push_back(v == none || index.is_graph_output(v) ? nullptr : &shapes[v]);
            }
        }
        return out;
    }

    // value_info of scope `s`: every node output of it with a known type (graph outputs
    // aside), replacing the entries for those names. The entries go into the edits' pool as
    // they are encoded, one run of fields inserted once (a graph of a million nodes writes a
    // million: their bytes alone, no list of them first), and the names written are marked
    // in `written`, a scope's stamp a name (`stamp` is this scope's).
    void add_value_info(const graph::graph_model& model, const output_shapes& outputs, encoded_types& types, graph::scope_id s,
                        std::vector<std::uint32_t>& written, std::uint32_t stamp, onnx::tree_edits& edits) {
        const auto& tree = model_.tree;
        const auto message = model.scopes[s].message;
        if (!tree.stores_fields(message)) return;
        std::vector<onnx::field_entry> scratch;
        const auto fields = tree.read_fields(message, scratch);
        const auto end = static_cast<std::uint32_t>(fields.size());
        // The pool's room first (a pool that grows by doubling holds up to twice the bytes,
        // and both copies while it moves): each candidate entry's name and type, and at most
        // 10 bytes of tags and lengths.
        std::uint64_t room = 0;
        for (const auto n : model.scopes[s].nodes) {
            if (!model.node_live(n) || model.nodes[n].scope != s) continue;
            const auto& nd = model.nodes[n];
            for (std::size_t k = 0; k < nd.outputs.size(); ++k) {
                const auto* shape = outputs.shape[outputs.first[n.value] + k];
                if (shape != nullptr && shape->data_type != 0)
                    room += model.text(nd.outputs[k]).size() + types.of(*shape).size() + 10;
            }
        }
        edits.reserve(0, 0, 0, 0, static_cast<std::size_t>(room));
        auto entries = edits.encoded_fields();  // at the end of the graph, in node order: one insertion
        proto::encoded_message entry;           // each entry's bytes, in memory allocated once
        for (const auto n : model.scopes[s].nodes) {
            if (!model.node_live(n) || model.nodes[n].scope != s) continue;
            const auto& nd = model.nodes[n];
            for (std::size_t k = 0; k < nd.outputs.size(); ++k) {
                const auto name = nd.outputs[k];
                const auto* known = outputs.shape[outputs.first[n.value] + k];
                if (name == graph::empty_name || known == nullptr) continue;
                if (written[static_cast<std::size_t>(name)] == stamp) continue;
                written[static_cast<std::size_t>(name)] = stamp;
                ++report_.values;
                const auto& shape = *known;
                if (fully_named(shape)) ++report_.inferred;
                else {
                    ++(shape.data_type == 0 ? report_.unknown : report_.partial);
                    ++report_.unknown_by_op[nd.domain().empty() ? std::string(nd.op_type())
                                                                : std::string(nd.domain()) + "." + std::string(nd.op_type())];
                }
                if (shape.data_type == 0) {
                    written[static_cast<std::size_t>(name)] = 0;
                    continue;
                }
                entry.clear();
                entry.text_field(onnx::number(onnx::value_info_field::name), model.text(name));
                entry.bytes_field(onnx::number(onnx::value_info_field::type), types.of(shape));
                edits.append_encoded(entries, onnx::number(onnx::graph_field::value_info), entry.pool());
                ++report_.value_info_written;
            }
        }
        if (entries.length == 0) return;
        edits.insert(message, end, entries);
        std::uint32_t position = 0;
        for (const auto& f : fields) {
            if (f.number() == onnx::number(onnx::graph_field::value_info) && f.child != onnx::no_index) {
                const auto name = model.names.find(tree.find_text(f.child, onnx::number(onnx::value_info_field::name)));
                if (name && written[static_cast<std::size_t>(*name)] == stamp) {
                    edits.drop(tree, message, position);
                    ++report_.value_info_replaced;
                }
            }
            ++position;
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
