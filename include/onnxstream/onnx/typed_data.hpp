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
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace onnxstream::onnx {

/// Errors: `unsupported` (strings, unknown types), `size_mismatch` (the number of values
/// does not match the dims), `malformed` (a value does not decode).
[[nodiscard]] result<std::vector<std::byte>> typed_to_raw(const message_tree& tree, const tensor_info& tensor);

/// The bytes the typed values would take as raw_data, counted without converting them
/// (each varint by its final width). Empty for strings and unknown types, and when a
/// packed field ends inside a varint (typed_to_raw reports such tensors in detail).
[[nodiscard]] std::optional<std::uint64_t> typed_raw_size(const message_tree& tree, const tensor_info& tensor);

/// The same bytes, handed to `sink` in pieces of at most 1 MiB, so that converting a
/// tensor of any size holds one piece in memory. When the tree was built over `mapping`,
/// the typed payloads are read through it in windows that are released once converted.
/// A failure of `sink` is returned as it is; the other errors are typed_to_raw's (a size
/// mismatch is only known at the end, after every piece was handed over).
[[nodiscard]] result<std::uint64_t> typed_to_raw(const message_tree& tree, const tensor_info& tensor,
                                                 const std::function<result<void>(std::span<const std::byte>)>& sink,
                                                 const io::mapped_file* mapping = nullptr);

}  // namespace onnxstream::onnx
