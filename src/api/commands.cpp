#include <onnxstream/api/commands.hpp>

#include <onnxstream/ops/extract.hpp>
#include <onnxstream/ops/infer_shapes.hpp>
#include <onnxstream/ops/inspect.hpp>
#include <onnxstream/ops/merge.hpp>
#include <onnxstream/ops/quantize.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/json_writer.hpp>
#include <onnxstream/report/text.hpp>
#include "command_options.hpp"

#include <array>
#include <charconv>

// The rows below name only the fields they set (designated initializers); the rest keep
// their defaults on purpose, which GCC 12's -Wextra reports field by field.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace onnxstream::api {

namespace fs = std::filesystem;
using detail::caffe_prefix;
using detail::convert_output;
using detail::output_or;
using detail::quantize_output;

namespace {

// ---------------------------------------------------------------- parameters many commands share

constexpr parameter model_parameter{.name = "model",
                                    .kind = value_kind::model,
                                    .help = "the model (.onnx)",
                                    .label = "Model",
                                    .placeholder = "MODEL",
                                    .required = true,
                                    .positional = true};
constexpr parameter output_parameter{.name = "output",
                                     .kind = value_kind::path,
                                     .help = "the output model (default: <stem>.<suffix>.onnx beside the input)",
                                     .label = "Output file",
                                     .placeholder = "OUT",
                                     .short_name = "-o"};
constexpr parameter data_parameter{.name = "data",
                                   .kind = value_kind::path,
                                   .help = "an external data file (matched by name; a single one serves all)",
                                   .label = "External data file",
                                   .placeholder = "FILE",
                                   .repeatable = true};
constexpr parameter data_dir_parameter{.name = "data-dir",
                                       .kind = value_kind::path,
                                       .help = "a folder to look for external data files in",
                                       .label = "External data folder",
                                       .placeholder = "DIR",
                                       .repeatable = true};
constexpr parameter strict_parameter{.name = "strict",
                                     .kind = value_kind::flag,
                                     .help =
                                         "fail (instead of warning) when a SHA-1 checksum does not match, and never "
                                         "guess a data file the model does not name as it is",
                                     .label = "Strict"};
constexpr parameter size_mismatch_parameter{.name = "allow-size-mismatch",
                                            .kind = value_kind::flag,
                                            .help = "warn instead of failing when a tensor's bytes do not match its dims",
                                            .label = "Allow size mismatches"};
constexpr parameter threads_parameter{.name = "threads",
                                      .kind = value_kind::count,
                                      .help = "worker threads (default: the number of cores)",
                                      .label = "Threads",
                                      .placeholder = "N",
                                      .short_name = "-j"};
constexpr parameter force_parameter{.name = "force",
                                    .kind = value_kind::flag,
                                    .help = "replace existing outputs (never the inputs)",
                                    .label = "Replace existing outputs",
                                    .short_name = "-f"};
// The writer: a test hook of the command line (the suites run every command with each).
constexpr std::array writer_choices{std::string_view("auto"), std::string_view("io_uring"), std::string_view("uring"),
                                    std::string_view("overlapped"), std::string_view("portable")};
constexpr parameter writer_parameter{.name = "writer",
                                     .kind = value_kind::choice,
                                     .default_value = "auto",
                                     .help = "the asynchronous writer (testing)",
                                     .label = "Writer",
                                     .placeholder = "W",
                                     .choices = writer_choices,
                                     .hidden = true,
                                     .surfaces = surface::cli};
constexpr parameter data_name_parameter{.name = "data-name",
                                        .kind = value_kind::text,
                                        .help = "the data file's name, beside the output (default: <output file name>.data)",
                                        .label = "Data file name",
                                        .placeholder = "NAME"};
constexpr parameter threshold_parameter{.name = "threshold",
                                        .kind = value_kind::size,
                                        .default_value = "1024",
                                        .help = "smallest tensor to move out; sizes take K, M, G",
                                        .label = "Smallest tensor moved out",
                                        .placeholder = "BYTES"};
constexpr parameter align_parameter{.name = "align",
                                    .kind = value_kind::size,
                                    .default_value = "4096",
                                    .help = "offset alignment of large tensors: 0 is dense, 65536 suits Windows mapping",
                                    .label = "Alignment",
                                    .placeholder = "BYTES"};
constexpr parameter align_threshold_parameter{.name = "align-threshold",
                                              .kind = value_kind::size,
                                              .default_value = "1M",
                                              .help = "smallest tensor to align; smaller ones stay dense",
                                              .label = "Smallest tensor aligned",
                                              .placeholder = "BYTES"};
constexpr parameter shard_size_parameter{.name = "shard-size",
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

// ---------------------------------------------------------------- reading values into options

template <class Report>
std::vector<fs::path> written(const Report& r) {
    std::vector<fs::path> files{r.output};
    for (const auto& f : r.data_files) files.push_back(f.path);
    return files;
}

const report::hint_wording& wording_of(const run_context& context) {
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

// ---------------------------------------------------------------- inspect

constexpr std::array inspect_parameters{model_parameter, data_parameter, data_dir_parameter, strict_parameter,
                                        size_mismatch_parameter};

result<command_outcome> run_inspect(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(const auto options, open_options_from(in));
    ONNXSTREAM_ASSIGN(const auto r, ops::inspect(model, options));
    const auto& wording = wording_of(context);
    return command_outcome{report::to_json(r, wording), report::to_text(r, wording), {}, r.warnings, true};
}

// ---------------------------------------------------------------- merge

constexpr std::array merge_parameters{
    parameter{.name = "model",
              .kind = value_kind::model,
              .help = "the models (each gets <stem>.merged.onnx)",
              .label = "Model",
              .placeholder = "MODEL",
              .repeatable = true,
              .required = true,
              .positional = true},
    described(output_parameter, "the output file (only with one MODEL; default: <stem>.merged.onnx beside the input)"),
    data_parameter,
    data_dir_parameter,
    described(threads_parameter,
              "worker threads; with several MODELs, up to N are merged at once (default: the number of cores)"),
    size_mismatch_parameter,
    strict_parameter,
    force_parameter,
    writer_parameter};

result<command_outcome> run_merge(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto models, in.paths("model"));
    if (models.size() != 1) return failure(error_code::invalid_argument, "merge through the library takes one model at a time");
    ops::rewrite_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    ONNXSTREAM_ASSIGN(options.output, output_or(in, ops::default_output(models[0], "merged")));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::merge(models[0], options));
    const auto& wording = wording_of(context);
    return command_outcome{report::merge_json(models[0].string(), r, wording),
                           report::merged_text(models[0].string(), r, wording),
                           {r.output},
                           r.warnings,
                           true};
}

// ---------------------------------------------------------------- split and repack

constexpr std::array split_parameters{model_parameter,  output_parameter,          data_name_parameter, threshold_parameter,
                                      align_parameter,  align_threshold_parameter, data_parameter,      data_dir_parameter,
                                      strict_parameter, size_mismatch_parameter,   threads_parameter,   force_parameter,
                                      writer_parameter};

constexpr std::array repack_parameters{
    model_parameter,
    output_parameter,
    data_name_parameter,
    threshold_parameter,
    align_parameter,
    align_threshold_parameter,
    shard_size_parameter,
    parameter{.name = "dedupe",
              .kind = value_kind::flag,
              .help = "store identical tensors (same type and bytes) once",
              .label = "Store identical tensors once"},
    parameter{.name = "write-checksums",
              .kind = value_kind::flag,
              .help = "write each tensor's SHA-1 into its 'checksum' key",
              .label = "Write checksums"},
    data_parameter,
    data_dir_parameter,
    strict_parameter,
    size_mismatch_parameter,
    threads_parameter,
    described(force_parameter,
              "replace existing outputs, even the model's own files (repack in place: the old files are "
              "replaced only once the new ones are on disk)"),
    writer_parameter};

result<command_outcome> run_externalize(const parameter_reader& in, const run_context& context, ops::externalize_kind kind) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, externalize_options_from(in, kind));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::externalize(model, options));
    return command_outcome{report::to_json(r), report::to_text(r), written(r), r.warnings, true};
}

