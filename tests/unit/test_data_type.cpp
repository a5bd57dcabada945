// TensorProto.DataType facts against the reference. Types 0-16: names from python-onnx's
// TensorProto.DataType enum, element widths from numpy's itemsize of onnx.mapping's dtype
// (BFLOAT16: 16 bits, which numpy cannot say: onnx maps it to float32), and the typed field
// from onnx.mapping.STORAGE_TENSOR_TYPE_TO_FIELD (Debian's onnx 1.12). Types 17-24 are from
// onnx.proto of later releases (float8 in 1.14, 4-bit integers in 1.16, FLOAT4E2M1 and
// FLOAT8E8M0 in 1.18), all stored in int32_data. Table generated with /usr/bin/python3.
#include <onnxstream/onnx/data_type.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <limits>

using namespace onnxstream;
using namespace onnxstream::onnx;

namespace {

struct reference_type {
    std::int32_t number;
    const char* name;
    std::uint32_t bits;
    tensor_field typed_field;
};

constexpr reference_type reference[] = {
    {0, "UNDEFINED", 0, tensor_field::raw_data},
    {1, "FLOAT", 32, tensor_field::float_data},
    {2, "UINT8", 8, tensor_field::int32_data},
    {3, "INT8", 8, tensor_field::int32_data},
    {4, "UINT16", 16, tensor_field::int32_data},
    {5, "INT16", 16, tensor_field::int32_data},
    {6, "INT32", 32, tensor_field::int32_data},
    {7, "INT64", 64, tensor_field::int64_data},
    {8, "STRING", 0, tensor_field::string_data},
    {9, "BOOL", 8, tensor_field::int32_data},
    {10, "FLOAT16", 16, tensor_field::int32_data},
    {11, "DOUBLE", 64, tensor_field::double_data},
    {12, "UINT32", 32, tensor_field::uint64_data},
    {13, "UINT64", 64, tensor_field::uint64_data},
    {14, "COMPLEX64", 64, tensor_field::float_data},
    {15, "COMPLEX128", 128, tensor_field::double_data},
    {16, "BFLOAT16", 16, tensor_field::int32_data},
    {17, "FLOAT8E4M3FN", 8, tensor_field::int32_data},    // onnx.proto after 1.12
    {18, "FLOAT8E4M3FNUZ", 8, tensor_field::int32_data},  // onnx.proto after 1.12
    {19, "FLOAT8E5M2", 8, tensor_field::int32_data},      // onnx.proto after 1.12
    {20, "FLOAT8E5M2FNUZ", 8, tensor_field::int32_data},  // onnx.proto after 1.12
    {21, "UINT4", 4, tensor_field::int32_data},           // onnx.proto after 1.12
    {22, "INT4", 4, tensor_field::int32_data},            // onnx.proto after 1.12
    {23, "FLOAT4E2M1", 4, tensor_field::int32_data},      // onnx.proto after 1.12
    {24, "FLOAT8E8M0", 8, tensor_field::int32_data},      // onnx.proto after 1.12
};

}  // namespace

TEST_CASE("names, element widths and typed fields agree with python-onnx for every data type") {
    for (const auto& r : reference) {
        CAPTURE(r.name);
        const auto info = describe(r.number);
        REQUIRE(info);
        CHECK(std::strcmp(info->name, r.name) == 0);
        CHECK(info->bits == r.bits);
        CHECK(info->typed_field == r.typed_field);
        CHECK(data_type_name(r.number) == r.name);
    }
    CHECK(static_cast<std::int32_t>(data_type::bfloat16) == 16);
    CHECK(static_cast<std::int32_t>(data_type::float8e8m0) == 24);
}

TEST_CASE("numbers ONNX does not define have no facts, and a name that says the number") {
    for (const std::int32_t n : {-1, 25, 26, 1000, std::numeric_limits<std::int32_t>::max()}) {
        CAPTURE(n);
        CHECK_FALSE(describe(n));
        CHECK(data_type_name(n) == "type " + std::to_string(n));
        CHECK(raw_byte_size(n, 1).error().code == error_code::unsupported);
    }
}

TEST_CASE("typed encodings: how one element sits in its typed field (onnx.proto's comments)") {
    CHECK(describe(1)->encoding == typed_encoding::fixed32);      // float_data
    CHECK(describe(14)->encoding == typed_encoding::fixed32);     // COMPLEX64: two floats
    CHECK(describe(11)->encoding == typed_encoding::fixed64);     // double_data
    CHECK(describe(15)->encoding == typed_encoding::fixed64);     // COMPLEX128: two doubles
    CHECK(describe(7)->encoding == typed_encoding::varint64);     // int64_data
    CHECK(describe(12)->encoding == typed_encoding::varint_u64);  // UINT32 in uint64_data
    CHECK(describe(13)->encoding == typed_encoding::varint_u64);
    for (const std::int32_t n : {2, 3, 4, 5, 6, 9, 10, 16, 17, 18, 19, 20, 24}) {
        CAPTURE(n);
        CHECK(describe(n)->encoding == typed_encoding::varint32);  // int32_data, one element each
    }
    for (const std::int32_t n : {21, 22, 23}) {
        CAPTURE(n);
        CHECK(describe(n)->encoding == typed_encoding::varint32_packed4);  // two elements per int32
    }
    CHECK(describe(8)->encoding == typed_encoding::none);
    CHECK(describe(0)->encoding == typed_encoding::none);
}

TEST_CASE("raw byte sizes: elements times width, 4-bit types two to a byte rounded up, overflow refused") {
    CHECK(*raw_byte_size(1, 0) == 0);
    CHECK(*raw_byte_size(9, 7) == 7);    // BOOL: one byte each in raw_data
    CHECK(*raw_byte_size(16, 5) == 10);  // BFLOAT16
    CHECK(*raw_byte_size(14, 3) == 24);  // COMPLEX64
    CHECK(*raw_byte_size(22, 0) == 0);
    CHECK(*raw_byte_size(22, 1) == 1);
    CHECK(*raw_byte_size(23, 4) == 2);
    CHECK(*raw_byte_size(21, std::numeric_limits<std::uint64_t>::max()) == (std::numeric_limits<std::uint64_t>::max() / 2) + 1);
    CHECK(*raw_byte_size(11, std::numeric_limits<std::uint64_t>::max() / 8) == std::numeric_limits<std::uint64_t>::max() / 8 * 8);
    CHECK(raw_byte_size(11, std::numeric_limits<std::uint64_t>::max() / 8 + 1).error().code == error_code::invalid_tensor);
    CHECK(raw_byte_size(15, std::uint64_t{1} << 60).error().code == error_code::invalid_tensor);
    CHECK(raw_byte_size(8, 1).error().code == error_code::unsupported);  // STRING
    CHECK(raw_byte_size(0, 1).error().code == error_code::unsupported);  // UNDEFINED
}
