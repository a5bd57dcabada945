// A TypeProto as people read it (onnx/tensor_type.hpp). The bytes are built by hand as
// protobuf encodes them (TypeProto.tensor_type = 1 { elem_type = 1, shape = 2 { dim = 1
// { dim_value = 1 | dim_param = 2 } } }).
#include <onnxstream/onnx/tensor_type.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace onnxstream;

namespace {

std::string length_delimited(int field, const std::string& payload) {
    return std::string(1, static_cast<char>((field << 3) | 2)) + static_cast<char>(payload.size()) + payload;
}

onnx::tensor_type read(const std::string& type_proto) {
    std::vector<std::byte> bytes(type_proto.size());
    std::memcpy(bytes.data(), type_proto.data(), type_proto.size());
    return onnx::read_tensor_type(bytes, 0, bytes.size());
}

}  // namespace

TEST_CASE("read_tensor_type and to_text: element type and each dimension, a value or a name") {
    const auto dims = length_delimited(1, std::string("\x08\x01", 2)) + length_delimited(1, length_delimited(2, "batch")) +
                      length_delimited(1, "");
    const auto type = read(length_delimited(1, std::string("\x08\x01", 2) + length_delimited(2, dims)));
    CHECK(type.element_type == "FLOAT");
    CHECK(type.has_shape);
    CHECK(type.shape == std::vector<std::string>{"1", "batch", "?"});
    CHECK(onnx::to_text(type) == "FLOAT[1, batch, ?]");
    CHECK(onnx::to_text(read(length_delimited(1, std::string("\x08\x07", 2)))) == "INT64");  // no shape
    CHECK(onnx::to_text(read(length_delimited(1, std::string("\x08\x07", 2) + length_delimited(2, "")))) == "INT64[]");
    CHECK(onnx::to_text(read(length_delimited(4, ""))) == "a non-tensor type");  // a sequence
    CHECK(onnx::to_text(read("\xff")) == "a non-tensor type");                   // bytes that do not tokenize
}
