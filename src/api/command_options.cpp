// Each command's values read into its operation's options (api/commands.hpp declares
// them): the command table runs them, and the command line uses them before printing the
// report its own way.
#include "command_options.hpp"

#include <onnxstream/api/commands.hpp>
#include <onnxstream/ops/extract.hpp>
#include <onnxstream/ops/quantize.hpp>

#include <charconv>

namespace onnxstream::api {

namespace fs = std::filesystem;

namespace detail {

// The default output <stem>.<suffix>.onnx beside the model, or the output given.
result<fs::path> output_or(const parameter_reader& in, const fs::path& fallback) {
    ONNXSTREAM_ASSIGN(auto output, in.path("output"));
    if (output.empty()) output = fallback;
    return output;
}

result<fs::path> convert_output(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(const auto dtype, in.choice("dtype"));
    return output_or(in, ops::default_output(model, dtype.empty() ? "fp16" : std::string(dtype)));
}

result<fs::path> quantize_output(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(const auto weights, in.choice("weights"));
    return output_or(in, ops::default_output(model, weights.empty() ? "int8" : std::string(weights)));
}

result<fs::path> infer_shapes_output(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    return output_or(in, ops::default_output(model, "shapes"));
}

result<fs::path> caffe_prefix(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    return output_or(in, model.parent_path() / model.stem());
}

}  // namespace detail

namespace {

using detail::caffe_prefix;
using detail::convert_output;
using detail::quantize_output;

result<io::writer_backend> writer_from(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto w, in.choice("writer"));
    if (w == "portable") return io::writer_backend::portable;
    if (w == "io_uring" || w == "uring") return io::writer_backend::io_uring;
    if (w == "overlapped") return io::writer_backend::overlapped;
    return io::writer_backend::automatic;
}

}  // namespace

// ---------------------------------------------------------------- options from values

result<onnx::open_options> open_options_from(const parameter_reader& in) {
    onnx::open_options options;
    ONNXSTREAM_ASSIGN(options.data.data_files, in.paths("data"));
    ONNXSTREAM_ASSIGN(options.data.data_dirs, in.paths("data-dir"));
    options.strict = in.flag("strict");
    options.allow_size_mismatch = in.flag("allow-size-mismatch");
    return options;
}

result<void> fill_rewrite_options(const parameter_reader& in, ops::rewrite_options& options) {
    ONNXSTREAM_ASSIGN(static_cast<onnx::open_options&>(options), open_options_from(in));
    if (in.has("force")) options.force = in.flag("force");
    if (in.has("threads")) {
        ONNXSTREAM_ASSIGN(options.threads, in.count("threads"));
    }
    if (in.has("writer")) {
        ONNXSTREAM_ASSIGN(options.backend, writer_from(in));
    }
    if (in.has("output")) {
        ONNXSTREAM_ASSIGN(options.output, in.path("output"));
    }
    return {};
}

namespace {

result<std::uint64_t> shard_size_from(const parameter_reader& in) {
    ONNXSTREAM_ASSIGN(const auto size, in.size("shard-size"));
    if (in.given("shard-size") && size == 0)
        return failure(error_code::invalid_argument, in.spelled("shard-size") + " must be more than 0");
    return size;
}

}  // namespace

result<ops::externalize_options> externalize_options_from(const parameter_reader& in, ops::externalize_kind kind) {
    auto options = ops::externalize_defaults(kind);
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    options.data_name = std::string(in.text("data-name"));  // ops refuses a path here
    ONNXSTREAM_ASSIGN(options.threshold, in.size("threshold"));
    ONNXSTREAM_ASSIGN(options.alignment, in.size("align"));
    ONNXSTREAM_ASSIGN(options.align_threshold, in.size("align-threshold"));
    if (in.has("shard-size")) {
        ONNXSTREAM_ASSIGN(options.shard_size, shard_size_from(in));
    }
    if (in.has("dedupe")) options.dedupe = in.flag("dedupe");
    if (in.has("write-checksums")) options.write_checksums = in.flag("write-checksums");
    return options;
}

result<ops::optimize_options> optimize_options_from(const parameter_reader& in) {
    ops::optimize_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    if (in.given("passes")) {
        ONNXSTREAM_ASSIGN(options.passes, ops::parse_pass_list(in.text("passes")));
    }
    ONNXSTREAM_ASSIGN(options.fold_limit, in.size("fold-limit"));
    options.dry_run = in.flag("dry-run");
    options.reuse_data = in.flag("reuse-data");
    return options;
}

result<ops::verify_options> verify_options_from(const parameter_reader& in) {
    ops::verify_options options;
    ONNXSTREAM_ASSIGN(static_cast<onnx::open_options&>(options), open_options_from(in));
    ONNXSTREAM_ASSIGN(options.threads, in.count("threads"));
    return options;
}