result<command_outcome> run_split(const parameter_reader& in, const run_context& context) {
    return run_externalize(in, context, ops::externalize_kind::split);
}
result<command_outcome> run_repack(const parameter_reader& in, const run_context& context) {
    return run_externalize(in, context, ops::externalize_kind::repack);
}

// ---------------------------------------------------------------- optimize and analyze

constexpr std::array optimize_parameters{
    model_parameter,
    output_parameter,
    parameter{.name = "passes",
              .kind = value_kind::text,
              .help = "comma-separated passes, in order (default: all of them)",
              .label = "Passes",
              .placeholder = "LIST"},
    parameter{.name = "fold-limit",
              .kind = value_kind::size,
              .default_value = "1M",
              .help = "the largest tensor folding may create or read",
              .label = "Largest folded tensor",
              .placeholder = "BYTES"},
    parameter{
        .name = "dry-run", .kind = value_kind::flag, .help = "run the passes and report, write nothing", .label = "Dry run"},
    parameter{.name = "reuse-data",
              .kind = value_kind::flag,
              .help = "point at the input's data files instead of copying them (they must be inside the output's folder)",
              .label = "Reuse the data files"},
    data_parameter,
    data_dir_parameter,
    strict_parameter,
    size_mismatch_parameter,
    threads_parameter,
    force_parameter,
    writer_parameter};

result<command_outcome> run_optimize(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, optimize_options_from(in));
    options.keep_findings = true;
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::optimize(model, options));
    return command_outcome{report::to_json(r), report::to_text(r), r.dry_run ? std::vector<fs::path>{} : written(r), r.warnings,
                           true};
}

constexpr std::array analyze_parameters{model_parameter, data_parameter, data_dir_parameter, strict_parameter,
                                        size_mismatch_parameter};

result<command_outcome> run_analyze(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, analyze_options_from(in));
    hook(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::analyze(model, options));
    return command_outcome{report::to_json(r), report::to_text(r), {}, r.warnings, true};
}

// ---------------------------------------------------------------- verify and diff

constexpr std::array verify_parameters{model_parameter,  data_parameter,          data_dir_parameter,
                                       strict_parameter, size_mismatch_parameter, threads_parameter};

result<command_outcome> run_verify(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, verify_options_from(in));
    hook(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::verify(model, options));
    const auto& wording = wording_of(context);
    return command_outcome{report::to_json(r, wording), report::to_text(r, wording), {}, {}, r.clean()};
}

