// The commands as one table: each names its parameters (parameters.hpp) and how to run it
// over the library. Every front end runs a command through this table: the page's jobs,
// the C API (onnxstream.h) and with it the Python package; the command line takes its
// options, its --help and each command's options from it.
#pragma once

#include <onnxstream/api/parameters.hpp>
#include <onnxstream/error.hpp>
#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/ops/analyze.hpp>
#include <onnxstream/ops/convert.hpp>
#include <onnxstream/ops/diff.hpp>
#include <onnxstream/ops/edit.hpp>
#include <onnxstream/ops/export_caffe.hpp>
#include <onnxstream/ops/export_safetensors.hpp>
#include <onnxstream/ops/externalize.hpp>
#include <onnxstream/ops/extract.hpp>
#include <onnxstream/ops/infer_shapes.hpp>
#include <onnxstream/ops/optimize.hpp>
#include <onnxstream/ops/progress_event.hpp>
#include <onnxstream/ops/quantize.hpp>
#include <onnxstream/ops/verify.hpp>
#include <onnxstream/report/hint_text.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::api {

/// What a run needs besides its parameters.
struct run_context {
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const ops::progress_event&)> on_progress;
    /// Overrides the writer the values pick (the page's server picks it for its jobs).
    io::writer_backend writer = io::writer_backend::automatic;
    /// How the report's hints name remedies (the command line's flags, the page's fields,
    /// Python's keywords); null: api_wording().
    const report::hint_wording* wording = nullptr;
};

struct command_outcome {
    std::string report_json;                     // the report as JSON (report/json.hpp)
    std::string report_text;                     // the report for people (report/text.hpp)
    std::vector<std::filesystem::path> outputs;  // the files written
    std::vector<error> warnings;                 // also in report_json
    bool passed = true;                          // verify: clean; diff: equivalent; export --check: within tolerance
};

struct command_spec {
    std::string_view name;         // "merge", "export-caffe"
    std::string_view title;        // "Merge": the page's button
    std::string_view summary;      // one line: the command list, the page
    std::string_view description;  // a paragraph for --help and docstrings
    std::span<const parameter> parameters;
    std::uint8_t surfaces = everywhere;  // page: offered as a page action
    /// Default output <stem>.<suffix>.onnx; empty: the command computes its outputs
    /// (claimed_output) or writes nothing.
    std::string_view output_suffix;
    result<command_outcome> (*run)(const parameter_reader& values, const run_context& context) = nullptr;
    /// The file a run will write first (the page claims it so two jobs never write one
    /// output); null: <stem>.<output_suffix>.onnx, or nothing when output_suffix is empty.
    result<std::filesystem::path> (*claimed_output)(const parameter_reader& values) = nullptr;
    /// A read-only command whose result depends only on the model and the parameters (the
    /// page keeps its result per file identity).
    bool cached_result = false;

    [[nodiscard]] bool writes() const noexcept { return !output_suffix.empty() || claimed_output != nullptr; }
    [[nodiscard]] const parameter* find(std::string_view parameter_name) const noexcept;
};

[[nodiscard]] std::span<const command_spec> commands();
[[nodiscard]] const command_spec* find_command(std::string_view name);

/// Checks the values (parameter_reader::check) and runs the command.
[[nodiscard]] result<command_outcome> run_command(const command_spec& command, const parameter_values& values, front_end who,
                                                  const run_context& context, path_locator locate = {});

/// The file `command` will write first with these values (empty: it writes nothing).
[[nodiscard]] result<std::filesystem::path> planned_output(const command_spec& command, const parameter_reader& values);

/// A parameter's help with the command's own words in it: "<stem>.<suffix>.onnx" becomes
/// "<stem>.split.onnx" for split.
[[nodiscard]] std::string parameter_help(const command_spec& command, const parameter& p);

/// Remedies worded as keyword arguments ("pass force=True", "output=..."): the C API's
/// and Python's.
[[nodiscard]] const report::hint_wording& api_wording() noexcept;

/// The table as JSON, for the page and for generating Python's signatures:
/// [{"name","title","summary","description","writes","surfaces":[...],"parameters":[{"name",
/// "kind","default","help","label","placeholder","choices","repeatable","required","positional",
/// "surfaces"}]}].
[[nodiscard]] std::string commands_json();

// How each command turns its values into the operation's options; the command line uses
// these too, then prints the report its own way.
[[nodiscard]] result<onnx::open_options> open_options_from(const parameter_reader& values);
[[nodiscard]] result<void> fill_rewrite_options(const parameter_reader& values, ops::rewrite_options& options);
[[nodiscard]] result<ops::externalize_options> externalize_options_from(const parameter_reader& values,
                                                                        ops::externalize_kind kind);
[[nodiscard]] result<ops::optimize_options> optimize_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::verify_options> verify_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::analyze_options> analyze_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::diff_options> diff_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::convert_options> convert_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::quantize_options> quantize_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::edit_options> edit_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::extract_options> extract_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::infer_shapes_options> infer_shapes_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::export_caffe_options> export_caffe_options_from(const parameter_reader& values);
[[nodiscard]] result<ops::safetensors_options> safetensors_options_from(const parameter_reader& values);

/// "fp16" or "bf16", as the report names the type.
[[nodiscard]] std::string_view dtype_name(ops::half_type type) noexcept;

}  // namespace onnxstream::api
