// edit: model surgery that never reads a weight. Fixes input dims (--input-shape,
// --batch), renames tensors everywhere they are named, adds and removes graph outputs,
// strips doc strings and sets metadata and the producer, as tree edits over the model's
// bytes: every field not edited is copied as it is, the weights included (embedded ones
// are copied, external ones stay in their files, which the output points at).
//
// Dims follow onnx.tools.update_model_dims and onnxruntime's make_dynamic_shape_fixed: a
// symbolic dim fixed on an input (N -> 1) is fixed wherever that symbol appears (inputs,
// outputs, value_info, subgraphs), since ONNX gives one symbol one value across a model;
// a declared static dim cannot change. --batch sets dim 0 of every graph input whose dim 0
// is symbolic or unknown; outputs follow through the symbols they share with the inputs
// (an output's unknown dim 0 is not always the batch: Silero's stateN is [2, batch, 128]).
// Graph outputs whose dims are still unknown take those shape inference
// (graph::infer_shapes) knows.
//
// Names given (--input-shape, --add-output, --remove-output, --rename's OLD) are the
// input model's names, before any rename.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/ops/written_data_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxstream::ops {

/// One dimension as given: a value, or a symbolic name.
struct dim_spec {
    std::optional<std::int64_t> value;  // set: a fixed dim
    std::string symbol;                 // otherwise: a dim_param
    bool operator==(const dim_spec&) const = default;
};

struct input_shape_spec {
    std::string name;
    std::vector<dim_spec> dims;
};

/// `NAME=DIMS` (`input=1,3,224,224`, `input=N,3,H,W`). Errors: `invalid_argument` naming
/// what is wrong (no `=`, an empty name or dim, a negative or non-numeric value that is no
/// symbol). `option` is how the caller's front end spells the option, for the message.
[[nodiscard]] result<input_shape_spec> parse_input_shape_spec(std::string_view text, std::string_view option);

struct edit_options : rewrite_options {
    std::vector<input_shape_spec> input_shapes;
    std::optional<std::int64_t> batch;
    std::vector<std::pair<std::string, std::string>> renames;  // OLD, NEW
    std::vector<std::string> add_outputs;
    std::vector<std::string> remove_outputs;
    bool strip_doc = false;
    std::vector<std::pair<std::string, std::string>> metadata;  // KEY, VALUE: set or replaced
    std::vector<std::string> remove_metadata;
    std::optional<std::string> producer_name;
    std::optional<std::string> producer_version;
};

/// One change made, for people and programs: `kind` is one of shape, value_info, rename,
/// add_output, remove_output, strip_doc, metadata, remove_metadata, producer,
/// data_location; `name` what it is about (a tensor, a key; may be empty), `detail` what changed.
struct edit_change {
    std::string kind;
    std::string name;
    std::string detail;
};

struct edit_report {
    std::filesystem::path input;
    std::filesystem::path output;
    std::uint64_t output_size = 0;
    std::vector<written_data_file> data_files;  // always empty: the data files are never rewritten
    std::vector<edit_change> changes;
    std::vector<error> warnings;
    const char* writer = "";
};

/// Errors: `invalid_argument` for every request that cannot apply (a name the model does
/// not have, a rename onto a name in use or two onto one, a dim that contradicts a static
/// one or another request, removing the last output, an output with no known type, no
/// edit at all), `unsafe_location` when the output's folder cannot reach the data files
/// by a relative path inside it; the session's (open, claim, plan, write). Nothing is
/// written on error.
[[nodiscard]] result<edit_report> edit(const std::filesystem::path& model, const edit_options& options);

/// The report as JSON and for people (names pass through terminal_safe).
[[nodiscard]] std::string edit_report_json(const edit_report& report);
[[nodiscard]] std::string edit_report_text(const edit_report& report);

}  // namespace onnxstream::ops
