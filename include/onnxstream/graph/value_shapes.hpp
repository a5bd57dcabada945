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
#include <unordered_map>
#include <vector>

namespace onnxstream::graph {

struct value_shape {
    std::int32_t data_type = 0;                     // 0: unknown
    std::optional<std::vector<std::int64_t>> dims;  // empty: rank unknown; -1: a dim not known

    [[nodiscard]] bool fully_known() const;
    bool operator==(const value_shape&) const = default;
};

/// The shapes of a graph_index's values: 4 bytes per value, and each distinct shape once (a
/// model of a million values mostly has a few hundred shapes, and a million unused
/// initializers have none to keep).
class shape_table {
public:
    shape_table() = default;
    explicit shape_table(std::size_t values) : slots_(values, unknown_slot) {}
    // Move-only: distinct_ points into lookup_'s nodes, which a move keeps and a copy does not.
    shape_table(const shape_table&) = delete;
    shape_table& operator=(const shape_table&) = delete;
    shape_table(shape_table&&) noexcept = default;
    shape_table& operator=(shape_table&&) noexcept = default;
    ~shape_table() = default;

    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
    [[nodiscard]] bool contains(value_id v) const noexcept { return v != none && v.value < slots_.size(); }
    /// What is known of value `v` (an unknown shape when nothing is); valid as long as the table.
    [[nodiscard]] const value_shape& operator[](value_id v) const {
        static const value_shape unknown;
        const auto slot = slots_[v.value];
        return slot == unknown_slot ? unknown : *distinct_[slot];
    }
    /// Sets the shape of value `v`.
    void set(value_id v, value_shape shape);
    /// How many distinct shapes the table holds.
    [[nodiscard]] std::size_t distinct() const noexcept { return distinct_.size(); }

private:
    struct shape_hash {
        std::size_t operator()(const value_shape& s) const noexcept;
    };
    static constexpr std::uint32_t unknown_slot = ~std::uint32_t{0};
    std::vector<std::uint32_t> slots_;                                   // by value: into distinct_, or unknown_slot
    std::unordered_map<value_shape, std::uint32_t, shape_hash> lookup_;  // each shape once, with its slot
    std::vector<const value_shape*> distinct_;                           // by slot: a key of lookup_ (they do not move)
};

/// Initializers and Constants of more dims than this get an unknown rank: their shape is
/// not copied (8 bytes a dim, for every such value, for as long as the shapes live).
inline constexpr std::uint64_t max_known_rank = 4096;

/// One entry per value of `index`. An initializer nothing reads (no use, not a graph
/// output) is left unknown: no pass asks its shape, and a model may have millions.
[[nodiscard]] shape_table infer_shapes(const graph_model& model, const graph_index& index, const tensor_reader& reader);

/// The INT32/INT64 elements of constant value `v` (at most `max_elements`), or empty.
[[nodiscard]] std::optional<std::vector<std::int64_t>> constant_integers(const graph_model& model, const graph_index& index,
                                                                         const tensor_reader& reader, value_id v,
                                                                         std::uint64_t max_elements = 64);

}  // namespace onnxstream::graph
