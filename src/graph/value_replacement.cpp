#include <onnxstream/graph/value_replacement.hpp>

#include <algorithm>

namespace onnxstream::graph {

bool is_interface_output(const graph_model& model, const graph_index& index, value_id v) {
    for (const auto& u : index.uses(v))
        if (u.node == none && model.scopes[u.scope].kind != scope_kind::subgraph) return true;
    return false;
}

bool can_replace_uses(const graph_model& model, const graph_index& index, value_id v, value_id replacement) {
    const auto& old_value = index.at(v);
    const auto& new_value = index.at(replacement);
    if (old_value.pinned || new_value.kind == value_kind::undefined) return false;
    for (const auto& u : index.uses(v)) {
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

void replace_uses(graph_model& model, const graph_index& index, value_id v, name_id name) {
    for (const auto& u : index.uses(v)) {
        if (u.node != none) model.set_input(u.node, u.slot, name);
        else model.set_graph_output(u.scope, u.slot, name);
    }
}

}  // namespace onnxstream::graph
