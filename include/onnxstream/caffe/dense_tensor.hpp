// A small dense tensor of doubles: the values the reference evaluator computes and the
// blobs read back from OpenCV for --check. Only for checking (activations of one input),
// never for weights on the export path.
#pragma once

#include <cstdint>
#include <vector>

namespace onnxstream::caffe {

struct dense_tensor {
    std::vector<std::int64_t> shape;
    std::vector<double> values;
};

}  // namespace onnxstream::caffe
