// Replacing a value by another at every place that reads it (node inputs, graph
// outputs), and the rules that say when that keeps the model's meaning: the replacement's
// name must mean the replacement at each use, a subgraph's outputs keep their standing,
// and the outputs of the main graph and of functions (the model's interface) never
// change. Identity removal, common subexpressions, nop removal, fusion and inlined
// branches all rewire through here.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>

#include <cstdint>

namespace onnxstream::graph {

/// Whether value `v` is an output of the main graph or of a function: the model's (or
/// the function's) interface, whose names never change.
[[nodiscard]] bool is_interface_output(const graph_model& model, const graph_index& index, value_id v);

/// Whether every use of `v` may read `replacement` instead: the name means `replacement`
/// at each use, and a subgraph output only changes to a value of the same standing (both
/// from outside the subgraph, or the replacement computed inside it). Interface outputs
/// are never replaceable.
[[nodiscard]] bool can_replace_uses(const graph_model& model, const graph_index& index, value_id v, value_id replacement);

/// Makes every use of `v` (node inputs and subgraph outputs) read `name`; the nodes and
/// scopes it changes are marked changed.
void replace_uses(graph_model& model, const graph_index& index, value_id v, name_id name);

}  // namespace onnxstream::graph
