// Static types and shapes of a graph's values, as far as they follow with certainty from
// the main graph's declared inputs (or shapes given for them), initializers, Constant
// nodes and the operators real models use (elementwise with broadcasting, the unary and
// normalization families, Conv, ConvTranspose, pools, Resize/Upsample, MatMul, Gemm,
// reductions, Split, Pad, Tile, Range, TopK, ArgMax, RNN/GRU/LSTM, If, Shape chains...),
// following onnx.shape_inference's rules. A dim is known (>= 0), a symbol (a dim_param
// name, carried as the ONNX rules carry it) or unknown (-1: where ONNX would make a fresh
// `unk__` symbol, nothing is made up); an op not known leaves its outputs unknown.
// Nothing is guessed: value_info entries are not trusted.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/proto/encoded_message.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onnxstream::graph {

/// A dim of value_shape::dims: >= 0 known; unknown_dim; or a symbol (symbol_dim(k)) that
/// names the table's k-th dim_param (shape_table::symbol_name). Any negative dim is "not
/// a number", which is all most callers need.
inline constexpr std::int64_t unknown_dim = -1;
[[nodiscard]] constexpr std::int64_t symbol_dim(std::uint32_t k) noexcept { return -2 - static_cast<std::int64_t>(k); }
[[nodiscard]] constexpr bool is_symbol(std::int64_t dim) noexcept { return dim <= -2; }

struct value_shape {
    std::int32_t data_type = 0;                     // 0: unknown
    std::optional<std::vector<std::int64_t>> dims;  // empty: rank unknown; else known, symbol or unknown dims

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
    /// Gives value `v` the shape of value `from` (unknown when `from` is none): set(v,
    /// (*this)[from]) without copying the shape or looking it up.
    void set_same(value_id v, value_id from);
    /// How many distinct shapes the table holds.
    [[nodiscard]] std::size_t distinct() const noexcept { return distinct_.size(); }
    /// The dim that stands for dim_param `name` (added on first use); "" is unknown_dim.
    [[nodiscard]] std::int64_t symbol(std::string_view name);
    /// The dim_param of symbol dim `dim` ("" for any other dim).
    [[nodiscard]] std::string_view symbol_name(std::int64_t dim) const noexcept;

private:
    struct shape_hash {
        std::size_t operator()(const value_shape& s) const noexcept;
    };
    static constexpr std::uint32_t unknown_slot = ~std::uint32_t{0};
    std::vector<std::uint32_t> slots_;                                   // by value: into distinct_, or unknown_slot
    std::unordered_map<value_shape, std::uint32_t, shape_hash> lookup_;  // each shape once, with its slot
    std::vector<const value_shape*> distinct_;                           // by slot: a key of lookup_ (they do not move)
    std::vector<std::string> symbols_;                                   // by symbol number: its dim_param
    std::unordered_map<std::string, std::uint32_t> symbol_numbers_;
};

/// Initializers and Constants of more dims than this get an unknown rank: their shape is
/// not copied (8 bytes a dim, for every such value, for as long as the shapes live).
inline constexpr std::uint64_t max_known_rank = 4096;

/// One entry per value of `index`. An initializer nothing reads (no use, not a graph
/// output) is left unknown: no pass asks its shape, and a model may have millions.
[[nodiscard]] shape_table infer_shapes(const graph_model& model, const graph_index& index, const tensor_reader& reader);

/// A dim given for a graph input: a number, or a symbol (`param`), or unknown (neither).
struct given_dim {
    std::int64_t value = unknown_dim;
    std::string param;
};
/// The dims to use for main-graph input `name` in place of its declared ones.
struct input_shape_override {
    std::string name;
    std::vector<given_dim> dims;
};
/// Parses `NAME=DIMS` (`input=1,3,224,224`, `input=N,3,H,W`; `?` an unknown dim).
/// Errors: invalid_argument for a missing name or `=`, an empty or negative dim.
[[nodiscard]] result<input_shape_override> parse_input_shape(std::string_view text);

/// infer_shapes with the main graph's inputs named in `overrides` taking the dims given
/// (the entry point for infer-shapes and edit). Errors (invalid_argument): a name that is
/// no main-graph input (initializers with that name included), a rank other than the
/// declared one, or a dim other than a declared static dim (a number or a symbol where
/// the model declares a number); not_onnx for a node that reads a value only a later node
/// makes (a cycle, or nodes out of topological order).
[[nodiscard]] result<shape_table> infer_shapes(const graph_model& model, const graph_index& index, const tensor_reader& reader,
                                               std::span<const input_shape_override> overrides);

/// `shape` as a TypeProto (tensor_type{elem_type, shape{dim...}}): a symbol becomes its
/// dim_param (named by `table`), an unknown dim a Dimension with neither field (as onnx
/// writes one), an unknown rank no shape field. What infer-shapes writes into value_info
/// and into an input given new dims.
[[nodiscard]] proto::encoded_message encode_type(const value_shape& shape, const shape_table& table);

/// The INT32/INT64 elements of constant value `v` (at most `max_elements`), or empty.
[[nodiscard]] std::optional<std::vector<std::int64_t>> constant_integers(const graph_model& model, const graph_index& index,
                                                                         const tensor_reader& reader, value_id v,
                                                                         std::uint64_t max_elements = 64);

}  // namespace onnxstream::graph
