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

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace onnxstream::graph {

enum class value_kind : std::uint8_t { undefined, graph_input, initializer, sparse_initializer, node_output };

struct value_use {
    std::uint32_t node = none;   // the consuming node, or none for a graph output
    std::uint32_t slot = 0;      // input slot of the node, or output position of the scope
    std::uint32_t scope = none;  // the scope of the node, or whose output it is
};

struct value {
    name_id name = 0;
    std::uint32_t scope = none;     // where it is defined
    value_kind kind = value_kind::undefined;
    std::uint32_t node = none;      // node_output: the producer
    std::uint32_t slot = 0;         // node_output: output slot; graph_input: input position
    std::uint32_t tensor = none;    // initializer: the tensor
    bool overridable = false;       // an initializer that is also a graph input (its default)
    bool pinned = false;            // a training graph uses it
    std::vector<value_use> uses;

    [[nodiscard]] bool is_graph_output() const {
        for (const auto& u : uses)
            if (u.node == none) return true;
        return false;
    }
};

class graph_index {
public:
    explicit graph_index(const graph_model& model);

    [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
    [[nodiscard]] const value& at(std::uint32_t v) const { return values_[v]; }

    /// The value input `slot` of node `n` reads; none for an empty name (and for nodes
    /// added after the index was built).
    [[nodiscard]] std::uint32_t input(std::uint32_t n, std::size_t slot) const;
    /// The value output `slot` of node `n` defines; none for an empty name.
    [[nodiscard]] std::uint32_t output(std::uint32_t n, std::size_t slot) const;
    /// The value scope `s`'s output `slot` names.
    [[nodiscard]] std::uint32_t graph_output(std::uint32_t s, std::size_t slot) const;
    /// What `name` means in scope `s` (searching outward); none when nothing defines it.
    [[nodiscard]] std::uint32_t resolve(std::uint32_t s, name_id name) const;
    /// Whether scope `inner` is `outer` or inside it.
    [[nodiscard]] bool within(std::uint32_t inner, std::uint32_t outer) const;

    /// The producer of a value, or none when it is not a node output.
    [[nodiscard]] std::uint32_t producer(std::uint32_t v) const {
        return v != none && values_[v].kind == value_kind::node_output ? values_[v].node : none;
    }
    /// Whether `name` can replace value `v` at each of its uses: it must mean the same
    /// value `replacement` there (no inner scope defines that name again).
    [[nodiscard]] bool visible_at_uses(std::uint32_t v, std::uint32_t replacement) const;

private:
    [[nodiscard]] std::uint32_t define(std::uint32_t s, name_id name, value_kind kind);

    const graph_model& model_;
    std::vector<value> values_;
    std::unordered_map<std::uint64_t, std::uint32_t> defined_;  // (scope << 32 | name) -> value
    std::vector<std::uint32_t> input_start_, output_start_;    // per node, into the flat lists
    std::vector<std::uint32_t> inputs_, outputs_;
    std::vector<std::vector<std::uint32_t>> graph_outputs_;    // per scope
};

}  // namespace onnxstream::graph
