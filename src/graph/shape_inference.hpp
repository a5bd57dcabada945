// The inference behind graph/value_shapes.hpp, shared by its two sources: value_shapes.cpp
// (the table, declared inputs, the walk, the tensor-shaping operators) and shape_rules.cpp
// (convolutions, pools, resizes, normalizations, recurrent layers). Private to src/graph.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/graph/value_shapes.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace onnxstream::graph::detail {

using dim_list = std::vector<std::int64_t>;

/// ONNX's multidirectional broadcast of `in` (onnx 1.12's rule): a number other than 1
/// wins, then one symbol shared by all that are not numbers, else unknown. Empty when a
/// rank is unknown or the numbers clash.
[[nodiscard]] std::optional<dim_list> broadcast(const std::vector<const value_shape*>& in);
[[nodiscard]] std::optional<std::size_t> axis_of(std::int64_t axis, std::size_t rank);

struct inference {
    const graph_model& model;
    const graph_index& index;
    const tensor_reader& reader;
    shape_table shapes;
    std::vector<bool> done{};       // by node: inferred already
    node_id read_too_early = none;  // the first node reading a value no node before it made
    std::size_t read_too_early_slot = 0;

    [[nodiscard]] const value_shape& of(node_id n, std::size_t slot) const;
    [[nodiscard]] bool has_input(node_id n, std::size_t slot) const;
    [[nodiscard]] std::optional<dim_list> ints(node_id n, std::size_t slot, std::uint64_t max = 64) const;
    [[nodiscard]] std::optional<std::vector<double>> floats(node_id n, std::size_t slot, std::uint64_t max = 64) const;
    [[nodiscard]] std::int64_t attr_i(node_id n, std::string_view name, std::int64_t fallback) const;
    [[nodiscard]] std::optional<dim_list> attr_ints(node_id n, std::string_view name) const;
    [[nodiscard]] std::int64_t opset() const { return model.opset(""); }

    /// The shapes of node n's outputs (fewer than it has: the rest unknown).
    [[nodiscard]] std::vector<value_shape> infer(node_id n) const;

    // value_shapes.cpp
    [[nodiscard]] value_shape elementwise(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape shape_of(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape transpose(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape squeeze(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape reshape(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape flatten(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape concat(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape gather(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape slice(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape expand(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape matmul(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape reduce(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape constant_of_shape(node_id n) const;

    // shape_rules.cpp
    [[nodiscard]] value_shape conv(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape conv_transpose(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape pool(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape global_pool(const value_shape& x) const;
    [[nodiscard]] value_shape resize(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape gemm(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape arg_reduce(node_id n, const value_shape& x) const;
    [[nodiscard]] std::vector<value_shape> split(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape pad(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape tile(node_id n, const value_shape& x) const;
    [[nodiscard]] value_shape range(node_id n, const value_shape& x) const;
    [[nodiscard]] std::vector<value_shape> top_k(node_id n, const value_shape& x) const;
    [[nodiscard]] std::vector<value_shape> recurrent(node_id n, const value_shape& x) const;
    [[nodiscard]] std::vector<value_shape> if_branches(node_id n) const;
    [[nodiscard]] value_shape space_depth(node_id n, const value_shape& x) const;

    void run_scope(scope_id s);
};

}  // namespace onnxstream::graph::detail
