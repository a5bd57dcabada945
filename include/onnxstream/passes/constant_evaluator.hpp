// Evaluating one ONNX node on constant inputs, for fold-constants: the deterministic
// operators exporters apply to constants and shapes (Shape, Size, Gather, Unsqueeze,
// Squeeze, Concat, Slice, Reshape, Flatten, Cast, Range, ConstantOfShape, Tile, Expand,
// Transpose, Identity, Add/Sub/Mul/Div, Neg, Abs, Min/Max, Equal/Less/Greater, Not/And/Or,
// Where, Floor/Ceil/Sqrt, Reduce{Sum,Prod,Min,Max}).
//
// The results are those ONNX Runtime computes, bit for bit: float arithmetic in the
// tensor's own type (no double in between), multidirectional broadcasting, integer
// arithmetic wrapping on overflow, integer division truncating toward zero, Cast as C++
// static_cast, Range accumulating `start += delta` in its type. What would not be exact is
// refused with `unsupported` and a reason, never approximated: integer division by zero,
// float-to-integer casts out of range or of NaN, float reductions of more than two
// elements (ONNX Runtime's summation order is not the spec's), FLOAT16 arithmetic, strings.
//
// Elements are little-endian in `bytes`; BOOL is one byte, 0 or 1.
#pragma once

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace onnxstream::passes {

using graph::attribute_value;  // a node's attributes as the graph model decodes them

struct host_tensor {
    std::int32_t data_type = 0;
    std::vector<std::int64_t> dims;
    std::vector<std::byte> bytes;

    [[nodiscard]] std::uint64_t elements() const noexcept;
};

/// A node as the evaluator sees it.
struct evaluated_node {
    std::string_view op_type;
    std::int64_t opset = 0;  // of the ai.onnx domain
    std::vector<attribute_value> attributes;
    std::optional<host_tensor> value_attribute;  // the `value` TensorProto (ConstantOfShape)
    std::vector<const host_tensor*> inputs;      // null: an omitted optional input
};

/// Whether the evaluator knows `op_type` (ai.onnx) at all.
[[nodiscard]] bool can_evaluate(std::string_view op_type) noexcept;

/// The node's outputs. `limit`: the largest output in bytes. Errors: `unsupported` with
/// the reason (an op, type or attribute not handled, a result that would not be exact,
/// larger than `limit`), `invalid_argument` for inputs the op does not accept.
[[nodiscard]] result<std::vector<host_tensor>> evaluate(const evaluated_node& node, std::uint64_t limit);

/// The INT64 tensor Shape gives for `dims` with Shape's `start` and `end` (opset 15).
[[nodiscard]] host_tensor shape_tensor(std::span<const std::int64_t> dims, std::int64_t start, std::int64_t end);

}  // namespace onnxstream::passes
