// Values, producers and consumers of a graph_model, as it is now. A value is a name
// defined in one scope: a graph input, an initializer, a sparse initializer, a node
// output, or (for names nothing defines) undefined. Every node input and every graph
// output is resolved the way ONNX does: in its own scope first, then outward through the
// enclosing scopes, so a value an If/Loop/Scan body reads from outside has its consumer
// in the body (an outer-scope reference).
//
// The index is a snapshot: passes build one, decide, edit the model, and build a new one
// before deciding again. Removed nodes and scopes are left out.
#pragma once

#include <onnxstream/graph/graph_model.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace onnxstream::graph {

/// A value of one graph_index (graph_index::at).
using value_id = onnxstream::index<struct value_tag>;

enum class value_kind : std::uint8_t { undefined, graph_input, initializer, sparse_initializer, node_output };

struct value_use {
    node_id node = none;     // the consuming node, or none for a graph output
    std::uint32_t slot = 0;  // input slot of the node, or output position of the scope
    scope_id scope = none;   // the scope of the node, or whose output it is
};

// What graph_index::at says of a value (the index keeps it in 17 bytes: see its values_).
// Its uses are the index's (graph_index::uses), not a view each.
struct value {
    name_id name = empty_name;
    scope_id scope = none;    // where it is defined
    node_id node = none;      // node_output: the producer
    std::uint32_t slot = 0;   // node_output: output slot; graph_input: input position
    tensor_id tensor = none;  // initializer: the tensor
    value_kind kind = value_kind::undefined;
    bool overridable = false;  // an initializer that is also a graph input (its default)
    bool pinned = false;       // a training graph uses it
};
static_assert(sizeof(value) <= 24);

class graph_index {
    // A use as the index keeps it, in 8 bytes (an index may hold millions): a node's input
    // slot, its scope the one the node was in when the index was built (scope_at_build);
    // or, with `node` none, a graph output: `slot` indexes output_uses_, which keeps its
    // scope and position (graph outputs are few).
    struct use_row {
        std::uint32_t node = none;
        std::uint32_t slot = 0;
    };

public:
    explicit graph_index(const graph_model& model);
    graph_index(const graph_index&) = delete;
    graph_index& operator=(const graph_index&) = delete;
    graph_index(graph_index&&) noexcept = default;

    /// The uses of one value, each read as a value_use (made when read: the index keeps 8
    /// bytes a use). Valid as long as the index.
    class use_list {
    public:
        class iterator {
        public:
            using iterator_concept = std::forward_iterator_tag;
            using value_type = value_use;
            using difference_type = std::ptrdiff_t;
            iterator() = default;
            iterator(const graph_index* index, const use_row* row) noexcept : index_(index), row_(row) {}
            value_use operator*() const { return index_->use_at(*row_); }
            iterator& operator++() noexcept {
                ++row_;
                return *this;
            }
            iterator operator++(int) noexcept {
                auto before = *this;
                ++row_;
                return before;
            }
            friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.row_ == b.row_; }

        private:
            const graph_index* index_ = nullptr;
            const use_row* row_ = nullptr;
        };

        use_list(const graph_index* index, std::span<const use_row> rows) noexcept : index_(index), rows_(rows) {}
        [[nodiscard]] iterator begin() const noexcept { return {index_, rows_.data()}; }
        [[nodiscard]] iterator end() const noexcept { return {index_, rows_.data() + rows_.size()}; }
        [[nodiscard]] std::size_t size() const noexcept { return rows_.size(); }
        [[nodiscard]] bool empty() const noexcept { return rows_.empty(); }
        [[nodiscard]] value_use operator[](std::size_t i) const { return index_->use_at(rows_[i]); }

