// Runs an exported Caffe model in OpenCV's dnn module, in process (libopencv-dnn-dev;
// optional at build time). Layer fusion is turned off so that every requested layer's
// output is its own, not that of the layer fused into it.
#pragma once

#include <onnxstream/caffe/dense_tensor.hpp>
#include <onnxstream/result.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace onnxstream::caffe {

/// Whether this build has OpenCV.
[[nodiscard]] bool opencv_available() noexcept;

struct opencv_run {
    std::map<std::string, dense_tensor> outputs;  // by layer name (its first top)
    double seconds = 0;                           // one forward pass
};

/// Loads the two files, sets `inputs` (by Input layer name), runs forward and returns the
/// first output of each layer in `layers` (layer name, its first top), by layer name. Errors: `unsupported` without OpenCV (the hint
/// says which package to install), and OpenCV's own exceptions as `invalid_argument`.
[[nodiscard]] result<opencv_run> run_opencv(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                                            const std::map<std::string, dense_tensor>& inputs,
                                            const std::vector<std::pair<std::string, std::string>>& layers);

}  // namespace onnxstream::caffe
