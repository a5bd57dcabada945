// dce: backward liveness from the graph outputs, at every depth. A live node makes live
// what it reads, including what its subgraphs read from outer scopes, and the outputs of
// every subgraph it holds; a live call of a local function makes the function's outputs
// live. Values a training graph names are live. Everything else is removed: dead nodes
// (and isolated components, which are dead nodes connected to neither the inputs nor the
// outputs), then initializers nothing reads (an initializer that is also a graph input
// stays: it is part of the interface), value_info of values that no longer exist, and
// local functions nothing calls.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/passes/pass_context.hpp>

#include <cstdint>
#include <vector>

namespace onnxstream::passes {

struct liveness {
    indexed_vector<node_id, bool> node;
    indexed_vector<function_id, bool> function;  // some live node calls it
};

[[nodiscard]] liveness compute_liveness(const graph_model& model, const graph_index& index);

struct component {
    scope_id scope = none;
    std::vector<node_id> nodes;
};

/// Dead nodes grouped by the values they share (producer to consumer), keeping only
/// groups that read no graph input and no output of a live node.
[[nodiscard]] std::vector<component> isolated_components(const graph_model& model, const graph_index& index,
                                                         const liveness& live);

/// Runs dce; returns the number of changes (0: nothing to do).
std::uint64_t eliminate_dead_code(pass_context& context);

/// Drops value_info entries whose name no graph defines any more; returns how many.
std::uint64_t drop_stale_value_info(graph_model& model);

}  // namespace onnxstream::passes
