// The rows and run functions of convert, quantize and the two exports (the table is in commands.cpp).
#include <onnxstream/ops/quantize.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/text.hpp>
#include "command_options.hpp"
#include "command_parts.hpp"

// The rows below name only the fields they set (designated initializers); the rest keep
// their defaults on purpose, which GCC 12's -Wextra reports field by field.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace onnxstream::api::detail {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- convert

constexpr std::array dtype_choices{std::string_view("fp16"), std::string_view("bf16")};

constexpr std::array convert_rows{
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

constexpr std::array quantize_rows{
    model_parameter,
    parameter{.name = "weights",
              .kind = value_kind::choice,
              .help = "the quantized type: int8, int4 or uint4 (4-bit values packed two per byte)",
              .label = "Weight type",
              .placeholder = "int8|int4|uint4",
              .choices = weights_choices,
              .required = true},
    described(output_parameter, "the output model (default: <stem>.int8.onnx, .int4.onnx or .uint4.onnx beside the input)"),
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

// ---------------------------------------------------------------- export to Caffe

constexpr std::array dialect_choices{std::string_view("opencv"), std::string_view("bvlc")};

constexpr std::array caffe_rows{
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

constexpr std::array safetensors_rows{
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

constexpr std::span<const parameter> convert_parameters = convert_rows;
constexpr std::span<const parameter> quantize_parameters = quantize_rows;
constexpr std::span<const parameter> caffe_parameters = caffe_rows;
constexpr std::span<const parameter> safetensors_parameters = safetensors_rows;

}  // namespace onnxstream::api::detail
