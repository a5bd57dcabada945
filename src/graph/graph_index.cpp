#include <onnxstream/graph/graph_index.hpp>

#include <algorithm>

namespace onnxstream::graph {

value_id graph_index::find(scope_id s, name_id name) const {
    const auto n = static_cast<std::uint32_t>(name);
    if (n >= by_name_.size() || by_name_[n] == none) return none;
    if (values_[by_name_[n]].scope == s) return by_name_[n];
    const auto it = more_by_name_.find(scoped_name(s, name));
    return it != more_by_name_.end() ? it->second : value_id{none};
}

value_id graph_index::define(scope_id s, name_id name, value_kind kind) {
    if (const auto found = find(s, name); found != none) return found;
    const auto id = values_.push_back({.name = name, .scope = s});
    traits_.push_back(
        static_cast<std::uint8_t>(static_cast<std::uint8_t>(kind) | (model_.pinned.contains(name) ? pinned_bit : 0U)));
    const auto n = static_cast<std::uint32_t>(name);
    if (by_name_[n] == none) by_name_[n] = id;
    else more_by_name_.emplace(scoped_name(s, name), id);
    return id;
}

graph_index::graph_index(const graph_model& model) : model_(model) {
    const auto& scopes = model.scopes;
    // Room for every definition, so that the tables are sized once.
    std::size_t definitions = 0;
    for (const auto& sc : scopes)
        if (!sc.removed) definitions += sc.inputs.size() + sc.initializers.size() + sc.sparse_initializers.size();
    for (const auto& nd : model.nodes) definitions += nd.outputs.size();
    values_.reserve(definitions);
    traits_.reserve(definitions);
    by_name_.assign(model.names.size(), value_id{none});
    // Definitions first, every scope, so resolution does not depend on node order.
    for (const auto s : scopes.ids()) {
        const auto& sc = scopes[s];
        if (sc.removed) continue;
        for (std::uint32_t i = 0; i < sc.inputs.size(); ++i) {
            if (sc.inputs[i] == empty_name) continue;
            const auto v = define(s, sc.inputs[i], value_kind::graph_input);
            values_[v].slot = i;
        }
        // An initializer named like a graph input is its default (overridable). A name
        // given twice keeps the last definition's kind; a tensor, only an initializer.
        for (const auto t : sc.initializers) {
            if (model.tensors[t].removed) continue;
            const auto v = define(s, model.tensors[t].name, value_kind::initializer);
            if (kind_of(v) == value_kind::graph_input) traits_[v.value] |= overridable_bit;
            set_kind(v, value_kind::initializer);
            values_[v].owner = t.value;
        }
        for (const auto name : sc.sparse_initializers) {
            const auto v = define(s, name, value_kind::sparse_initializer);
            if (kind_of(v) == value_kind::graph_input) traits_[v.value] |= overridable_bit;
            set_kind(v, value_kind::sparse_initializer);
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
            if (kind_of(v) == value_kind::node_output && values_[v].owner == none) {
                values_[v].owner = n.value;
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
    // Uses: every reader resolved once, counted per value, then laid out value by value
    // in one list (node inputs in node order, then graph outputs scope by scope).
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        for (std::uint32_t k = 0; k < nd.inputs.size(); ++k)
            if (nd.inputs[k] != empty_name) inputs_[input_start_[n.value] + k] = resolve_or_undefined(nd.scope, nd.inputs[k]);
    }
    graph_outputs_.resize(scopes.size());
    for (const auto s : scopes.ids()) {
        if (scopes[s].removed) continue;
        for (std::uint32_t k = 0; k < scopes[s].outputs.size(); ++k) {
            const auto name = scopes[s].outputs[k];
            graph_outputs_[s].push_back(name == empty_name ? value_id{none} : resolve_or_undefined(s, name));
        }
    }
    std::vector<std::uint32_t> use_end(values_.size() + 1, 0);  // counts, then where each value's uses end
    for (const auto v : inputs_)
        if (v != none) ++use_end[v.value + 1];
    for (const auto& outputs : graph_outputs_)
        for (const auto v : outputs)
            if (v != none) ++use_end[v.value + 1];
    for (std::size_t i = 1; i < use_end.size(); ++i) use_end[i] += use_end[i - 1];
    uses_.resize(use_end.back());
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        for (std::uint32_t k = 0; k < nd.inputs.size(); ++k) {
            const auto v = nd.inputs[k] == empty_name ? value_id{none} : inputs_[input_start_[n.value] + k];
            if (v != none) uses_[use_end[v.value]++] = {n, k, nd.scope};
        }
    }
    for (const auto s : scopes.ids())
        for (std::uint32_t k = 0; k < graph_outputs_[s].size(); ++k)
            if (const auto v = graph_outputs_[s][k]; v != none) uses_[use_end[v.value]++] = {none, k, s};
    // use_end[v] now ends value v's uses, which is where value v + 1's start.
    std::copy_backward(use_end.begin(), use_end.end() - 1, use_end.end());
    use_end.front() = 0;
    use_begin_ = std::move(use_end);
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
    for (auto scope = s; scope != none; scope = model_.scopes[scope].parent)
        if (const auto v = find(scope, name); v != none) return v;
    return none;
}

bool graph_index::within(scope_id inner, scope_id outer) const {
    for (auto s = inner; s != none; s = model_.scopes[s].parent)
        if (s == outer) return true;
    return false;
}

bool graph_index::visible_at_uses(value_id v, value_id replacement) const {
    const auto name = values_[replacement].name;
    for (const auto& u : uses(v))
        if (resolve(u.scope, name) != replacement) return false;
    return true;
}

}  // namespace onnxstream::graph
