// One TensorProto read from the message tree: name, type, dims, and where its bytes are
// (raw_data, typed fields, external data, or nowhere). Reading validates what later steps
// rely on: dims are non-negative and their product fits in 64 bits; external_data keys
// are well formed (offset and length are decimal numbers, a location is present).
#pragma once

#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_dims.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace onnxstream::onnx {

enum class tensor_storage : std::uint8_t {
    empty,     // no values at all (a zero-element tensor, or values elsewhere)
    raw,       // raw_data
    typed,     // float_data / int32_data / int64_data / double_data / uint64_data
    strings,   // string_data
    external,  // data_location = EXTERNAL
};

[[nodiscard]] const char* to_string(tensor_storage storage) noexcept;

struct external_reference {
    std::string_view location;
    std::optional<std::uint64_t> offset;  // absent: 0
    std::optional<std::uint64_t> length;  // absent: to the end of the file
    std::optional<std::string_view> checksum;
};

// Ordered to leave no padding, the external reference behind a pointer (most tensors have
// none) and the dims a view of the model's bytes (no heap block per tensor, nothing per
// dim): 120 bytes per tensor of the model.
struct tensor_info {
    std::uint32_t message = no_index;
    std::int32_t data_type = 0;
    std::string_view name;
    tensor_dims dims;  // refers to the model's bytes, as name does
    std::uint64_t element_count = 1;
    /// Bytes the values take in raw form (dims x element size); empty for strings and
    /// unknown types.
    std::optional<std::uint64_t> expected_bytes;
    std::uint32_t raw_field = no_index;  // field index of raw_data, when raw
    tensor_storage storage = tensor_storage::empty;
    bool has_segment = false;
    std::vector<std::uint32_t> typed_fields;  // field indices of the typed values, in order
    /// Set when the tensor has external_data entries; shared by copies of the tensor_info
    /// (read_tensor fills it, nothing edits it afterwards). Read into a caller's reference
    /// (read_tensor's third argument), it points there without owning it.
    std::shared_ptr<external_reference> external;
};
static_assert(sizeof(tensor_info) <= 120, "tensor_info is held once per tensor of the model");

/// Reads tensor message `message_index`. Errors: `invalid_tensor` naming the field path.
[[nodiscard]] result<tensor_info> read_tensor(const message_tree& tree, std::uint32_t message_index);
/// The same with the external reference, when the tensor has one, read into `reference`
/// (overwritten) instead of a block of its own: the result's `external` points to it
/// without owning it, so neither the result nor a copy of it may be used once `reference`
/// is read into again or gone. For a pass that reads each tensor and lets it go
/// (model_file::open of a million external tensors: an allocation each otherwise).
[[nodiscard]] result<tensor_info> read_tensor(const message_tree& tree, std::uint32_t message_index,
                                              external_reference& reference);

/// Parses a decimal external_data number ("offset", "length"): digits only, no sign, fits 64 bits.
[[nodiscard]] std::optional<std::uint64_t> parse_decimal(std::string_view text) noexcept;

}  // namespace onnxstream::onnx
