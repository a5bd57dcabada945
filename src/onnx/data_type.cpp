#include <onnxstream/onnx/data_type.hpp>

#include <array>

namespace onnxstream::onnx {

std::optional<data_type_info> describe(std::int32_t type) noexcept {
    using e = typed_encoding;
    using f = tensor_field;
    static constexpr std::array<data_type_info, 25> table{{
        {"UNDEFINED", 0, e::none, f::raw_data},
        {"FLOAT", 32, e::fixed32, f::float_data},
        {"UINT8", 8, e::varint32, f::int32_data},
        {"INT8", 8, e::varint32, f::int32_data},
        {"UINT16", 16, e::varint32, f::int32_data},
        {"INT16", 16, e::varint32, f::int32_data},
        {"INT32", 32, e::varint32, f::int32_data},
        {"INT64", 64, e::varint64, f::int64_data},
        {"STRING", 0, e::none, f::string_data},
        {"BOOL", 8, e::varint32, f::int32_data},
        {"FLOAT16", 16, e::varint32, f::int32_data},
        {"DOUBLE", 64, e::fixed64, f::double_data},
        {"UINT32", 32, e::varint_u64, f::uint64_data},
        {"UINT64", 64, e::varint_u64, f::uint64_data},
        {"COMPLEX64", 64, e::fixed32, f::float_data},
        {"COMPLEX128", 128, e::fixed64, f::double_data},
        {"BFLOAT16", 16, e::varint32, f::int32_data},
        {"FLOAT8E4M3FN", 8, e::varint32, f::int32_data},
        {"FLOAT8E4M3FNUZ", 8, e::varint32, f::int32_data},
        {"FLOAT8E5M2", 8, e::varint32, f::int32_data},
        {"FLOAT8E5M2FNUZ", 8, e::varint32, f::int32_data},
        {"UINT4", 4, e::varint32_packed4, f::int32_data},
        {"INT4", 4, e::varint32_packed4, f::int32_data},
        {"FLOAT4E2M1", 4, e::varint32_packed4, f::int32_data},
        {"FLOAT8E8M0", 8, e::varint32, f::int32_data},
    }};
    if (type < 0 || static_cast<std::size_t>(type) >= table.size()) return std::nullopt;
    return table[static_cast<std::size_t>(type)];
}

std::string data_type_name(std::int32_t type) {
    if (const auto info = describe(type)) return info->name;
    return "type " + std::to_string(type);
}

result<std::uint64_t> raw_byte_size(std::int32_t type, std::uint64_t element_count) {
    const auto info = describe(type);
    if (!info || info->bits == 0)
        return failure(error_code::unsupported, "tensors of type " + data_type_name(type) + " have no fixed element size");
    if (info->bits == 4) return element_count / 2 + element_count % 2;
    const std::uint64_t bytes = info->bits / 8;
    if (element_count > std::numeric_limits<std::uint64_t>::max() / bytes)
        return failure(error_code::invalid_tensor, "the tensor's size overflows 64 bits");
    return element_count * bytes;
}

}  // namespace onnxstream::onnx
