// Caffe's NetParameter, as far as the .caffemodel writer needs it. The wire format is
// protobuf (proto2): each field is a varint tag (number << 3 | wire type) and a payload;
// messages, strings and packed repeated scalars are length-delimited (a varint length,
// then the bytes). A .caffemodel is one NetParameter whose `layer` messages (field 100)
// carry name, type, bottom, top and `blobs` (BlobProto); BlobProto holds `shape` (a
// BlobShape of packed int64 `dim`) and `data`, packed little-endian IEEE floats — the
// same bytes as an ONNX FLOAT tensor's raw_data, which is why an unchanged weight is one
// copied slice. Layer parameters (convolution_param ...) live only in the text
// .prototxt: OpenCV and BVLC Caffe take nothing but blobs from the binary, matched by
// layer name, so the binary never repeats them.
//
// Numbers from BVLC caffe.proto (tag 1.0 and master agree). OpenCV's opencv-caffe.proto
// adds BlobProto.raw_data_type = 10 / raw_data = 12 (unused here: float `data` loads in
// both) and renumbers nothing this file uses.
#pragma once

#include <cstdint>

namespace onnxstream::caffe {

enum class net_field : std::uint32_t {
    name = 1,
    input = 3,
    input_dim = 4,
    input_shape = 8,
    layer = 100,
};

enum class layer_field : std::uint32_t {
    name = 1,
    type = 2,
    bottom = 3,
    top = 4,
    blobs = 7,
};

enum class blob_field : std::uint32_t {
    data = 5,         // repeated float, packed
    shape = 7,        // BlobShape
    double_data = 8,  // not read by OpenCV: never written
};

enum class blob_shape_field : std::uint32_t {
    dim = 1,  // repeated int64, packed
};

template <typename Field>
[[nodiscard]] constexpr std::uint32_t number(Field f) noexcept {
    return static_cast<std::uint32_t>(f);
}

}  // namespace onnxstream::caffe
