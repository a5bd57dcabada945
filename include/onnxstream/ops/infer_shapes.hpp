// infer-shapes: the model with graph.value_info (GraphProto field 13) holding the type and
// shape of every intermediate value graph/value_shapes.hpp infers, in the main graph and
// in subgraphs. An existing value_info entry for a name written is replaced; the others
// stay. Graph inputs keep their declarations unless --input-shape gives them dims (their
// type is then rewritten); graph outputs keep theirs. Nothing else changes: weights are
// never read (only small integer and float constants a shape depends on), and the
// output points at the same external data files, by the same locations, or embeds the
// weights when the input did.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace onnxstream::ops {

struct infer_shapes_options : rewrite_options {
    std::vector<graph::input_shape_override> input_shapes;  // --input-shape, applied first
};

struct infer_shapes_report {
    std::filesystem::path input;
    std::filesystem::path output;
    std::uint64_t output_size = 0;
    std::uint64_t values = 0;                            // node outputs that are not graph outputs
    std::uint64_t inferred = 0;                          // type and every dim (a number or a symbol)
    std::uint64_t partial = 0;                           // type, rank or dims in part
    std::uint64_t unknown = 0;                           // not even the type
    std::map<std::string, std::uint64_t> unknown_by_op;  // partial and unknown values, by the op making them
    std::uint64_t value_info_written = 0;
    std::uint64_t value_info_replaced = 0;  // existing entries for the same names
    std::uint64_t inputs_fixed = 0;         // inputs given dims by --input-shape
    double seconds = 0;
    std::vector<error> warnings;
    const char* writer = "";
};

/// Errors: what opening and writing a model reports, `invalid_argument` for an
/// --input-shape that names no input or contradicts a declared static dim, and when the
/// output is in another folder than a model with external data (its locations are
/// relative to the model). Nothing is written on error.
[[nodiscard]] result<infer_shapes_report> infer_shapes(const std::filesystem::path& model, const infer_shapes_options& options);

/// The report as JSON and for people.
[[nodiscard]] std::string infer_shapes_report_json(const infer_shapes_report& report);
[[nodiscard]] std::string infer_shapes_report_text(const infer_shapes_report& report);

}  // namespace onnxstream::ops
