// A TypeProto as people read it: the element type and shape of a tensor type ("FLOAT",
// ["1", "batch", "?"]), read from its bytes (the message tree does not descend into
// TypeProto). inspect lists inputs and outputs with it; diff shows two differing types
// with it instead of their sizes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace onnxstream::onnx {

struct tensor_type {
    std::string element_type;        // "FLOAT", "INT64", or "" when not a tensor type
    std::vector<std::string> shape;  // "1", "batch", "?" per dimension
    bool has_shape = false;
};

/// The tensor type held by the TypeProto at [begin, end) of `bytes` (an empty one for
/// another kind of type or bytes that do not tokenize: it is for showing, not checking).
[[nodiscard]] tensor_type read_tensor_type(std::span<const std::byte> bytes, std::uint64_t begin, std::uint64_t end);

/// `FLOAT[1, 3, batch]`, `FLOAT` (no shape), `FLOAT[]` (a scalar), or "a non-tensor type".
[[nodiscard]] std::string to_text(const tensor_type& type);

}  // namespace onnxstream::onnx
