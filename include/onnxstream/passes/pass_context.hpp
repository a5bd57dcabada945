// What every pass gets and gives back: the graph model to edit, a reader for the few
// tensors it may look at, and a list of findings, one per thing it removed, merged,
// folded or skipped (with the scope, the names involved, and the nodes and bytes it
// saves). analyze shows findings; optimize counts them. Passes never fail: what they
// cannot do they skip and report. Warnings (a BatchNorm variance clamped) go to
// `warnings`.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/passes/finding.hpp>
#include <onnxstream/passes/graph_index.hpp>
#include <onnxstream/passes/graph_model.hpp>
#include <onnxstream/passes/tensor_reader.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace onnxstream::passes {

/// Limits the passes respect (set by the front end: `--fold-limit`).
struct pass_limits {
    std::uint64_t fold_bytes = 1ULL << 20;  // largest tensor fold-constants / shape may create
};

struct pass_context {
    graph_model& model;
    const tensor_reader& reader;
    std::vector<finding>& findings;
    std::vector<error>& warnings;
    pass_limits limits{};
};

/// Nodes in `n` and, recursively, in every subgraph it holds.
[[nodiscard]] std::uint64_t nodes_within(const graph_model& model, std::uint32_t n);
/// Initializer bytes held by the subgraphs of `n`, recursively.
[[nodiscard]] std::uint64_t bytes_within(const graph_model& model, std::uint32_t n);

/// Whether value `v` is an output of the main graph or of a function: the model's (or
/// the function's) interface, whose names never change.
[[nodiscard]] bool is_interface_output(const graph_model& model, const graph_index& index, std::uint32_t v);

/// Whether every use of `v` may read `replacement` instead: the name means `replacement`
/// at each use, and a subgraph output only changes to a value of the same standing (both
/// from outside the subgraph, or the replacement computed inside it). Interface outputs
/// are never replaceable.
[[nodiscard]] bool can_replace_uses(const graph_model& model, const graph_index& index, std::uint32_t v,
                                    std::uint32_t replacement);

/// Whether a pass may add initializers that are not graph inputs: IR version 4 and later
/// (before, every initializer had to be a graph input too).
[[nodiscard]] bool can_add_initializers(const graph_model& model);

/// Makes every use of `v` (node inputs and subgraph outputs) read `name`.
void replace_uses(graph_model& model, const graph_index& index, std::uint32_t v, name_id name);

}  // namespace onnxstream::passes
