#include <onnxstream/passes/pass_context.hpp>

#include <onnxstream/onnx/fields.hpp>

#include <algorithm>

namespace onnxstream::passes {

const char* to_string(finding_kind kind) noexcept {
    switch (kind) {
        case finding_kind::dead_node: return "dead_node";
        case finding_kind::isolated_component: return "isolated_component";
        case finding_kind::dead_branch: return "dead_branch";
        case finding_kind::duplicate_node: return "duplicate_node";
        case finding_kind::duplicate_initializer: return "duplicate_initializer";
        case finding_kind::unused_initializer: return "unused_initializer";
        case finding_kind::identity_node: return "identity_node";
        case finding_kind::unused_input: return "unused_input";
        case finding_kind::removed_value_info: return "removed_value_info";
        case finding_kind::removed_function: return "removed_function";
        case finding_kind::folded_batchnorm: return "folded_batchnorm";
        case finding_kind::folded_constant: return "folded_constant";
        case finding_kind::folded_shape: return "folded_shape";
        case finding_kind::nop_node: return "nop_node";
        case finding_kind::fused_node: return "fused_node";
        case finding_kind::skipped: return "skipped";
    }
    return "finding";
}

std::uint64_t nodes_within(const graph_model& model, std::uint32_t n) {
    std::uint64_t count = 1;
    for (const auto s : model.nodes[n].subgraphs)
        for (const auto inner : model.scopes[s].nodes)
            if (!model.nodes[inner].removed) count += nodes_within(model, inner);
    return count;
}

std::uint64_t bytes_within(const graph_model& model, std::uint32_t n) {
    std::uint64_t bytes = 0;
    for (const auto s : model.nodes[n].subgraphs) {
        for (const auto t : model.scopes[s].initializers)
            if (!model.tensors[t].removed) bytes += model.tensor_bytes(t);
        for (const auto inner : model.scopes[s].nodes)
            if (!model.nodes[inner].removed) bytes += bytes_within(model, inner);
    }
    return bytes;
}

bool is_interface_output(const graph_model& model, const graph_index& index, std::uint32_t v) {
    for (const auto& u : index.at(v).uses)
        if (u.node == none && model.scopes[u.scope].kind != scope_kind::subgraph) return true;
    return false;
}

bool can_replace_uses(const graph_model& model, const graph_index& index, std::uint32_t v, std::uint32_t replacement) {
    const auto& old_value = index.at(v);
    const auto& new_value = index.at(replacement);
    if (old_value.pinned || new_value.kind == value_kind::undefined) return false;
    for (const auto& u : old_value.uses) {
        if (index.resolve(u.scope, new_value.name) != replacement) return false;
        if (u.node != none) continue;
        if (model.scopes[u.scope].kind != scope_kind::subgraph) return false;
        // A subgraph output: keep it computed inside the subgraph, or keep it an outer value.
        const bool old_outer = old_value.scope != u.scope;
        const bool new_inside = new_value.kind == value_kind::node_output && new_value.scope == u.scope;
        const bool new_outer = new_value.scope != u.scope;
        if (!(new_inside || (old_outer && new_outer))) return false;
        // A graph lists each output name once.
        const auto& outputs = model.scopes[u.scope].outputs;
        if (std::find(outputs.begin(), outputs.end(), new_value.name) != outputs.end()) return false;
    }
    return true;
}

bool can_add_initializers(const graph_model& model) {
    const auto* ir = model.tree().find(0, onnx::number(onnx::model_field::ir_version));
    return ir == nullptr || ir->token.value >= 4;
}

void replace_uses(graph_model& model, const graph_index& index, std::uint32_t v, name_id name) {
    for (const auto& u : index.at(v).uses) {
        if (u.node != none) {
            model.set_input(u.node, u.slot, name);
        } else if (model.scopes[u.scope].outputs[u.slot] != name) {
            model.scopes[u.scope].outputs[u.slot] = name;
            model.scopes[u.scope].changed = true;
        }
    }
}

}  // namespace onnxstream::passes