constexpr std::array diff_parameters{parameter{.name = "model",
                                               .kind = value_kind::model,
                                               .help = "the first model",
                                               .label = "Model",
                                               .placeholder = "A",
                                               .required = true,
                                               .positional = true},
                                     parameter{.name = "other",
                                               .kind = value_kind::model,
                                               .help = "the model to compare with",
                                               .label = "Compare with",
                                               .placeholder = "B",
                                               .required = true,
                                               .positional = true},
                                     described(data_parameter, "an external data file of either model (matched by name)"),
                                     described(data_dir_parameter, "a folder to look for either model's external data files in"),
                                     strict_parameter,
                                     size_mismatch_parameter,
                                     threads_parameter};

result<command_outcome> run_diff(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(const auto other, in.path("other"));
    ONNXSTREAM_ASSIGN(auto options, diff_options_from(in));
    hook(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::diff(model, other, options));
    return command_outcome{report::to_json(r), report::to_text(r), {}, r.warnings, r.equivalent};
}

// ---------------------------------------------------------------- convert

constexpr std::array dtype_choices{std::string_view("fp16"), std::string_view("bf16")};

constexpr std::array convert_parameters{
    model_parameter,
    parameter{.name = "dtype",
              .kind = value_kind::choice,
              .help = "the new precision: fp16 (IEEE half) or bf16 (bfloat16)",
              .label = "Precision",
              .placeholder = "fp16|bf16",
              .choices = dtype_choices,
              .required = true},
    described(output_parameter, "the output model (default: <stem>.fp16.onnx or <stem>.bf16.onnx beside the input)"),
    parameter{.name = "keep-io-types",
              .kind = value_kind::flag,
              .help = "keep the graph's inputs and outputs float32 (Casts at the boundary)",
              .label = "Keep float32 inputs and outputs"},
    parameter{.name = "block-ops",
              .kind = value_kind::text,
              .help = "comma-separated operators kept in float32, replacing the default list (Resize, Upsample, TopK, "
                      "NonMaxSuppression, Range, CumSum, Min, Max, RoiAlign and the ai.onnx.ml operators)",
              .label = "Operators kept in float32",
              .placeholder = "LIST"},
    parameter{.name = "allow-saturation",
              .kind = value_kind::flag,
              .help = "fp16: convert tensors with values beyond +-65504 too (they saturate to +-65504, counted) instead "
                      "of keeping them float32",
              .label = "Allow saturation"},
    parameter{.name = "data-name",
              .kind = value_kind::text,
              .help = "the data file's name, for external layouts (beside the output)",
              .label = "Data file name",
              .placeholder = "NAME"},
    // No default value: without it, tensors of at least 1 MiB are aligned at 4096 and the
    // rest stay dense; a value given aligns every tensor at it.
    parameter{.name = "align",
              .kind = value_kind::size,
              .help = "offset alignment of every tensor (default: 4096 for tensors of at least 1 MiB, dense below; 0 = "
                      "dense)",
              .label = "Alignment",
              .placeholder = "BYTES"},
    shard_size_parameter, data_parameter, data_dir_parameter, strict_parameter, size_mismatch_parameter, threads_parameter,
    force_parameter, writer_parameter};

result<command_outcome> run_convert(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, convert_options_from(in));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::convert(model, options));
    const bool half = options.target == ops::half_type::float16;
    return command_outcome{report::to_json(r, half ? "fp16" : "bf16"), report::to_text(r, half ? "float16" : "bfloat16"),
                           written(r), r.warnings, true};
}

// ---------------------------------------------------------------- quantize

constexpr std::array weights_choices{std::string_view("int8"), std::string_view("int4"), std::string_view("uint4")};
constexpr std::array quantize_format_choices{std::string_view("qdq"), std::string_view("matmulnbits")};

constexpr std::array quantize_parameters{
    model_parameter,
    parameter{.name = "weights",
              .kind = value_kind::choice,
              .help = "the quantized type: int8, int4 or uint4 (4-bit values packed two per byte)",
              .label = "Weight type",
              .placeholder = "int8|int4|uint4",
              .choices = weights_choices,
              .required = true},
    parameter{.name = "output",
              .kind = value_kind::path,
              .help = "the output model (default: <stem>.int8.onnx, .int4.onnx or .uint4.onnx beside the input)",
              .label = "Output file",
              .placeholder = "OUT",
              .short_name = "-o"},
    parameter{.name = "block-size",
              .kind = value_kind::count,
              .default_value = "32",
              .help = "values per block along the reduction axis, each block with its own scale: 32, 64, 128 or 256",
              .label = "Block size",
              .placeholder = "N"},
    parameter{.name = "symmetric",
              .kind = value_kind::flag,
              .help = "scale = max|w| / 127 (int8) or / 7 (4 bits), no zero point (uint4: zero point 8); the default",
              .label = "Symmetric"},
    parameter{.name = "asymmetric",
              .kind = value_kind::flag,
              .help = "scale and zero point from each block's min and max",
              .label = "Asymmetric"},
    parameter{.name = "format",
              .kind = value_kind::choice,
              .default_value = "qdq",
              .help = "qdq: DequantizeLinear (opset 21, block_size) feeding the original MatMul/Gemm; matmulnbits: "
                      "each MatMul replaced by ONNX Runtime's com.microsoft MatMulNBits (4 bits)",
              .label = "Format",
              .placeholder = "qdq|matmulnbits",
              .choices = quantize_format_choices},
    parameter{.name = "ops",
              .kind = value_kind::text,
              .default_value = "MatMul,Gemm",
              .help = "comma-separated operators whose weight is quantized: MatMul and Gemm (input B), Gather (an "
                      "embedding: its data, blocks along each row)",
              .label = "Operators",
              .placeholder = "LIST"},
    parameter{.name = "min-size",
              .kind = value_kind::size,
              .default_value = "4K",
              .help = "smallest weight quantized, in bytes; sizes take K, M, G",
              .label = "Smallest weight",
              .placeholder = "BYTES"},
    parameter{.name = "exclude",
              .kind = value_kind::text,
              .help = "comma-separated initializer names left as they are (each must exist)",
              .label = "Excluded weights",
              .placeholder = "NAMES"},
    data_name_parameter,
    shard_size_parameter,
    data_parameter,
    data_dir_parameter,
    strict_parameter,
    size_mismatch_parameter,
    threads_parameter,
    force_parameter,
    writer_parameter};

