// What a pass reports about one thing it removed, merged, folded or skipped: the scope,
// the names involved, and the nodes and bytes it saves. analyze shows findings; optimize
// counts them (pass_context.hpp hands passes the list to add them to).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxstream::passes {

enum class finding_kind : std::uint8_t {
    dead_node,              // no output reaches a graph output
    isolated_component,     // dead nodes connected to neither the inputs nor the outputs
    dead_branch,            // If with a constant condition / Loop that never runs: the part never taken
    duplicate_node,         // same op, domain, inputs and attributes as an earlier node
    duplicate_initializer,  // same type, shape and bytes as an earlier initializer
    unused_initializer,     // nothing reads it
    identity_node,          // Identity, or Dropout in inference mode with its mask unused
    unused_input,           // a graph input nothing reads (reported, never removed)
    removed_value_info,     // value_info of values that no longer exist
    removed_function,       // a local function no node calls
    folded_batchnorm,       // BatchNormalization folded into the Conv/ConvTranspose/Gemm before it
    folded_constant,        // a node of constant inputs (or a Constant) replaced by an initializer
    folded_shape,           // Shape / Size of a tensor whose shape is known replaced by an initializer
    nop_node,               // a node that changes nothing (Cast to its own type, Reshape to the same shape...)
    fused_node,             // nodes merged into one (MatMul + Add -> Gemm, Pad into Conv)
    skipped,                // a pass looked at it and left it (detail says why)
};

[[nodiscard]] const char* to_string(finding_kind kind) noexcept;

struct finding {
    finding_kind kind = finding_kind::dead_node;
    std::string scope;  // graph_model::scope_path
    std::string op_type;
    std::vector<std::string> names;  // nodes or tensors involved
    std::uint64_t nodes = 0;         // nodes it removes (or would)
    std::uint64_t bytes = 0;         // initializer bytes it removes (or would)
    std::uint64_t count = 1;         // how many things it stands for (value_info entries)
    std::string detail;
};

}  // namespace onnxstream::passes
