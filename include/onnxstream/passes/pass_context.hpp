// What every pass gets and gives back: the graph model to edit, a reader for the few
// tensors it may look at, and a list of findings, one per thing it removed, merged,
// folded or skipped (with the scope, the names involved, and the nodes and bytes it
// saves). analyze shows findings; optimize counts them. Passes never fail: what they
// cannot do they skip and report. Warnings (a BatchNorm variance clamped) go to
// `warnings`.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/graph/value_replacement.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace onnxstream::passes {

// Passes are written in the graph layer's terms (graph_model, graph_index, none, name_id,
// replace_uses...): its names are this namespace's too.
using namespace onnxstream::graph;

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
    std::string scope;               // graph_model::scope_path
    std::string op_type;
    std::vector<std::string> names;  // nodes or tensors involved
    std::uint64_t nodes = 0;         // nodes it removes (or would)
    std::uint64_t bytes = 0;         // initializer bytes it removes (or would)
    std::uint64_t count = 1;         // how many things it stands for (value_info entries)
    std::string detail;
};

/// A finding about one node `n` of `model`: its scope, op_type and label, one node.
[[nodiscard]] finding node_finding(const graph_model& model, std::uint32_t n, finding_kind kind, std::string detail = {});

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

}  // namespace onnxstream::passes
