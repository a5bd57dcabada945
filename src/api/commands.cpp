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
#include "command_parts.hpp"

#include <array>
#include <charconv>

// The rows below name only the fields they set (designated initializers); the rest keep
// their defaults on purpose, which GCC 12's -Wextra reports field by field.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace onnxstream::api {

namespace fs = std::filesystem;
using namespace detail;

namespace {

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

// ---------------------------------------------------------------- the table

// Built on first use: the rows of commands_convert.cpp and commands_surgery.cpp are not
// constants here, and no static initializer elsewhere may see the table before it is filled.
const auto& command_table() {
    static const std::array table{
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
        command_spec{
            .name = "merge",
            .title = "Merge",
            .summary = "inline external data into one self-contained .onnx",
            .description = "Inlines every external tensor into one self-contained .onnx (default: <stem>.merged.onnx beside "
                           "the input). Everything is validated before the first byte is written; a model that would pass "
                           "protobuf's 2 GB limit is refused before any file is created.",
            .parameters = merge_parameters,
            .output_suffix = "merged",
            .run = run_merge},
        command_spec{
            .name = "split",
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
    return table;
}

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

std::span<const command_spec> commands() { return command_table(); }

const command_spec* find_command(std::string_view name) {
    for (const auto& c : command_table())
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
    for (const auto& c : command_table()) {
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
