// A plain double-precision evaluator for the ONNX operators the Caffe exporter maps
// (and the ones it removes or folds: BatchNormalization, Dropout, Identity, Constant).
// It is the reference --check compares OpenCV's run of the export against, so it works
// on the model as it was (before any pass), with straightforward loops: it runs once per
// export on one input. Tests hold it against ONNX Runtime.
//
// Sizes come from the model and are untrusted: every tensor's element count is computed
// with checks that cannot overflow and refused past `evaluation_limits`, every attribute
// that enters index arithmetic is bounded first, and every element is read and written
// through checked accessors, so a model whose sizes disagree fails with an error, never
// touches memory outside a tensor.
#pragma once

#include <onnxstream/caffe/dense_tensor.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace onnxstream::caffe {

/// What the evaluator may hold (doubles: 8 bytes an element).
struct evaluation_limits {
    std::uint64_t max_tensor_elements = 1ULL << 27;  // one value: 1 GiB
    std::uint64_t max_total_elements = 1ULL << 28;   // every value held at once: 2 GiB
};

/// Every value of the main graph, by name, for the given graph inputs. Errors:
/// `unsupported` naming the first operator it does not evaluate, `limit_exceeded` for a
/// tensor past `limits`, `invalid_argument` when the model's sizes or attributes do not
/// agree (an index out of range, an input whose values do not match its shape).
[[nodiscard]] result<std::map<std::string, dense_tensor>> evaluate_onnx(const graph::graph_model& model,
                                                                        const graph::tensor_reader& reader,
                                                                        const std::map<std::string, dense_tensor>& inputs,
                                                                        const evaluation_limits& limits = {});

}  // namespace onnxstream::caffe
