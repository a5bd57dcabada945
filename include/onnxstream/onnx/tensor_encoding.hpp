// Encoding the TensorProto fields of a tensor a rewrite creates or moves: the header
// (dims, data_type, name, in the order ONNX's own serializer writes them) and the fields
// that point it at external data (one `external_data` entry per key, then
// `data_location = EXTERNAL`). The values themselves follow as raw_data or stay in the
// data file.
#pragma once

#include <onnxstream/proto/encoded_message.hpp>

#include <cstdint>
#include <span>
#include <string_view>

namespace onnxstream::onnx {

/// Appends dims, data_type and name.
void encode_tensor_header(proto::encoded_message& out, std::span<const std::int64_t> dims, std::int32_t data_type,
                          std::string_view name);

/// Appends the `location`, `offset` and `length` entries and `data_location = EXTERNAL`.
void encode_external_location(proto::encoded_message& out, std::string_view location, std::uint64_t offset, std::uint64_t length);

}  // namespace onnxstream::onnx
