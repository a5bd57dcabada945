// ONNX graph -> Caffe layers, with static shapes. The main graph (after dce, identity
// and, unless disabled, fold-bn) is walked in order; every blob's shape is inferred from
// the input shapes, and each node becomes the Caffe layers that compute exactly what it
// computes: pooling and convolution sizes made to agree with ONNX (padding chosen so the
// windows start at the same places, extra rows and columns sliced away, average divisors
// corrected by a Scale map), Gemm/MatMul weights stored [num_output, K], Clip and
// HardSigmoid composed from ReLU/ReLU6 and Power. A node that has no exact Caffe form is
// not guessed at: it becomes a refusal (op, name, why, what to try), and mapping goes on
// so that one run lists them all. Every layer made is checked against caffe.proto
// (layer_rules.hpp) and every blob against what Caffe holds (blob_limits.hpp): a model's
// sizes are untrusted, so a value that does not fit is a refusal of its node, never a
// file OpenCV cannot load.
//
// Weights are not read here except where a layer needs their values (a transposed
// matrix, a per-channel constant); the `weight_store` places blob bytes: a copy slice
// for an unchanged FLOAT tensor, computed values somewhere bounded.
#pragma once

#include <onnxstream/caffe/mapping_notes.hpp>
#include <onnxstream/caffe/net.hpp>
#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace onnxstream::caffe {

class weight_store {
public:
    virtual ~weight_store() = default;
    /// The bytes of constant `c` as float32: a slice when they already are, else converted.
    [[nodiscard]] virtual result<blob_data> constant_data(const graph::constant& c) = 0;
    /// Values the exporter computed.
    [[nodiscard]] virtual result<blob_data> computed_data(std::vector<float> values) = 0;
};

struct mapping_options {
    dialect target = dialect::opencv;
    std::map<std::string, shape> input_shapes;  // every graph input, resolved to numbers
    // Weights the mapper computes from sizes (pooling divisor maps, upsampling kernels) are
    // held in memory before they are placed: at most this many floats per blob.
    std::uint64_t max_computed_elements = 1ULL << 26;
};

struct mapping {
    net network;
    std::vector<refusal> refusals;     // every node that has no Caffe form, in graph order
    std::vector<std::string> blocked;  // nodes not checked: an input comes from a refused node
    std::vector<decision> decisions;
    std::map<std::string, shape> blob_shapes;  // every top
    std::vector<std::string> outputs;          // the graph outputs, as Caffe tops
};

/// Maps the live main graph of `model`. Fails only on errors reading the model; what
/// cannot be expressed is in `refusals`.
[[nodiscard]] result<mapping> map_graph(const graph::graph_model& model, const graph::tensor_reader& reader,
                                        weight_store& weights, const mapping_options& options);

/// Output sizes (ONNX rules), shared with the reference evaluator.
[[nodiscard]] std::int64_t onnx_pool_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad_begin,
                                          std::int64_t pad_end, std::int64_t dilation, bool ceil_mode);

}  // namespace onnxstream::caffe
