// The text half of an export: NetParameter in protobuf text format, one `layer { ... }`
// per layer with name, type, bottom, top and parameters. Weights never appear in it.
// The result is small (metadata only), so it is built in memory.
#pragma once

#include <onnxstream/caffe/net.hpp>

#include <string>

namespace onnxstream::caffe {

/// The .prototxt text of `network`. Every string is escaped (see `quoted`).
[[nodiscard]] std::string write_prototxt(const net& network);

}  // namespace onnxstream::caffe