result<command_outcome> run_quantize(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, quantize_options_from(in));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::quantize(model, options));
    return command_outcome{report::to_json(r), report::to_text(r), written(r), r.warnings, true};
}

// ---------------------------------------------------------------- edit

result<fs::path> edit_output(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    return output_or(in, ops::default_output(model, "edited"));
}

constexpr std::array edit_parameters{
    model_parameter,
    parameter{.name = "output",
              .kind = value_kind::path,
              .help = "the output model (default: <stem>.edited.onnx beside the input); it points at the input's data files",
              .label = "Output file",
              .placeholder = "OUT",
              .short_name = "-o"},
    parameter{.name = "input-shape",
              .kind = value_kind::text,
              .help = "fix an input's dims: NAME=1,3,224,224 or NAME=N,3,H,W (a symbol fixed on an input is fixed "
                      "everywhere it appears; a declared static dim cannot change)",
              .label = "Input shape",
              .placeholder = "NAME=DIMS",
              .repeatable = true},
    parameter{.name = "batch",
              .kind = value_kind::count,
              .help = "set dim 0 of every graph input whose dim 0 is symbolic or unknown (outputs sharing its symbol follow)",
              .label = "Batch size",
              .placeholder = "N"},
    parameter{.name = "rename",
              .kind = value_kind::text,
              .help = "rename a tensor everywhere it is named (nodes, inputs, outputs, value_info, initializers, "
                      "subgraphs that read it); NEW must not be in use",
              .label = "Rename",
              .placeholder = "OLD=NEW",
              .repeatable = true},
    parameter{.name = "add-output",
              .kind = value_kind::text,
              .help = "expose an intermediate tensor as a graph output (its type from value_info or inference)",
              .label = "Add output",
              .placeholder = "NAME",
              .repeatable = true},
    parameter{.name = "remove-output",
              .kind = value_kind::text,
              .help = "stop exposing a graph output (the last one cannot go)",
              .label = "Remove output",
              .placeholder = "NAME",
              .repeatable = true},
    parameter{.name = "strip-doc",
              .kind = value_kind::flag,
              .help = "remove every doc_string (model, graphs, nodes, attributes, values, tensors, functions)",
              .label = "Strip doc strings"},
    parameter{.name = "metadata",
              .kind = value_kind::text,
              .help = "set a metadata_props entry (replacing one of that key)",
              .label = "Metadata",
              .placeholder = "KEY=VALUE",
              .repeatable = true},
    parameter{.name = "remove-metadata",
              .kind = value_kind::text,
              .help = "remove the metadata_props entry of that key (it must exist)",
              .label = "Remove metadata",
              .placeholder = "KEY",
              .repeatable = true},
    parameter{.name = "producer",
              .kind = value_kind::text,
              .help = "set producer_name, and producer_version after a colon",
              .label = "Producer",
              .placeholder = "NAME[:VERSION]"},
    data_parameter,
    data_dir_parameter,
    strict_parameter,
    size_mismatch_parameter,
    force_parameter,
    writer_parameter};

result<command_outcome> run_edit(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, edit_options_from(in));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::edit(model, options));
    return command_outcome{ops::edit_report_json(r), ops::edit_report_text(r), written(r), r.warnings, true};
}

// ---------------------------------------------------------------- extract

constexpr std::array extract_parameters{
    model_parameter,
    parameter{.name = "outputs",
              .kind = value_kind::text,
              .help = "comma-separated values the extracted model computes, in order: node outputs, graph inputs or "
                      "initializers of the main graph",
              .label = "Outputs",
              .placeholder = "NAMES",
              .repeatable = true,
              .required = true},
    parameter{.name = "inputs",
              .kind = value_kind::text,
              .help = "comma-separated values it starts from, in order (default: the model's graph inputs); an "
                      "intermediate value becomes a graph input with its type and shape",
              .label = "Inputs",
              .placeholder = "NAMES",
              .repeatable = true},
    described(output_parameter, "the output model (default: <stem>.extract.onnx beside the input)"),
    parameter{.name = "reuse-data",
              .kind = value_kind::flag,
              .help = "point at the input's data files instead of copying the kept tensors (they must be inside the "
                      "output's folder)",
              .label = "Reuse the data files"},
    data_parameter,
    data_dir_parameter,
    strict_parameter,
    size_mismatch_parameter,
    force_parameter,
    writer_parameter};

result<command_outcome> run_extract(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, extract_options_from(in));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::extract(model, options));
    return command_outcome{ops::extract_report_json(r), ops::extract_report_text(r), written(r), r.warnings, true};
}