    private:
        const graph_index* index_;
        std::span<const use_row> rows_;
    };

    [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
    [[nodiscard]] value at(value_id v) const {
        const auto& stored = values_[v];
        const auto kind = kind_of(v);
        value out;
        out.name = stored.name;
        out.scope = stored.scope;
        out.slot = stored.slot;
        out.kind = kind;
        if (kind == value_kind::node_output) out.node = node_id{stored.owner};
        if (kind == value_kind::initializer) out.tensor = tensor_id{stored.owner};
        out.overridable = (traits_[v.value] & overridable_bit) != 0;
        out.pinned = (traits_[v.value] & pinned_bit) != 0;
        return out;
    }
    /// The uses of value `v`: node inputs in node order, then the graph outputs.
    [[nodiscard]] use_list uses(value_id v) const {
        return {this, std::span(uses_).subspan(use_begin_[v.value], use_begin_[v.value + 1] - use_begin_[v.value])};
    }
    /// Whether value `v` is an output of the scope it is in (or of one it is seen from).
    [[nodiscard]] bool is_graph_output(value_id v) const {
        const auto rows = std::span(uses_).subspan(use_begin_[v.value], use_begin_[v.value + 1] - use_begin_[v.value]);
        return std::any_of(rows.begin(), rows.end(), [](const use_row& u) { return u.node == none; });
    }
    /// Every value's id, in order.
    [[nodiscard]] auto value_ids() const noexcept { return values_.ids(); }

    /// The value input `slot` of node `n` reads; none for an empty name (and for nodes
    /// added after the index was built).
    [[nodiscard]] value_id input(node_id n, std::size_t slot) const;
    /// The value output `slot` of node `n` defines; none for an empty name.
    [[nodiscard]] value_id output(node_id n, std::size_t slot) const;
    /// The value scope `s`'s output `slot` names.
    [[nodiscard]] value_id graph_output(scope_id s, std::size_t slot) const;
    /// What `name` means in scope `s` (searching outward); none when nothing defines it.
    [[nodiscard]] value_id resolve(scope_id s, name_id name) const;
    /// Whether scope `inner` is `outer` or inside it.
    [[nodiscard]] bool within(scope_id inner, scope_id outer) const;

    /// The producer of a value, or none when it is not a node output.
    [[nodiscard]] node_id producer(value_id v) const {
        return v != none && kind_of(v) == value_kind::node_output ? node_id{values_[v].owner} : node_id{none};
    }
    /// Whether `name` can replace value `v` at each of its uses: it must mean the same
    /// value `replacement` there (no inner scope defines that name again).
    [[nodiscard]] bool visible_at_uses(value_id v, value_id replacement) const;

private:
    [[nodiscard]] value_id define(scope_id s, name_id name, value_kind kind);
    [[nodiscard]] value_id find(scope_id s, name_id name) const;

    [[nodiscard]] value_kind kind_of(value_id v) const { return static_cast<value_kind>(traits_[v.value] & kind_mask); }
    void set_kind(value_id v, value_kind kind) {
        traits_[v.value] = static_cast<std::uint8_t>((traits_[v.value] & ~kind_mask) | static_cast<std::uint8_t>(kind));
    }

    [[nodiscard]] value_use use_at(use_row row) const;
    /// The scope node `n` was in when the index was built (a pass may move it since).
    [[nodiscard]] scope_id scope_at_build(node_id n) const;

    // Where node `n`'s slots are in slots_ (its inputs, then its outputs), and how many.
    struct node_slots {
        std::uint32_t first = 0;
        std::uint32_t inputs = 0;
        std::uint32_t outputs = 0;
    };
    [[nodiscard]] node_slots slots_of(node_id n) const;

    const graph_model& model_;
    // A value in 16 bytes and a byte (an index may hold millions): `owner` is the producer
    // of a node output or the tensor of an initializer (a value is never both), and the
    // kind and the two flags share traits_.
    struct stored_value {
        name_id name = empty_name;
        scope_id scope = none;
        std::uint32_t owner = none;
        std::uint32_t slot = 0;
    };
    static constexpr std::uint8_t kind_mask = 0x7;
    static constexpr std::uint8_t overridable_bit = 0x8;
    static constexpr std::uint8_t pinned_bit = 0x10;
    indexed_vector<value_id, stored_value> values_;
    large_vector<std::uint8_t> traits_;  // by value: kind | overridable_bit | pinned_bit
    // (scope, name) -> value: by name id, the first value of that name (4 bytes a name of
    // the model, where a hash table of (scope, name) took 8 a value); a name defined again
    // in other scopes (rare: names are meant to be unique) by (scope, name) beside.
    static std::uint64_t scoped_name(scope_id s, name_id name) {
        return std::uint64_t{s.value} << 32U | static_cast<std::uint32_t>(name);
    }
    large_vector<value_id> by_name_;
    std::unordered_map<std::uint64_t, value_id> more_by_name_;
    large_vector<use_row> uses_;             // every value's uses, value by value
    large_vector<std::uint32_t> use_begin_;  // per value and one more: where its uses start
    struct output_use {
        scope_id scope = none;
        std::uint32_t slot = 0;
    };
    std::vector<output_use> output_uses_;              // the graph-output uses (use_row::slot)
    std::vector<std::pair<node_id, scope_id>> moved_;  // by node: live nodes not in their original scope
    // Node slots without a start a node (8 bytes a node it was): every live node's input
    // values then output values, node by node, in slots_; by node a byte of counts
    // (inputs in the low nibble, outputs in the high; 0 for a node with 15 or more of
    // either, which wide_ holds); and by block of block_nodes nodes, where its first
    // node's slots start and its first entry of wide_. A node's start is its block's plus
    // the counts of the nodes before it in the block: eight bytes summed at a time. A block
    // of 16 sums two words at most (0.5 B a node); with 64 the sums were an eighth of
    // analyze's time on a 1M-node chain.
    static constexpr std::uint32_t block_nodes = 16;
    struct block {
        std::uint32_t start = 0;
        std::uint32_t first_wide = 0;
    };
    struct wide_counts {
        node_id node = none;
        std::uint32_t inputs = 0;
        std::uint32_t outputs = 0;
    };
    large_vector<value_id> slots_;
    large_vector<std::uint8_t> counts_;
    large_vector<block> blocks_;
    std::vector<wide_counts> wide_;
    indexed_vector<scope_id, std::vector<value_id>> graph_outputs_;
};

}  // namespace onnxstream::graph
