// The boundary between onnxstream and its OpenCV module (onnxstream-opencv.so). OpenCV's
// dnn module pulls in about twenty shared libraries (protobuf, TBB, BLAS/LAPACK, X11 ...)
// that cost every command ~15 MiB of RSS and ~30 ms of start-up when linked into the
// binary; only `export --to caffe --check` needs them, so they live in a module that
// opencv_runner.cpp loads with dlopen on first use. Both sides are built by the same
// CMake project with the same compiler and standard library, so C++ types may cross.
#pragma once

#include <onnxstream/caffe/opencv_runner.hpp>

#include <string>

namespace onnxstream::caffe {

inline constexpr int opencv_module_version = 1;

/// What the module's run returns: `failure` is empty on success, else OpenCV's message.
struct opencv_outcome {
    opencv_run run;
    std::string failure;
};

struct opencv_module_api {
    int version = opencv_module_version;
    opencv_outcome (*run)(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                          const std::map<std::string, dense_tensor>& inputs,
                          const std::vector<opencv_request>& requests) = nullptr;
};

}  // namespace onnxstream::caffe

/// The module's one exported symbol.
extern "C" const onnxstream::caffe::opencv_module_api* onnxstream_opencv_module();
inline constexpr const char* onnxstream_opencv_module_symbol = "onnxstream_opencv_module";
