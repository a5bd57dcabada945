// What the command table (commands.cpp) and the files holding its commands' rows and run
// functions (commands_convert.cpp, commands_surgery.cpp) share: the parameter rows many
// commands use, the helpers every run function calls, and what each part gives the table.
// Private to src/api.
#pragma once

#include <onnxstream/api/commands.hpp>
#include <onnxstream/report/hint_text.hpp>

#include <array>
#include <filesystem>
#include <span>
#include <vector>

// The rows below name only the fields they set (designated initializers); the rest keep
// their defaults on purpose, which GCC 12's -Wextra reports field by field.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace onnxstream::api::detail {

// ---------------------------------------------------------------- parameters many commands share

inline constexpr parameter model_parameter{.name = "model",
                                           .kind = value_kind::model,
                                           .help = "the model (.onnx)",
                                           .label = "Model",
                                           .placeholder = "MODEL",
                                           .required = true,
                                           .positional = true};
inline constexpr parameter output_parameter{.name = "output",
                                            .kind = value_kind::path,
                                            .help = "the output model (default: <stem>.<suffix>.onnx beside the input)",
                                            .label = "Output file",
                                            .placeholder = "OUT",
                                            .short_name = "-o"};
inline constexpr parameter data_parameter{.name = "data",
                                          .kind = value_kind::path,
                                          .help = "an external data file (matched by name; a single one serves all)",
                                          .label = "External data file",
                                          .placeholder = "FILE",
                                          .repeatable = true};
inline constexpr parameter data_dir_parameter{.name = "data-dir",
                                              .kind = value_kind::path,
                                              .help = "a folder to look for external data files in",
                                              .label = "External data folder",
                                              .placeholder = "DIR",
                                              .repeatable = true};
inline constexpr parameter strict_parameter{.name = "strict",
                                            .kind = value_kind::flag,
                                            .help =
                                                "fail (instead of warning) when a SHA-1 checksum does not match, and never "
                                                "guess a data file the model does not name as it is",
                                            .label = "Strict"};
inline constexpr parameter size_mismatch_parameter{.name = "allow-size-mismatch",
                                                   .kind = value_kind::flag,
                                                   .help = "warn instead of failing when a tensor's bytes do not match its dims",
                                                   .label = "Allow size mismatches"};
inline constexpr parameter threads_parameter{.name = "threads",
                                             .kind = value_kind::count,
                                             .help = "worker threads (default: the number of cores)",
                                             .label = "Threads",
                                             .placeholder = "N",
                                             .short_name = "-j"};
inline constexpr parameter force_parameter{.name = "force",
                                           .kind = value_kind::flag,
                                           .help = "replace existing outputs (never the inputs)",
                                           .label = "Replace existing outputs",
                                           .short_name = "-f"};
// The writer: a test hook of the command line (the suites run every command with each).
inline constexpr std::array writer_choices{std::string_view("auto"), std::string_view("io_uring"), std::string_view("uring"),
                                           std::string_view("overlapped"), std::string_view("portable")};
inline constexpr parameter writer_parameter{.name = "writer",
                                            .kind = value_kind::choice,
                                            .default_value = "auto",
                                            .help = "the asynchronous writer (testing)",
                                            .label = "Writer",
                                            .placeholder = "W",
                                            .choices = writer_choices,
                                            .hidden = true,
                                            .surfaces = surface::cli};
inline constexpr parameter data_name_parameter{
    .name = "data-name",
    .kind = value_kind::text,
    .help = "the data file's name, beside the output (default: <output file name>.data)",
    .label = "Data file name",
    .placeholder = "NAME"};
inline constexpr parameter threshold_parameter{.name = "threshold",
                                               .kind = value_kind::size,
                                               .default_value = "1024",
                                               .help = "smallest tensor to move out; sizes take K, M, G",
                                               .label = "Smallest tensor moved out",
                                               .placeholder = "BYTES"};
inline constexpr parameter align_parameter{.name = "align",
                                           .kind = value_kind::size,
                                           .default_value = "4096",
                                           .help = "offset alignment of large tensors: 0 is dense, 65536 suits Windows mapping",
                                           .label = "Alignment",
                                           .placeholder = "BYTES"};
inline constexpr parameter align_threshold_parameter{.name = "align-threshold",
                                                     .kind = value_kind::size,
                                                     .default_value = "1M",
                                                     .help = "smallest tensor to align; smaller ones stay dense",
                                                     .label = "Smallest tensor aligned",
                                                     .placeholder = "BYTES"};
inline constexpr parameter shard_size_parameter{.name = "shard-size",
                                                .kind = value_kind::size,
                                                .help =
                                                    "several data files <name>-00001-of-0000N.data of at most BYTES; a tensor "
                                                    "larger than BYTES gets a shard of its own",
                                                .label = "Shard size",
                                                .placeholder = "BYTES"};

/// A shared row with the command's own help (the same parameter, said for this command).
constexpr parameter described(parameter row, std::string_view help) {
    row.help = help;
    return row;
}

// ---------------------------------------------------------------- what every run function does

template <class Report>
std::vector<std::filesystem::path> written(const Report& r) {
    std::vector<std::filesystem::path> files{r.output};
    for (const auto& f : r.data_files) files.push_back(f.path);
    return files;
}

inline const report::hint_wording& wording_of(const run_context& context) {
    return context.wording != nullptr ? *context.wording : api_wording();
}

template <class Options>
void hook(Options& options, const run_context& context) {
    options.cancel = context.cancel;
    options.on_progress = context.on_progress;
}

template <class Options>
void hook_writer(Options& options, const run_context& context) {
    hook(options, context);
    if (context.writer != io::writer_backend::automatic) options.backend = context.writer;
}

// ---------------------------------------------------------------- what the parts give the table

// commands_convert.cpp: the commands that write a model in another form.
extern const std::span<const parameter> convert_parameters;
[[nodiscard]] result<command_outcome> run_convert(const parameter_reader& in, const run_context& context);
extern const std::span<const parameter> quantize_parameters;
[[nodiscard]] result<command_outcome> run_quantize(const parameter_reader& in, const run_context& context);
extern const std::span<const parameter> caffe_parameters;
[[nodiscard]] result<std::filesystem::path> caffe_claim(const parameter_reader& in);
[[nodiscard]] result<command_outcome> run_export_caffe(const parameter_reader& in, const run_context& context);
extern const std::span<const parameter> safetensors_parameters;
[[nodiscard]] result<std::filesystem::path> safetensors_claim(const parameter_reader& in);
[[nodiscard]] result<command_outcome> run_export_safetensors(const parameter_reader& in, const run_context& context);

// commands_surgery.cpp: the commands that cut or change a graph, weights unread.
extern const std::span<const parameter> edit_parameters;
[[nodiscard]] result<std::filesystem::path> edit_output(const parameter_reader& in);
[[nodiscard]] result<command_outcome> run_edit(const parameter_reader& in, const run_context& context);
extern const std::span<const parameter> extract_parameters;
[[nodiscard]] result<command_outcome> run_extract(const parameter_reader& in, const run_context& context);
extern const std::span<const parameter> infer_shapes_parameters;
[[nodiscard]] result<command_outcome> run_infer_shapes(const parameter_reader& in, const run_context& context);

}  // namespace onnxstream::api::detail

#pragma GCC diagnostic pop
