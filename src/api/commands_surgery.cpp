// The rows and run functions of edit, extract and infer-shapes (the table is in commands.cpp).
#include <onnxstream/ops/extract.hpp>
#include <onnxstream/ops/infer_shapes.hpp>
#include "command_options.hpp"
#include "command_parts.hpp"

// The rows below name only the fields they set (designated initializers); the rest keep
// their defaults on purpose, which GCC 12's -Wextra reports field by field.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace onnxstream::api::detail {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- edit

result<fs::path> edit_output(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    return output_or(in, ops::default_output(model, "edited"));
}

constexpr std::array edit_rows{
    model_parameter,
    described(output_parameter,
              "the output model (default: <stem>.edited.onnx beside the input); it points at the input's data files"),
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

constexpr std::array extract_rows{
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

constexpr std::array infer_shapes_rows{
    model_parameter,
    described(output_parameter, "the output model (default: <stem>.shapes.onnx beside the input)"),
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

constexpr std::span<const parameter> edit_parameters = edit_rows;
constexpr std::span<const parameter> extract_parameters = extract_rows;
constexpr std::span<const parameter> infer_shapes_parameters = infer_shapes_rows;

}  // namespace onnxstream::api::detail
