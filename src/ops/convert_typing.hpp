// The graph half of `convert` (private to src/ops): which values become 16-bit, which stay
// float32, and the edits that keep every node's inputs of the type it expects. It reads
// the graph model only (no weight is touched); convert.cpp turns its decisions into tree
// edits next to the tensor bytes.
//
// Types are inferred forward from what the model declares (graph inputs and outputs,
// value_info, initializers, Constant nodes) with a small table of operator rules; a value
// whose type stays unknown is left alone. A node is "blocked" when it must compute in
// float32: its operator is on the block list, its schema only allows float32 for its
// inputs or outputs (learned from ONNX's operator schemas), or it comes from a domain the
// tool does not know. Its float inputs are cast to float32 and its float outputs back.
//
// Values too wide for the target (tensors whose values float16 would saturate, the float
// an int32 or int64 is cast to) stay float32, and the nodes that read them compute in
// float32 too. Before any edit is made the result is type-checked against the schemas
// (each slot admits its type; slots that share a type constraint get one type): a node
// that fails computes in float32, and one that still fails is refused by name.
#pragma once

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace onnxstream::ops::detail {

struct typing_options {
    std::int32_t target = 10;  // TensorProto.DataType: 10 float16, 16 bfloat16
    bool keep_io_types = false;
    std::int64_t opset = 0;              // the model's ai.onnx opset (schemas are looked up at it)
    std::vector<std::string> block_ops;  // operator types computed in float32
    // Tensors whose values the target cannot hold, by site: kept float32, the readers of
    // their values computing in float32. convert fills it with the tensors float16 would
    // saturate (4 bytes each: a model of random weights has a million).
    std::vector<onnx::site_id> wide_sites;
};

struct typing_result {
    indexed_vector<onnx::site_id, bool> convert_site;  // its values become `target`
    std::uint64_t casts_inserted = 0;
    std::uint64_t nodes_blocked = 0;  // nodes computing in float32 that had float inputs or outputs
    std::uint64_t types_changed = 0;  // value_info / inputs / outputs whose elem_type changed
    std::uint64_t cast_targets_changed = 0;
    std::uint64_t casts_made_identity = 0;         // Casts of the model the conversion left with nothing to do
    std::uint64_t float_values = 0;                // values known to be float32 in the input
    std::uint64_t nodes_type_checked_float32 = 0;  // of nodes_blocked: kept float32 by the type check
    // Nodes computing in float32 by operator type, most first (why weights stay float32).
    std::vector<std::pair<std::string, std::uint64_t>> blocked_op_types;
};

/// The operators kept in float32 by default (onnxconverter-common's choices: ML operators,
/// index and range computations, Resize/Upsample, Min/Max, CumSum, TopK, RoiAlign).
[[nodiscard]] std::vector<std::string> default_block_ops();

/// Decides and records the graph edits (elem_types, Cast `to`, renamed inputs and outputs,
/// new Cast nodes) in `edits`. Tensors to convert are returned, not edited.
/// Errors: `unsupported` naming a node whose types cannot be made to check even with the
/// node computing in float32 (nothing is edited then).
[[nodiscard]] result<typing_result> plan_types(graph::graph_model& model, const typing_options& options, onnx::tree_edits& edits);

}  // namespace onnxstream::ops::detail