// ---------------------------------------------------------------- infer-shapes

constexpr std::array infer_shapes_parameters{
    model_parameter,
    parameter{.name = "output",
              .kind = value_kind::path,
              .help = "the output model (default: <stem>.shapes.onnx beside the input)",
              .label = "Output file",
              .placeholder = "OUT",
              .short_name = "-o"},
    parameter{.name = "input-shape",
              .kind = value_kind::text,
              .help = "dims for an input before inference, NAME=DIMS (e.g. input=1,3,224,224 or input=N,3,H,W; ? keeps "
                      "a dim unknown); a dim the model fixes cannot change",
              .label = "Input shape",
              .placeholder = "NAME=DIMS",
              .repeatable = true},
    data_parameter,
    data_dir_parameter,
    strict_parameter,
    size_mismatch_parameter,
    force_parameter,
    writer_parameter};

result<command_outcome> run_infer_shapes(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, infer_shapes_options_from(in));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::infer_shapes(model, options));
    return command_outcome{ops::infer_shapes_report_json(r), ops::infer_shapes_report_text(r), std::vector<fs::path>{r.output},
                           r.warnings, true};
}

// ---------------------------------------------------------------- export to Caffe

constexpr std::array dialect_choices{std::string_view("opencv"), std::string_view("bvlc")};

constexpr std::array caffe_parameters{
    model_parameter,
    parameter{.name = "output",
              .kind = value_kind::path,
              .help = "where the files go: PREFIX.prototxt and PREFIX.caffemodel (default: the model's folder and stem)",
              .label = "Output prefix",
              .placeholder = "PREFIX",
              .short_name = "-o"},
    parameter{.name = "dialect",
              .kind = value_kind::choice,
              .default_value = "opencv",
              .help = "opencv (what OpenCV's Caffe importer loads, e.g. ReLU6, Permute, ceil_mode) or bvlc (BVLC Caffe "
                      "1.0 layers only)",
              .label = "Caffe dialect",
              .placeholder = "D",
              .choices = dialect_choices},
    parameter{.name = "input-shape",
              .kind = value_kind::text,
              .help = "the shape of an input, NAME=DIMS (e.g. input=1,3,224,224; a symbolic batch is otherwise taken as 1)",
              .label = "Input shape",
              .placeholder = "NAME=DIMS",
              .repeatable = true},
    parameter{.name = "no-fold-bn",
              .kind = value_kind::flag,
              .help = "keep BatchNormalization as BatchNorm + Scale layers instead of folding it",
              .label = "Keep BatchNorm layers"},
    parameter{.name = "check",
              .kind = value_kind::flag,
              .help = "run the export in OpenCV and the original in a reference evaluator on the same random input; "
                      "fail past the tolerance",
              .label = "Check in OpenCV"},
    parameter{.name = "tolerance",
              .kind = value_kind::number,
              .default_value = "1e-4",
              .help = "the largest error the check allows, relative to the output's magnitude",
              .label = "Tolerance",
              .placeholder = "X"},
    parameter{.name = "report",
              .kind = value_kind::flag,
              .help = "also write the audit report PREFIX.caffe-report.json and PREFIX.caffe-report.html",
              .label = "Write the audit report"},
    // With --check: the reference evaluator's input and outputs, for the test suites.
    parameter{.name = "check-dump",
              .kind = value_kind::path,
              .help = "write the check's input and reference outputs here (testing)",
              .label = "Check dump",
              .placeholder = "DIR",
              .hidden = true,
              .surfaces = surface::cli},
    data_parameter, data_dir_parameter, strict_parameter, size_mismatch_parameter, force_parameter, writer_parameter};

result<fs::path> caffe_claim(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(auto prefix, caffe_prefix(in));
    return fs::path(prefix.string() + ".prototxt");
}

result<command_outcome> run_export_caffe(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, export_caffe_options_from(in));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::export_caffe(model, options));
    if (!r.refusals.empty()) {
        std::string what;
        for (const auto& x : r.refusals) what += (what.empty() ? "" : "; ") + x.op_type + " " + x.node + ": " + x.why;
        return failure(error_code::invalid_argument, "the model cannot be exported to Caffe exactly (" + what + ")",
                       "change these nodes in the source model (or run {0} first), then export again",
                       {{remedy::optimize_first, {}}});
    }
    std::vector<fs::path> outputs;
    if (r.written) outputs = {r.prototxt, r.caffemodel};
    if (!r.report_html.empty()) {
        outputs.push_back(r.report_html);
        outputs.push_back(r.report_json);
    }
    return command_outcome{report::to_json(r, options.tolerance), report::to_text(r), outputs, r.warnings,
                           !r.check.ran || r.check.passed};
}

// ---------------------------------------------------------------- export to safetensors

constexpr std::array safetensors_parameters{
    model_parameter,
    described(output_parameter,
              "the .safetensors file (sharded: the base of the shard names; default: <stem>.safetensors beside "
              "the model)"),
    described(shard_size_parameter,
              "the Hugging Face sharded layout: <stem>-00001-of-0000N.safetensors of at most BYTES of data each, "
              "plus <stem>.safetensors.index.json"),
    parameter{.name = "link",
              .kind = value_kind::flag,
              .help = "also write <stem>.linked.onnx beside the output, whose weights are external data inside the "
                      "safetensors file(s): one copy for both",
              .label = "Also write a linked .onnx"},
    data_parameter,
    data_dir_parameter,
    strict_parameter,
    size_mismatch_parameter,
    threads_parameter,
    force_parameter,
    writer_parameter};

