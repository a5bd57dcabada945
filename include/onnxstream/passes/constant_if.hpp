// const-if: an If whose condition is constant (an initializer or Constant, also through
// Identity / Cast / Not / Equal of constants) is replaced by the branch it always takes.
// The branch's nodes, initializers and value_info move into the enclosing graph where the
// If was; any name they define that is already used elsewhere in the model is renamed to
// a fresh one (inside nested subgraphs too), and the branch's outputs become the If's
// outputs: the producing node is renamed when it can be, else an Identity is added.
//
// A Loop that never runs its body (trip count constant 0, or condition constant false)
// is replaced by Identity nodes forwarding the initial loop-carried values to its
// outputs, unless one of its scan outputs is used.
#pragma once

#include <onnxstream/passes/pass_context.hpp>

#include <cstdint>

namespace onnxstream::passes {

/// Runs const-if; returns the number of If and Loop nodes replaced.
std::uint64_t inline_constant_branches(pass_context& context);

/// For analyze: every If / Loop whose condition is constant, as dead_branch findings
/// (what would be removed), without changing the model.
void find_dead_branches(pass_context& context);

}  // namespace onnxstream::passes
