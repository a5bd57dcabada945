// identity: Identity nodes, and Dropout in inference mode whose mask nothing uses, are
// removed and their consumers read the input instead (in nested subgraphs too). Where the
// output is a graph output of the model (or a function), its name must stay: the node
// producing the input is renamed to it when that is possible (the input is computed in
// the same graph and is not itself an output); otherwise the Identity is kept.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/passes/pass_context.hpp>

#include <cstdint>

namespace onnxstream::passes {

/// Whether node `n` is a Dropout that computes nothing at inference: opset 7-11, or a
/// training_mode input that is absent or constant false (opset 12+), or is_test = 1
/// (before opset 7).
[[nodiscard]] bool is_inference_dropout(const graph_model& model, const graph_index& index, const tensor_reader& reader,
                                        node_id n);

/// Runs identity; returns the number of nodes removed.
std::uint64_t remove_identities(pass_context& context);

}  // namespace onnxstream::passes