result<fs::path> safetensors_claim(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    return output_or(in, model.parent_path() / (model.stem().string() + ".safetensors"));
}

result<command_outcome> run_export_safetensors(const parameter_reader& in, const run_context& context) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(auto options, safetensors_options_from(in));
    hook_writer(options, context);
    ONNXSTREAM_ASSIGN(const auto r, ops::export_safetensors(model, options));
    std::vector<fs::path> outputs;
    for (const auto& f : r.files) outputs.push_back(f.path);
    if (r.index) outputs.push_back(*r.index);
    if (r.linked) outputs.push_back(*r.linked);
    return command_outcome{report::to_json(r), report::to_text(r), outputs, r.warnings, true};
}

// ---------------------------------------------------------------- the table

constexpr std::array command_table{
    command_spec{
        .name = "inspect",
        .title = "Inspect",
        .summary = "what a model is and what it needs (external data, 2 GB fit)",
        .description = "What a model is and what it needs: IR version, opsets, producer, inputs and outputs, nodes per op "
                       "type, tensors per data type, subgraphs and functions, and every external data file (how it was "
                       "found, or every place tried; tensors and bytes it must hold; its real size; problems). Ends with "
                       "the size the merged model would have and whether it fits in one .onnx file (under 2 GB). Weights "
                       "are never read.",
        .parameters = inspect_parameters,
        .surfaces = surface::programs,
        .run = run_inspect},
    command_spec{.name = "merge",
                 .title = "Merge",
                 .summary = "inline external data into one self-contained .onnx",
                 .description = "Inlines every external tensor into one self-contained .onnx (default: <stem>.merged.onnx beside "
                                "the input). Everything is validated before the first byte is written; a model that would pass "
                                "protobuf's 2 GB limit is refused before any file is created.",
                 .parameters = merge_parameters,
                 .output_suffix = "merged",
                 .run = run_merge},
    command_spec{.name = "split",
                 .title = "Split",
                 .summary = "move large tensors out to an aligned data file",
                 .description = "Moves tensors of at least the threshold out of the model into one data file beside the output "
                                "(default output <stem>.split.onnx, data file <output file name>.data). Strings and tensors a "
                                "runtime reads while loading (Reshape shapes, Slice bounds, Resize scales, Range bounds...) stay "
                                "embedded whatever the threshold.",
                 .parameters = split_parameters,
                 .output_suffix = "split",
                 .run = run_split},
    command_spec{
        .name = "repack",
        .title = "Repack",
        .summary = "rewrite all weights, from wherever they are, into fresh aligned data files",
        .description = "Rewrites every tensor of at least the threshold, wherever it is (embedded, one data file, a file "
                       "per tensor, any mix), into a fresh aligned data file beside the output (default output "
                       "<stem>.repacked.onnx, data <output file name>.data). Orphaned bytes are dropped. Works far past 2 "
                       "GB: only the .onnx must stay under it.",
        .parameters = repack_parameters,
        .output_suffix = "repacked",
        .run = run_repack},
    command_spec{
        .name = "analyze",
        .title = "Analyze",
        .summary = "report dead, duplicate and no-op parts of a model, per graph and subgraph",
        .description = "A redundancy report, per graph and subgraph: dead nodes (no output reaches a graph output), "
                       "isolated components, dead branches (If whose condition is constant, Loop that never runs), "
                       "duplicate computations, duplicate and unused initializers, Identity and no-op Dropout nodes, graph "
                       "inputs nothing uses (reported, never removed), nodes of constant inputs that fold, Shape/Size of "
                       "static shapes, and no-op nodes (Cast to its own type, Reshape to the same shape...). Each with the "
                       "nodes and initializer bytes its removal would save; optimize removes them. Nothing is written.",
        .parameters = analyze_parameters,
        .surfaces = surface::everywhere,
        .run = run_analyze,
        .cached_result = true},
    command_spec{
        .name = "optimize",
        .title = "Optimize",
        .summary = "graph passes: dead code, constant folding, no-ops, BatchNorm folding, fusion",
        .description = "Runs graph passes until nothing changes and writes the result (default: <stem>.optimized.onnx "
                       "beside the input), printing what each pass removed or folded. Weights are read only where a pass "
                       "needs them; the rest is copied. An embedded model stays embedded; a model with external data gets "
                       "a new data file <output file name>.data with the surviving and new tensors (reuse-data: the "
                       "original data files stay referenced).",
        .parameters = optimize_parameters,
        .output_suffix = "optimized",
        .run = run_optimize},
    command_spec{
        .name = "verify",
        .title = "Verify",
        .summary = "check external references, sizes and SHA-1 checksums; exit 1 on problems",
        .description = "Checks that a model is whole, without changing anything: the .onnx tokenizes and every tensor in it "
                       "reads; every external data file is found and holds each tensor's bytes (in bounds, dims x element "
                       "size); every SHA-1 'checksum' key matches its bytes (read through a small buffer, never loaded). "
                       "Each problem names the tensor, its file and what is wrong.",
        .parameters = verify_parameters,
        .run = run_verify},
    command_spec{
        .name = "diff",
        .title = "Diff",
        .summary = "compare two models' graphs and tensor values, ignoring storage",
        .description = "Compares two models as models, not as files: the same graph (nodes, attributes, inputs and "
                       "outputs, functions, opsets, metadata) and the same tensors (name, type, dims and values, hashed "
                       "while streaming). Where the bytes live does not count: embedded or external, raw or typed fields, "
                       "file layout, alignment, checksum keys. Says whether the two .onnx files are byte-identical too.",
        .parameters = diff_parameters,
        .run = run_diff},
    command_spec{
        .name = "convert",
        .title = "Convert",
        .summary = "float32 weights and computation to fp16 or bf16, streaming (Casts around unsafe ops)",
        .description = "Converts every float32 tensor the model computes with (initializers, Constant nodes, sparse "
                       "tensors, subgraphs, functions) to float16 or bfloat16, slice by slice while writing: memory does "
                       "not grow with the weights. Rounds to nearest even. A tensor with values beyond float16's +-65504 "
                       "stays float32, and so do the nodes that read it; the report names it. Operators unsafe in half "
                       "precision stay float32 behind inserted Cast nodes, and so does any node whose converted types the "
                       "operator schemas would refuse. A model in 16 bits already is refused. A model with external data, "
                       "or one that would not fit in 2 GB, gets fresh aligned data files as repack lays them out.",
        .parameters = convert_parameters,
        .run = run_convert,
        .claimed_output = convert_output},
    command_spec{
        .name = "export-caffe",
        .title = "Export to Caffe",
        .summary = "a Caffe .prototxt + .caffemodel, BatchNorm folded, checked against the original",
        .description = "Writes PREFIX.prototxt and PREFIX.caffemodel (default PREFIX: the model's folder and stem). Every "
                       "blob gets a static shape from the input shapes; BatchNormalization is folded into the "
                       "Conv/ConvTranspose/Gemm before it where that is exact; unchanged float weights are copied straight "
                       "from the model. A node without an exact Caffe form stops the export: nothing is written and every "
                       "such node is listed with what to try.",
        .parameters = caffe_parameters,
        .run = run_export_caffe,
        .claimed_output = caffe_claim},
    command_spec{
        .name = "export-safetensors",
        .title = "Export to safetensors",
        .summary = "the weights as safetensors (Hugging Face), optionally linked from the .onnx",
        .description = "Writes every initializer (name, dtype, shape) into a safetensors file, copying the bytes as they "
                       "are (no conversion, no loading). Default output <stem>.safetensors beside the model. Names "
                       "safetensors cannot hold, duplicate names and types it has no dtype for (strings, complex, 4-bit) "
                       "are refused before anything is written.",
        .parameters = safetensors_parameters,
        .run = run_export_safetensors,
        .claimed_output = safetensors_claim},
    command_spec{
        .name = "quantize",
        .title = "Quantize",
        .summary = "weight-only int8/int4 quantization of MatMul and Gemm weights, streaming (DequantizeLinear)",
        .description = "Replaces each constant float32 or float16 weight of MatMul and Gemm (input B, 2-D, at least "
                       "min-size bytes) by a DequantizeLinear (opset 21, block_size) over int8 or packed int4/uint4 "
                       "values, with one scale per block along the reduction axis (round to nearest even; the last block "
                       "may be short). Each weight is read a block of rows at a time. The opset is raised to 21 (and "
                       "ir_version to 10); a model whose operators would change meaning there is refused. The report "
                       "lists what was quantized, what was skipped and why, the sizes and the largest error.",
        .parameters = quantize_parameters,
        .run = run_quantize,
        .claimed_output = quantize_output},
    command_spec{
        .name = "edit",
        .title = "Edit",
        .summary = "fix input dims, rename tensors, add/remove outputs, metadata and doc strings; weights untouched",
        .description = "Edits the graph's metadata as tree edits over the model's bytes, never reading a weight: fixes "
                       "input dims (a symbolic dim fixed on an input is fixed wherever it appears, as onnxruntime's "
                       "make_dynamic_shape_fixed does), renames tensors everywhere they are named, adds and removes graph "
                       "outputs, strips doc strings, sets metadata and the producer. Embedded weights are copied; the "
                       "output points at the input's external data files, which stay as they are. The report lists each "
                       "change.",
        .parameters = edit_parameters,
        .run = run_edit,
        .claimed_output = edit_output},
    command_spec{
        .name = "extract",
        .title = "Extract",
        .summary = "the part of a model that computes some values from others (onnx.utils.extract_model), weights unread",
        .description = "Keeps the nodes of the main graph that the outputs need, walking back from them and stopping at "
                       "the inputs (default: the model's graph inputs), as onnx.utils.extract_model does, with the "
                       "subgraphs, local functions and initializers they use; an intermediate value named as an input or "
                       "output gets its type and shape from the model's value_info, or inferred. Weights are never read: "
                       "embedded ones stay embedded, external ones go to a new data file <output file name>.data "
                       "(reuse-data: the original data files stay referenced). Default output <stem>.extract.onnx beside "
                       "the input. An output nothing computes, or inputs that do not cut the graph, are refused by name.",
        .parameters = extract_parameters,
        .output_suffix = "extract",
        .run = run_extract},
    command_spec{
        .name = "infer-shapes",
        .title = "Infer shapes",
        .summary = "write value_info with the type and shape of every intermediate value it can infer",
        .description = "Infers the type and shape of every node output from the inputs' declared shapes (or those given "
                       "with input-shape), the initializers' and the standard operators' rules, as onnx.shape_inference "
                       "does, symbolic dims included, and writes them as value_info (entries for the same names replaced). "
                       "Weights are never read: the output points at the same data files, or embeds the weights when the "
                       "input did. Default output <stem>.shapes.onnx beside the model.",
        .parameters = infer_shapes_parameters,
        .run = run_infer_shapes,
        .claimed_output = detail::infer_shapes_output},
};