result<ops::analyze_options> analyze_options_from(const parameter_reader& in) {
    ops::analyze_options options;
    ONNXSTREAM_ASSIGN(static_cast<onnx::open_options&>(options), open_options_from(in));
    return options;
}

result<ops::diff_options> diff_options_from(const parameter_reader& in) {
    ops::diff_options options;
    ONNXSTREAM_ASSIGN(static_cast<onnx::open_options&>(options), open_options_from(in));
    ONNXSTREAM_ASSIGN(options.threads, in.count("threads"));
    return options;
}

result<ops::convert_options> convert_options_from(const parameter_reader& in) {
    ops::convert_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    ONNXSTREAM_ASSIGN(const auto dtype, in.choice("dtype"));
    options.target = dtype == "bf16" ? ops::half_type::bfloat16 : ops::half_type::float16;
    ONNXSTREAM_ASSIGN(options.output, convert_output(in));
    options.keep_io_types = in.flag("keep-io-types");
    options.allow_saturation = in.flag("allow-saturation");
    if (in.given("block-ops") || !in.texts("block-ops").empty()) options.block_ops = in.list("block-ops");
    options.data_name = std::string(in.text("data-name"));  // ops refuses a path here
    if (in.given("align")) {
        ONNXSTREAM_ASSIGN(options.alignment, in.size("align"));
    }
    ONNXSTREAM_ASSIGN(options.shard_size, shard_size_from(in));
    return options;
}

result<ops::quantize_options> quantize_options_from(const parameter_reader& in) {
    ops::quantize_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    ONNXSTREAM_ASSIGN(options.output, quantize_output(in));
    ONNXSTREAM_ASSIGN(const auto weights, in.choice("weights"));
    options.weights = weights == "int4"    ? ops::quantized_type::int4
                      : weights == "uint4" ? ops::quantized_type::uint4
                                           : ops::quantized_type::int8;
    ONNXSTREAM_ASSIGN(const auto block, in.count("block-size"));
    options.block_size = block;
    if (in.flag("symmetric") && in.flag("asymmetric"))
        return failure(error_code::invalid_argument,
                       in.spelled("symmetric") + " and " + in.spelled("asymmetric") + " exclude each other",
                       "give one of them (symmetric is the default)");
    options.symmetric = !in.flag("asymmetric");
    ONNXSTREAM_ASSIGN(const auto format, in.choice("format"));
    options.format = format == "matmulnbits" ? ops::quantized_format::matmulnbits : ops::quantized_format::qdq;
    options.ops = in.list("ops");
    ONNXSTREAM_ASSIGN(options.min_size, in.size("min-size"));
    options.exclude = in.list("exclude");
    options.data_name = std::string(in.text("data-name"));  // ops refuses a path here
    ONNXSTREAM_ASSIGN(options.shard_size, shard_size_from(in));
    return options;
}

result<ops::infer_shapes_options> infer_shapes_options_from(const parameter_reader& in) {
    ops::infer_shapes_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    ONNXSTREAM_ASSIGN(options.output, detail::infer_shapes_output(in));
    for (const auto& s : in.texts("input-shape")) {
        ONNXSTREAM_ASSIGN(auto parsed, graph::parse_input_shape(s));
        for (const auto& given : options.input_shapes)
            if (given.name == parsed.name)
                return failure(error_code::invalid_argument, in.spelled("input-shape") + " gives '" + parsed.name + "' twice");
        options.input_shapes.push_back(std::move(parsed));
    }
    return options;
}

