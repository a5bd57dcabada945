#include <onnxstream/onnx/tensor_encoding.hpp>

#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/fields.hpp>

#include <string>

namespace onnxstream::onnx {

void encode_tensor_header(proto::encoded_message& out, std::span<const std::int64_t> dims, std::int32_t data_type,
                          std::string_view name) {
    for (const auto d : dims) out.varint_field(number(tensor_field::dims), static_cast<std::uint64_t>(d));
    out.varint_field(number(tensor_field::data_type), static_cast<std::uint64_t>(data_type));
    out.text_field(number(tensor_field::name), name);
}

void encode_external_location(proto::encoded_message& out, std::string_view location, std::uint64_t offset,
                              std::uint64_t length) {
    const auto entry = number(tensor_field::external_data);
    out.bytes_field(entry, encode_string_entry("location", location));
    out.bytes_field(entry, encode_string_entry("offset", std::to_string(offset)));
    out.bytes_field(entry, encode_string_entry("length", std::to_string(length)));
    out.varint_field(number(tensor_field::data_location), static_cast<std::uint64_t>(data_location::external));
}

}  // namespace onnxstream::onnx
