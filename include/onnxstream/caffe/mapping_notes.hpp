// What mapping an ONNX graph to Caffe says about itself: the dialect it targets, the
// shapes it works in, and each decision it made and each node it refused (for the export
// report). layer_mapping.hpp does the mapping.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxstream::caffe {

enum class dialect : std::uint8_t {
    opencv,  // what OpenCV 4.6's Caffe importer loads: ReLU6, Permute, Pooling ceil_mode
    bvlc,    // BVLC Caffe 1.0 layers and fields only
};

using shape = std::vector<std::int64_t>;

struct refusal {
    std::string op_type;
    std::string node;
    std::string why;
    std::string hint;
};

struct decision {
    std::string kind;   // "input-shape", "pooling", "padding", "batchnorm", "composition" ...
    std::string layer;  // the Caffe layer it concerns, if any
    std::string detail;
};

}  // namespace onnxstream::caffe
