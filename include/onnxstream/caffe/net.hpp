// A Caffe network as the exporter builds it: layers in execution order, each with its
// name, type, bottoms, tops, parameters (as prototxt entries) and blobs. It holds no
// weight bytes: a blob names a slice of a source file (an ONNX weight's raw_data, an
// external data file, or the spill file holding computed weights) or a few inline
// values (a BatchNorm factor, a pooling correction map). The prototxt writer and the
// .caffemodel writer both read it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::caffe {

/// One prototxt entry of a layer's parameters: `key: value`, or `key { children }` when
/// `children` is not empty. `value` is already formatted (3, 1e-05, true, MAX, or a
/// quoted string made by `quoted`).
struct param {
    std::string key;
    std::string value;
    std::vector<param> children;

    [[nodiscard]] static param integer(std::string_view key, std::int64_t v);
    [[nodiscard]] static param real(std::string_view key, double v);  // round-trips a float
    [[nodiscard]] static param flag(std::string_view key, bool v);
    [[nodiscard]] static param word(std::string_view key, std::string_view enum_value);
    [[nodiscard]] static param message(std::string_view key, std::vector<param> children);
};

/// Protobuf text-format string literal: quotes, backslashes and bytes below 0x20 or
/// 0x7f escaped (octal), so untrusted names cannot break the file.
[[nodiscard]] std::string quoted(std::string_view text);

/// Where a blob's float32 values are.
struct blob_data {
    static constexpr std::uint32_t inline_values = 0xffffffffU;
    std::uint32_t source = inline_values;  // index in the writer's source table, or inline_values
    std::uint64_t offset = 0;              // slice: first byte
    std::vector<float> values;             // inline_values: the values
};

struct blob {
    std::vector<std::int64_t> shape;
    blob_data data;
    [[nodiscard]] std::uint64_t count() const noexcept;
    [[nodiscard]] std::uint64_t bytes() const noexcept { return count() * 4; }
};

struct layer {
    std::string name;
    std::string type;
    std::vector<std::string> bottoms;
    std::vector<std::string> tops;
    std::vector<param> params;
    std::vector<blob> blobs;
    std::vector<std::string> sources;  // the ONNX nodes it stands for (for the report)
};

struct net {
    std::string name;
    std::vector<layer> layers;
};

}  // namespace onnxstream::caffe
