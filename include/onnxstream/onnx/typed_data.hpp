// Typed tensor values (float_data, int32_data, int64_data, double_data, uint64_data, packed
// or not) converted to the little-endian bytes raw_data would hold. Packed fixed-width
// fields already are those bytes on the wire; varint fields are narrowed to the element
// width (int32_data holds FLOAT16/BFLOAT16/INT8/UINT8/BOOL/FP8 bit patterns, and for the
// 4-bit types one byte, two elements, per entry). The result does not depend on the host's
// byte order.
#pragma once

#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace onnxstream::onnx {

/// Errors: `unsupported` (strings, unknown types), `size_mismatch` (the number of values
/// does not match the dims), `malformed` (a value does not decode).
[[nodiscard]] result<std::vector<std::byte>> typed_to_raw(const message_tree& tree, const tensor_info& tensor);

/// The bytes the typed values would take as raw_data, counted without converting them
/// (each varint by its final width). Empty for strings and unknown types, and when a
/// packed field ends inside a varint (typed_to_raw reports such tensors in detail).
[[nodiscard]] std::optional<std::uint64_t> typed_raw_size(const message_tree& tree, const tensor_info& tensor);

}  // namespace onnxstream::onnx
