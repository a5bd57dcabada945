// Static types and shapes of a graph's values, as far as they follow with certainty from
// the main graph's declared inputs, initializers, Constant nodes and the common operators
// (elementwise with broadcasting, Cast, Shape, Size, Concat, Gather, Slice, Reshape,
// Squeeze, Unsqueeze, Transpose, Flatten, Expand, ConstantOfShape, Identity). A symbolic
// or unknown dim is -1 and stays so; an op not known leaves its outputs unknown. Nothing
// is guessed: value_info entries are not trusted.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace onnxstream::graph {

struct value_shape {
    std::int32_t data_type = 0;                     // 0: unknown
    std::optional<std::vector<std::int64_t>> dims;  // empty: rank unknown; -1: a dim not known

    [[nodiscard]] bool fully_known() const;
};

/// Initializers and Constants of more dims than this get an unknown rank: their shape is
/// not copied (8 bytes a dim, for every such value, for as long as the shapes live).
inline constexpr std::uint64_t max_known_rank = 4096;

/// One entry per value of `index`. An initializer nothing reads (no use, not a graph
/// output) is left unknown: no pass asks its shape, and a model may have millions.
[[nodiscard]] indexed_vector<value_id, value_shape> infer_shapes(const graph_model& model, const graph_index& index,
                                                                 const tensor_reader& reader);

/// The INT32/INT64 elements of constant value `v` (at most `max_elements`), or empty.
[[nodiscard]] std::optional<std::vector<std::int64_t>> constant_integers(const graph_model& model, const graph_index& index,
                                                                         const tensor_reader& reader, value_id v,
                                                                         std::uint64_t max_elements = 64);

}  // namespace onnxstream::graph