// ---------------------------------------------------------------- remedies as keyword arguments

std::string keyword_words(const remedy_step& step) {
    const auto with = [&step](const char* keyword, const char* placeholder) {
        return std::string(keyword) + "=" + (step.argument.empty() ? placeholder : "'" + step.argument + "'");
    };
    switch (step.change) {
        case remedy::replace_output: return "pass force=True";
        case remedy::choose_output: return with("output", "...");
        case remedy::give_data_file: return with("data", "FILE");
        case remedy::give_data_folder: return with("data_dir", "DIR");
        case remedy::give_data_location: return "pass the file as data=FILE, or the folder holding it as data_dir=DIR";
        case remedy::refuse_guesses: return "strict=True";
        case remedy::accept_size_mismatch: return "allow_size_mismatch=True";
        case remedy::choose_data_name: return "data_name=";
        case remedy::repack_in_place: return "repack(model, output=model, force=True)";
        case remedy::keep_external_data: return "repack()";
        case remedy::embed_weights: return "merge()";
        case remedy::inspect_model: return "inspect()";
        case remedy::optimize_first: return "optimize()";
        case remedy::give_input_shape: return with("input_shape", "NAME=DIMS");
        case remedy::choose_dialect: return with("dialect", "...");
        case remedy::fewer_threads: return "threads=";
        case remedy::leave_out_check: return "check=False";
        case remedy::reuse_data: return "reuse_data=True";
        case remedy::choose_dtype: return with("dtype", "...");
    }
    return to_string(step.change);
}

