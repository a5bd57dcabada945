// Which values are constants, and what they hold. A value is constant when it is an
// initializer that no graph input overrides, or the output of a Constant node (`value`,
// `value_float(s)`, `value_int(s)`). Conditions are also followed through Identity,
// Cast, Not and Equal of constants, so `If(Equal(Constant 1, Constant 2))` is known.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace onnxstream::graph {

struct constant {
    std::int32_t data_type = 0;
    std::vector<std::int64_t> dims;
    std::uint64_t element_count = 1;
    tensor_id tensor = none;                           // an initializer
    site_id site = none;                               // the tensor's bytes (an initializer's, or a Constant's `value`)
    node_id node = none;                               // the Constant node, when it comes from one
    std::optional<std::vector<double>> inline_values;  // value_float(s) / value_int(s)
};

/// What value `v` holds if it is a constant.
[[nodiscard]] std::optional<constant> find_constant(const graph_model& model, const graph_index& index, value_id v);

/// The elements of a constant as doubles. Errors: what reading the tensor reports, and
/// `unsupported` for types that do not decode or more than `max_elements` elements.
[[nodiscard]] result<std::vector<double>> constant_elements(const graph_model& model, const tensor_reader& reader,
                                                            const constant& c, std::uint64_t max_elements = 1ULL << 26);

/// The truth of a one-element value: a constant, or Identity / Cast / Not / Equal of
/// constants (to a small depth). Empty when it is not known.
[[nodiscard]] std::optional<bool> constant_condition(const graph_model& model, const graph_index& index,
                                                     const tensor_reader& reader, value_id v);

/// The one element of a one-element constant (or expression as above), as a double.
[[nodiscard]] std::optional<double> constant_scalar(const graph_model& model, const graph_index& index,
                                                    const tensor_reader& reader, value_id v);

}  // namespace onnxstream::graph