namespace {

// Names given as comma-separated lists, each flag possibly given again.
std::vector<std::string> name_lists(const parameter_reader& in, std::string_view name) {
    std::vector<std::string> names;
    for (const auto& text : in.texts(name)) {
        std::string_view rest = text;
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            if (const auto item = rest.substr(0, comma); !item.empty()) names.emplace_back(item);
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    return names;
}

}  // namespace

result<ops::extract_options> extract_options_from(const parameter_reader& in) {
    ops::extract_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    options.outputs = name_lists(in, "outputs");
    options.inputs = name_lists(in, "inputs");
    options.reuse_data = in.flag("reuse-data");
    return options;
}

namespace {

result<std::pair<std::string, caffe::shape>> parse_input_shape(const parameter_reader& in, const std::string& text) {
    const auto eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
        return failure(error_code::invalid_argument,
                       in.spelled("input-shape") + " takes NAME=DIMS, e.g. input=1,3,224,224 (got '" + text + "')");
    caffe::shape dims;
    std::string_view rest(text.data() + eq + 1, text.size() - eq - 1);
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const auto word = rest.substr(0, comma);
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
        if (ec != std::errc{} || end != word.data() + word.size() || v < 1 || v > (1LL << 31))
            return failure(error_code::invalid_argument,
                           in.spelled("input-shape") + " dimensions are positive whole numbers (got '" + text + "')");
        dims.push_back(v);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return std::pair{text.substr(0, eq), dims};
}

}  // namespace

result<ops::export_caffe_options> export_caffe_options_from(const parameter_reader& in) {
    ops::export_caffe_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    ONNXSTREAM_ASSIGN(options.output, caffe_prefix(in));
    if (in.given("output")) ONNXSTREAM_TRY(ops::check_caffe_prefix(options.output));
    ONNXSTREAM_ASSIGN(const auto dialect, in.choice("dialect"));
    options.dialect = dialect == "bvlc" ? caffe::dialect::bvlc : caffe::dialect::opencv;
    for (const auto& s : in.texts("input-shape")) {
        ONNXSTREAM_ASSIGN(auto parsed, parse_input_shape(in, s));
        if (options.input_shapes.contains(parsed.first))
            return failure(error_code::invalid_argument, in.spelled("input-shape") + " gives '" + parsed.first + "' twice");
        options.input_shapes.insert(std::move(parsed));
    }
    options.fold_batchnorm = !in.flag("no-fold-bn");
    options.check = in.flag("check");
    if (in.given("tolerance") && !options.check)
        return failure(error_code::invalid_argument, in.spelled("tolerance") + " needs " + in.spelled("check"));
    ONNXSTREAM_ASSIGN(options.tolerance, in.number("tolerance"));
    options.report = in.flag("report");
    ONNXSTREAM_ASSIGN(options.check_dump, in.path("check-dump"));
    return options;
}

result<ops::safetensors_options> safetensors_options_from(const parameter_reader& in) {
    ops::safetensors_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    ONNXSTREAM_ASSIGN(options.shard_size, shard_size_from(in));
    options.link = in.flag("link");
    return options;
}

// ---------------------------------------------------------------- edit

namespace {

// KEY=VALUE (the first '=' splits: a value may hold more), or OLD=NEW.
result<std::pair<std::string, std::string>> key_value(const parameter_reader& in, std::string_view parameter,
                                                      const std::string& text, const char* example) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        return failure(error_code::invalid_argument, in.spelled(parameter) + " takes " + example + " (got '" + text + "')",
                       std::string("give e.g. ") + in.spelled(parameter) + " " + example);
    return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace

result<ops::edit_options> edit_options_from(const parameter_reader& in) {
    ops::edit_options options;
    ONNXSTREAM_TRY(fill_rewrite_options(in, options));
    ONNXSTREAM_ASSIGN(const auto model, in.path("model"));
    ONNXSTREAM_ASSIGN(options.output, detail::output_or(in, ops::default_output(model, "edited")));
    for (const auto& s : in.texts("input-shape")) {
        ONNXSTREAM_ASSIGN(auto spec, ops::parse_input_shape_spec(s, in.spelled("input-shape")));
        options.input_shapes.push_back(std::move(spec));
    }
    if (in.given("batch")) {
        ONNXSTREAM_ASSIGN(const auto n, in.count("batch"));
        if (n == 0)
            return failure(error_code::invalid_argument, in.spelled("batch") + " must be at least 1", "give e.g. --batch 1");
        options.batch = n;
    }
    for (const auto& s : in.texts("rename")) {
        ONNXSTREAM_ASSIGN(auto pair, key_value(in, "rename", s, "OLD=NEW"));
        if (pair.second.empty())
            return failure(error_code::invalid_argument, in.spelled("rename") + " needs a new name (got '" + s + "')",
                           "give e.g. --rename input.1=image");
        options.renames.push_back(std::move(pair));
    }
    options.add_outputs = in.texts("add-output");
    options.remove_outputs = in.texts("remove-output");
    options.strip_doc = in.flag("strip-doc");
    for (const auto& s : in.texts("metadata")) {
        ONNXSTREAM_ASSIGN(auto pair, key_value(in, "metadata", s, "KEY=VALUE"));
        options.metadata.push_back(std::move(pair));
    }
    options.remove_metadata = in.texts("remove-metadata");
    if (in.given("producer")) {
        const std::string producer(in.text("producer"));
        const auto colon = producer.find(':');
        if (producer.empty() || colon == 0)
            return failure(error_code::invalid_argument,
                           in.spelled("producer") + " takes NAME[:VERSION] (got '" + producer + "')",
                           "give e.g. --producer mytool:1.2");
        options.producer_name = producer.substr(0, colon);
        if (colon != std::string::npos) options.producer_version = producer.substr(colon + 1);
    }
    return options;
}

std::string_view dtype_name(ops::half_type type) noexcept { return type == ops::half_type::float16 ? "fp16" : "bf16"; }

}  // namespace onnxstream::api