constexpr report::hint_wording keyword_wording{.word = keyword_words, .list_remedies = true};

const char* to_string(value_kind kind) {
    switch (kind) {
        case value_kind::text: return "text";
        case value_kind::path: return "path";
        case value_kind::model: return "model";
        case value_kind::size: return "size";
        case value_kind::count: return "count";
        case value_kind::number: return "number";
        case value_kind::flag: return "flag";
        case value_kind::choice: return "choice";
    }
    return "text";
}

void write_surfaces(report::json_writer& json, std::uint8_t surfaces) {
    json.begin_array();
    if ((surfaces & surface::cli) != 0) json.value("cli");
    if ((surfaces & surface::page) != 0) json.value("page");
    if ((surfaces & surface::python) != 0) json.value("python");
    json.end_array();
}

}  // namespace

// ---------------------------------------------------------------- the table's face

const parameter* command_spec::find(std::string_view parameter_name) const noexcept {
    for (const auto& p : parameters)
        if (p.name == parameter_name) return &p;
    return nullptr;
}

std::span<const command_spec> commands() { return command_table; }

const command_spec* find_command(std::string_view name) {
    for (const auto& c : command_table)
        if (c.name == name) return &c;
    return nullptr;
}

result<command_outcome> run_command(const command_spec& command, const parameter_values& values, front_end who,
                                    const run_context& context, path_locator locate) {
    const parameter_reader reader(command.parameters, values, who, std::move(locate));
    ONNXSTREAM_TRY(reader.check());
    return command.run(reader, context);
}

result<fs::path> planned_output(const command_spec& command, const parameter_reader& values) {
    if (command.claimed_output != nullptr) return command.claimed_output(values);
    if (command.output_suffix.empty()) return fs::path();
    ONNXSTREAM_ASSIGN(const auto model, values.path("model"));
    return output_or(values, ops::default_output(model, std::string(command.output_suffix)));
}

const report::hint_wording& api_wording() noexcept { return keyword_wording; }

std::string parameter_help(const command_spec& command, const parameter& p) {
    std::string help(p.help);
    constexpr std::string_view slot = "<suffix>";
    if (const auto at = help.find(slot); at != std::string::npos && !command.output_suffix.empty())
        help.replace(at, slot.size(), command.output_suffix);
    return help;
}

std::string commands_json() {
    report::json_writer json;
    json.begin_array();
    for (const auto& c : command_table) {
        json.begin_object().field("name", c.name).field("title", c.title).field("summary", c.summary);
        json.field("description", c.description).field("writes", c.writes());
        json.key("surfaces");
        write_surfaces(json, c.surfaces);
        json.key("parameters").begin_array();
        for (const auto& p : c.parameters) {
            json.begin_object().field("name", p.name).field("kind", to_string(p.kind)).field("default", p.default_value);
            json.field("help", parameter_help(c, p)).field("label", p.label).field("placeholder", p.placeholder);
            json.field("short", p.short_name);
            json.key("choices").begin_array();
            for (const auto choice : p.choices) json.value(choice);
            json.end_array();
            json.field("repeatable", p.repeatable).field("required", p.required).field("positional", p.positional);
            json.field("hidden", p.hidden).key("surfaces");
            write_surfaces(json, p.surfaces);
            json.end_object();
        }
        json.end_array().end_object();
    }
    json.end_array();
    return json.text();
}

}  // namespace onnxstream::api
