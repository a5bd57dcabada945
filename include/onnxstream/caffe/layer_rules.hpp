// What makes a layer loadable, checked in one place for every layer the mapper makes:
// each parameter fits its caffe.proto field (uint32, int32, int64, float, bool, enum) and
// the layer's own rules (num_output, kernels and strides above 0, pooling pads below the
// kernel, an odd LRN size ...), and each blob's shape is one a Caffe blob can have
// (blob_limits.hpp). A value that does not fit would be written as text OpenCV and Caffe
// refuse or, worse, read modulo 2^32; a parameter without a rule is refused too, so a new
// layer cannot skip the check.
#pragma once

#include <onnxstream/caffe/net.hpp>

#include <optional>
#include <string>

namespace onnxstream::caffe {

/// Why `l` would not load, as a clause naming the parameter or blob ("convolution_param
/// num_output 0 is below 1"); nullopt when it fits.
[[nodiscard]] std::optional<std::string> layer_problem(const layer& l);

}  // namespace onnxstream::caffe
