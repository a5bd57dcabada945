#include <onnxstream/graph/graph_index.hpp>

namespace onnxstream::graph {
namespace {

std::uint64_t key(scope_id s, name_id name) {
    return (static_cast<std::uint64_t>(s.value) << 32) | static_cast<std::uint32_t>(name);
}

}  // namespace

value_id graph_index::define(scope_id s, name_id name, value_kind kind) {
    const auto k = key(s, name);
    if (const auto it = defined_.find(k); it != defined_.end()) return it->second;
    value v;
    v.name = name;
    v.scope = s;
    v.kind = kind;
    v.pinned = model_.pinned.contains(name);
    const auto id = values_.push_back(std::move(v));
    defined_.emplace(k, id);
    return id;
}

graph_index::graph_index(const graph_model& model) : model_(model) {
    const auto& scopes = model.scopes;
    // Definitions first, every scope, so resolution does not depend on node order.
    for (const auto s : scopes.ids()) {
        const auto& sc = scopes[s];
        if (sc.removed) continue;
        for (std::uint32_t i = 0; i < sc.inputs.size(); ++i) {
            if (sc.inputs[i] == empty_name) continue;
            const auto v = define(s, sc.inputs[i], value_kind::graph_input);
            values_[v].slot = i;
        }
        for (const auto t : sc.initializers) {
            if (model.tensors[t].removed) continue;
            const auto v = define(s, model.tensors[t].name, value_kind::initializer);
            if (values_[v].kind == value_kind::graph_input) values_[v].overridable = true;
            values_[v].kind = value_kind::initializer;
            values_[v].tensor = t;
        }
        for (const auto name : sc.sparse_initializers) {
            const auto v = define(s, name, value_kind::sparse_initializer);
            if (values_[v].kind == value_kind::graph_input) values_[v].overridable = true;
            values_[v].kind = value_kind::sparse_initializer;
        }
    }
    input_start_.assign(model.nodes.size() + 1, 0);
    output_start_.assign(model.nodes.size() + 1, 0);
    for (const auto n : model.nodes.ids()) {
        const auto live = model.node_live(n);
        input_start_[n.value + 1] = input_start_[n.value] + static_cast<std::uint32_t>(live ? model.nodes[n].inputs.size() : 0);
        output_start_[n.value + 1] = output_start_[n.value] +
                                     static_cast<std::uint32_t>(live ? model.nodes[n].outputs.size() : 0);
    }
    inputs_.assign(input_start_.back(), none);
    outputs_.assign(output_start_.back(), none);
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        for (std::uint32_t k = 0; k < nd.outputs.size(); ++k) {
            if (nd.outputs[k] == empty_name) continue;
            const auto v = define(nd.scope, nd.outputs[k], value_kind::node_output);
            if (values_[v].kind == value_kind::node_output && values_[v].node == none) {
                values_[v].node = n;
                values_[v].slot = k;
            }
            outputs_[output_start_[n.value] + k] = v;
        }
    }
    auto resolve_or_undefined = [&](scope_id s, name_id name) {
        auto v = resolve(s, name);
        if (v != none) return v;
        auto root = s;
        while (scopes[root].parent != none) root = scopes[root].parent;
        return define(root, name, value_kind::undefined);
    };
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        for (std::uint32_t k = 0; k < nd.inputs.size(); ++k) {
            if (nd.inputs[k] == empty_name) continue;
            const auto v = resolve_or_undefined(nd.scope, nd.inputs[k]);
            inputs_[input_start_[n.value] + k] = v;
            values_[v].uses.push_back({n, k, nd.scope});
        }
    }
    graph_outputs_.resize(scopes.size());
    for (const auto s : scopes.ids()) {
        if (scopes[s].removed) continue;
        for (std::uint32_t k = 0; k < scopes[s].outputs.size(); ++k) {
            const auto name = scopes[s].outputs[k];
            const auto v = name == empty_name ? value_id{none} : resolve_or_undefined(s, name);
            graph_outputs_[s].push_back(v);
            if (v != none) values_[v].uses.push_back({none, k, s});
        }
    }
}

value_id graph_index::input(node_id n, std::size_t slot) const {
    if (n.value + 1U >= input_start_.size()) return none;  // a node added after the index was built
    const auto at = input_start_[n.value] + slot;
    return at < input_start_[n.value + 1] ? inputs_[at] : none;
}

value_id graph_index::output(node_id n, std::size_t slot) const {
    if (n.value + 1U >= output_start_.size()) return none;
    const auto at = output_start_[n.value] + slot;
    return at < output_start_[n.value + 1] ? outputs_[at] : none;
}

value_id graph_index::graph_output(scope_id s, std::size_t slot) const {
    return slot < graph_outputs_[s].size() ? graph_outputs_[s][slot] : value_id{none};
}

value_id graph_index::resolve(scope_id s, name_id name) const {
    for (auto scope = s; scope != none; scope = model_.scopes[scope].parent) {
        if (const auto it = defined_.find(key(scope, name)); it != defined_.end()) return it->second;
    }
    return none;
}

bool graph_index::within(scope_id inner, scope_id outer) const {
    for (auto s = inner; s != none; s = model_.scopes[s].parent)
        if (s == outer) return true;
    return false;
}

bool graph_index::visible_at_uses(value_id v, value_id replacement) const {
    const auto name = values_[replacement].name;
    for (const auto& u : values_[v].uses)
        if (resolve(u.scope, name) != replacement) return false;
    return true;
}

}  // namespace onnxstream::graph
