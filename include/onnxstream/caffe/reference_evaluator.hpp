// A plain double-precision evaluator for the ONNX operators the Caffe exporter maps
// (and the ones it removes or folds: BatchNormalization, Dropout, Identity, Constant).
// It is the reference --check compares OpenCV's run of the export against, so it works
// on the model as it was (before any pass), with straightforward loops: it runs once per
// export on one input. Tests hold it against ONNX Runtime.
#pragma once

#include <onnxstream/caffe/dense_tensor.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/result.hpp>

#include <map>
#include <string>

namespace onnxstream::caffe {

/// Every value of the main graph, by name, for the given graph inputs. Errors:
/// `unsupported` naming the first operator it does not evaluate.
[[nodiscard]] result<std::map<std::string, dense_tensor>> evaluate_onnx(const graph::graph_model& model,
                                                                        const graph::tensor_reader& reader,
                                                                        const std::map<std::string, dense_tensor>& inputs);

}  // namespace onnxstream::caffe
