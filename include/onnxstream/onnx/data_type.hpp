// TensorProto.DataType: names, element sizes and where typed (non-raw) values live.
// 4-bit types pack two elements per byte (low nibble first); strings have no fixed size
// and never go to external data.
#pragma once

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace onnxstream::onnx {

enum class data_type : std::int32_t {
    undefined = 0,
    float32 = 1,
    uint8 = 2,
    int8 = 3,
    uint16 = 4,
    int16 = 5,
    int32 = 6,
    int64 = 7,
    string = 8,
    boolean = 9,
    float16 = 10,
    float64 = 11,
    uint32 = 12,
    uint64 = 13,
    complex64 = 14,
    complex128 = 15,
    bfloat16 = 16,
    float8e4m3fn = 17,
    float8e4m3fnuz = 18,
    float8e5m2 = 19,
    float8e5m2fnuz = 20,
    uint4 = 21,
    int4 = 22,
    float4e2m1 = 23,
    float8e8m0 = 24,
};

/// How the typed field of a data type stores one value.
enum class typed_encoding : std::uint8_t {
    none,              // strings / undefined: no typed numeric field
    fixed32,           // float_data: 4-byte little-endian floats (complex64: two per element)
    fixed64,           // double_data: 8-byte doubles (complex128: two per element)
    varint32,          // int32_data: one varint per element, truncated to the element width
    varint32_packed4,  // int32_data: 4-bit types, one varint per byte (two elements)
    varint64,          // int64_data
    varint_u64,        // uint64_data
};

struct data_type_info {
    const char* name = "undefined";  // ONNX's name, e.g. "FLOAT16"
    std::uint32_t bits = 0;          // bits per element; 0 when not fixed (string)
    typed_encoding encoding = typed_encoding::none;
    tensor_field typed_field = tensor_field::raw_data;  // where typed values live
};

/// Bytes one entry of the typed field takes in raw_data: the whole 4- or 8-byte value of
/// float_data and double_data, the element width of a varint (one byte, two elements, for
/// the 4-bit types); 0 for `none`.
[[nodiscard]] constexpr std::uint32_t raw_entry_width(const data_type_info& info) noexcept {
    switch (info.encoding) {
        case typed_encoding::none: return 0;
        case typed_encoding::fixed32: return 4;
        case typed_encoding::fixed64: return 8;
        case typed_encoding::varint32_packed4: return 1;
        case typed_encoding::varint32:
        case typed_encoding::varint64:
        case typed_encoding::varint_u64: return info.bits / 8;
    }
    return 0;
}

/// Whether the typed field holds fixed-width little-endian values (float_data, double_data).
[[nodiscard]] constexpr bool fixed_width(typed_encoding encoding) noexcept {
    return encoding == typed_encoding::fixed32 || encoding == typed_encoding::fixed64;
}

/// Facts about a data type; empty for a number ONNX does not define.
[[nodiscard]] std::optional<data_type_info> describe(std::int32_t type) noexcept;

/// The name for messages: "FLOAT16", or "type 99" for an unknown number.
[[nodiscard]] std::string data_type_name(std::int32_t type);

/// Bytes that `element_count` elements take in raw_data. Errors: `unsupported` for
/// strings and unknown types, `invalid_tensor` on overflow.
[[nodiscard]] result<std::uint64_t> raw_byte_size(std::int32_t type, std::uint64_t element_count);

}  // namespace onnxstream::onnx
