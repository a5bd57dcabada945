// Runs an exported Caffe model in OpenCV's dnn module, in process (libopencv-dnn-dev;
// optional at build time). OpenCV is in a module loaded on first use
// (onnxstream-opencv.so, beside the binary or in LIBDIR/onnxstream), so that the other
// commands do not load its twenty libraries. Layer fusion is turned off so that every requested layer's
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

/// Whether this build has OpenCV and its module loads (the first call loads it).
[[nodiscard]] bool opencv_available() noexcept;
/// Why OpenCV cannot run, as a clause ("this build of onnxstream has no OpenCV", "its
/// OpenCV module did not load (...)"); empty when it can.
[[nodiscard]] std::string opencv_unavailable_reason();

/// One blob to read back: output `index` of layer `layer` (whose first top is
/// `first_top`: OpenCV names some layers after it), returned under `top`.
struct opencv_request {
    std::string layer;
    std::string first_top;
    std::string top;
    std::size_t index = 0;
};

struct opencv_run {
    std::map<std::string, dense_tensor> outputs;  // by top name
    double seconds = 0;                           // one forward pass
};

/// Loads the two files, sets `inputs` (by Input layer name), runs forward and returns the
/// requested blobs. A layer OpenCV does not know is left out. Errors: `unsupported` without OpenCV (the hint
/// says which package to install), and OpenCV's own exceptions as `invalid_argument`.
[[nodiscard]] result<opencv_run> run_opencv(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                                            const std::map<std::string, dense_tensor>& inputs,
                                            const std::vector<opencv_request>& requests);

}  // namespace onnxstream::caffe
