#include <onnxstream/graph/graph_index.hpp>

#include <algorithm>
#include <bit>
#include <cstring>

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
    // Each live node's counts, its block's start, and the room for its slots.
    const auto node_count = model.nodes.size();
    counts_.assign(node_count, 0);
    blocks_.reserve((node_count + block_nodes - 1) / block_nodes);
    std::uint32_t total = 0;
    for (const auto n : model.nodes.ids()) {
        if (n.value % block_nodes == 0)
            blocks_.push_back({.start = total, .first_wide = static_cast<std::uint32_t>(wide_.size())});
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        const auto inputs = static_cast<std::uint32_t>(nd.inputs.size());
        const auto outputs = static_cast<std::uint32_t>(nd.outputs.size());
        if (inputs < 15 && outputs < 15) counts_[n.value] = static_cast<std::uint8_t>(inputs | outputs << 4U);
        else wide_.push_back({.node = n, .inputs = inputs, .outputs = outputs});
        total += inputs + outputs;
        if (nd.scope != nd.original_scope) moved_.emplace_back(n, nd.scope);
    }
    slots_.assign(total, none);
    std::uint32_t at = 0;  // node n's first slot, in the loops below
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        at += static_cast<std::uint32_t>(nd.inputs.size());
        for (std::uint32_t k = 0; k < nd.outputs.size(); ++k) {
            if (nd.outputs[k] == empty_name) continue;
            const auto v = define(nd.scope, nd.outputs[k], value_kind::node_output);
            if (kind_of(v) == value_kind::node_output && values_[v].owner == none) {
                values_[v].owner = n.value;
                values_[v].slot = k;
            }
            slots_[at + k] = v;
        }
        at += static_cast<std::uint32_t>(nd.outputs.size());
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
    at = 0;
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        for (std::uint32_t k = 0; k < nd.inputs.size(); ++k)
            if (nd.inputs[k] != empty_name) slots_[at + k] = resolve_or_undefined(nd.scope, nd.inputs[k]);
        at += static_cast<std::uint32_t>(nd.inputs.size() + nd.outputs.size());
    }
    graph_outputs_.resize(scopes.size());
    for (const auto s : scopes.ids()) {
        if (scopes[s].removed) continue;
        for (std::uint32_t k = 0; k < scopes[s].outputs.size(); ++k) {
            const auto name = scopes[s].outputs[k];
            graph_outputs_[s].push_back(name == empty_name ? value_id{none} : resolve_or_undefined(s, name));
        }
    }
    large_vector<std::uint32_t> use_end(values_.size() + 1, 0);  // counts, then where each value's uses end
    at = 0;
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        for (std::uint32_t k = 0; k < nd.inputs.size(); ++k)
            if (const auto v = slots_[at + k]; v != none) ++use_end[v.value + 1];
        at += static_cast<std::uint32_t>(nd.inputs.size() + nd.outputs.size());
    }
    for (const auto& outputs : graph_outputs_)
        for (const auto v : outputs)
            if (v != none) ++use_end[v.value + 1];
    for (std::size_t i = 1; i < use_end.size(); ++i) use_end[i] += use_end[i - 1];
    uses_.resize(use_end.back());
    at = 0;
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        const auto& nd = model.nodes[n];
        for (std::uint32_t k = 0; k < nd.inputs.size(); ++k)
            if (const auto v = slots_[at + k]; v != none) uses_[use_end[v.value]++] = {.node = n.value, .slot = k};
        at += static_cast<std::uint32_t>(nd.inputs.size() + nd.outputs.size());
    }
    for (const auto s : scopes.ids())
        for (std::uint32_t k = 0; k < graph_outputs_[s].size(); ++k)
            if (const auto v = graph_outputs_[s][k]; v != none) {
                uses_[use_end[v.value]++] = {.node = none, .slot = static_cast<std::uint32_t>(output_uses_.size())};
                output_uses_.push_back({.scope = s, .slot = k});
            }
    // use_end[v] now ends value v's uses, which is where value v + 1's start.
    std::copy_backward(use_end.begin(), use_end.end() - 1, use_end.end());
    use_end.front() = 0;
    use_begin_ = std::move(use_end);
}

namespace {

// The input and output counts of the eight nodes of `word` (a byte each, two nibbles), summed.
std::uint32_t counts_in_word(std::uint64_t word) noexcept {
    constexpr std::uint64_t nibbles = 0x0F0F0F0F0F0F0F0FULL;
    const auto pairs = (word & nibbles) + (word >> 4U & nibbles);               // each byte at most 28
    return static_cast<std::uint32_t>((pairs * 0x0101010101010101ULL) >> 56U);  // at most 224: no carry out
}

}  // namespace

graph_index::node_slots graph_index::slots_of(node_id n) const {
    const auto& b = blocks_[n.value / block_nodes];
    const std::size_t first = n.value - n.value % block_nodes;
    node_slots out{.first = b.start,
                   .inputs = static_cast<std::uint32_t>(counts_[n.value] & 0xFU),
                   .outputs = static_cast<std::uint32_t>(counts_[n.value] >> 4U)};
    std::size_t i = first;
    for (; i + 8 <= n.value; i += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, counts_.data() + i, sizeof word);
        out.first += counts_in_word(word);
    }
    if (i < n.value) {  // the last few nodes before n: a word with the bytes past them masked off
        const auto left = n.value - i;
        if constexpr (std::endian::native == std::endian::little) {
            std::uint64_t word = 0;
            std::memcpy(&word, counts_.data() + i, std::min<std::size_t>(sizeof word, counts_.size() - i));
            out.first += counts_in_word(word & ((std::uint64_t{1} << (8U * left)) - 1U));
        } else {
            for (; i < n.value; ++i) out.first += (counts_[i] & 0xFU) + (counts_[i] >> 4U);
        }
    }
    for (auto w = b.first_wide; w < wide_.size() && wide_[w].node.value <= n.value; ++w) {
        if (wide_[w].node == n) {
            out.inputs = wide_[w].inputs;
            out.outputs = wide_[w].outputs;
        } else {
            out.first += wide_[w].inputs + wide_[w].outputs;
        }
    }
    return out;
}

value_id graph_index::input(node_id n, std::size_t slot) const {
    if (n.value >= counts_.size()) return none;  // a node added after the index was built
    const auto at = slots_of(n);
    return slot < at.inputs ? slots_[at.first + slot] : value_id{none};
}

value_id graph_index::output(node_id n, std::size_t slot) const {
    if (n.value >= counts_.size()) return none;
    const auto at = slots_of(n);
    return slot < at.outputs ? slots_[at.first + at.inputs + slot] : value_id{none};
}

scope_id graph_index::scope_at_build(node_id n) const {
    if (!moved_.empty()) {
        const auto it = std::lower_bound(moved_.begin(), moved_.end(), n,
                                         [](const std::pair<node_id, scope_id>& m, node_id key) { return m.first < key; });
        if (it != moved_.end() && it->first == n) return it->second;
    }
    return model_.nodes[n].original_scope;
}

value_use graph_index::use_at(use_row row) const {
    if (row.node == none) return {.node = none, .slot = output_uses_[row.slot].slot, .scope = output_uses_[row.slot].scope};
    const node_id n{row.node};
    return {.node = n, .slot = row.slot, .scope = scope_at_build(n)};
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
