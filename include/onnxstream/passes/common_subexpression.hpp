// cse: nodes of one scope with the same op, domain, inputs (in order, as values) and
// attributes compute the same thing; the later ones are removed and their consumers read
// the first one's outputs. A graph output keeps its name: the survivor is renamed to it,
// or, when both are outputs, an Identity carries it. Never merged: nondeterministic ops
// (RandomNormal, RandomUniform, their *Like forms, Multinomial, Bernoulli, Dropout in
// training mode), ops from domains other than ai.onnx and ai.onnx.ml, calls of local
// functions, and nodes carrying subgraphs.
//
// Identical initializers of one scope (same type, shape and bytes, none of them a graph
// input) share one tensor: candidates are grouped by type and shape, hashed, then
// compared byte for byte.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/passes/pass_context.hpp>

#include <cstdint>
#include <string_view>

namespace onnxstream::passes {

/// Whether an op's results may differ between two runs on the same inputs.
[[nodiscard]] bool is_nondeterministic(std::string_view op_type) noexcept;

/// Runs cse; returns the number of nodes and initializers removed.
std::uint64_t eliminate_common_subexpressions(pass_context& context);

}  // namespace onnxstream::passes
