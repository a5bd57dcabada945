#include "cli_common.hpp"

#include <onnxstream/ops/export_caffe.hpp>

#include <array>
#include <charconv>
#include <cstdio>

namespace onnxstream::cli {
namespace {

constexpr std::string_view caffe_help =
    "usage: onnxstream export MODEL --to caffe [-o PREFIX] [--dialect opencv|bvlc] [--input-shape NAME=DIMS]...\n"
    "                         [--no-fold-bn] [--check [--tolerance X]] [--report] [--force] [--json]\n"
    "\n"
    "Writes PREFIX.prototxt and PREFIX.caffemodel (default PREFIX: the model's folder and stem).\n"
    "Every blob gets a static shape from the input shapes; BatchNormalization is folded into the\n"
    "Conv/ConvTranspose/Gemm before it where that is exact; unchanged float weights are copied\n"
    "straight from the model. A node without an exact Caffe form stops the export: nothing is\n"
    "written and every such node is listed with what to try.\n"
    "\n"
    "  -o, --output PREFIX     where the files go (PREFIX.prototxt, PREFIX.caffemodel)\n"
    "  --dialect D             opencv (default: what OpenCV's Caffe importer loads, e.g. ReLU6,\n"
    "                          Permute, ceil_mode) or bvlc (BVLC Caffe 1.0 layers only)\n"
    "  --input-shape N=DIMS    the shape of input N, e.g. input=1,3,224,224 (a symbolic batch is\n"
    "                          otherwise taken as 1)\n"
    "  --no-fold-bn            keep BatchNormalization as BatchNorm + Scale layers\n"
    "  --check                 run the export in OpenCV and the original in a reference evaluator\n"
    "                          on the same random input; exit 1 past the tolerance\n"
    "  --tolerance X           largest error allowed, relative to the output's magnitude (1e-4)\n"
    "  --report                also write PREFIX.caffe-report.json and PREFIX.caffe-report.html\n"
    "  --data FILE, --data-dir DIR   where the input's external data is\n"
    "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
    "                    mismatches); accept bytes that do not match the dims\n"
    "  -f, --force             replace existing outputs\n"
    "  --json                  print a JSON document on stdout\n"
    "  --quiet                 print nothing but warnings and errors\n";

constexpr auto caffe_options = with_options(
    model_command_options, opt_output, opt_force, opt_writer, opt_to, value_option("--dialect"), repeated_option("--input-shape"),
    flag_option("--no-fold-bn"), flag_option("--check"), value_option("--tolerance"), flag_option("--report"),
    value_option("--check-dump"));  // testing: see export_caffe.hpp

result<std::pair<std::string, caffe::shape>> parse_input_shape(const std::string& text) {
    const auto eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
        return failure(error_code::invalid_argument,
                       "--input-shape takes NAME=DIMS, e.g. input=1,3,224,224 (got '" + text + "')");
    caffe::shape dims;
    std::string_view rest(text.data() + eq + 1, text.size() - eq - 1);
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const auto word = rest.substr(0, comma);
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
        if (ec != std::errc{} || end != word.data() + word.size() || v < 1 || v > (1LL << 31))
            return failure(error_code::invalid_argument,
                           "--input-shape dimensions are positive whole numbers (got '" + text + "')");
        dims.push_back(v);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return std::pair{text.substr(0, eq), dims};
}

}  // namespace

int run_export_caffe(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("export", caffe_help, argv, caffe_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("export", "export takes exactly one MODEL");
    ops::export_caffe_options options;
    auto parse_all = [&]() -> result<void> {
        ONNXSTREAM_TRY(fill_rewrite_options(args, options));
        if (const auto out = args.value("--output")) {
            options.output = *out;
            ONNXSTREAM_TRY(ops::check_caffe_prefix(options.output));
        }
        if (const auto d = args.value("--dialect")) {
            if (*d == "opencv") options.dialect = caffe::dialect::opencv;
            else if (*d == "bvlc") options.dialect = caffe::dialect::bvlc;
            else return failure(error_code::invalid_argument, "--dialect takes opencv or bvlc (got '" + *d + "')");
        }
        for (const auto& s : args.values("--input-shape")) {
            ONNXSTREAM_ASSIGN(auto parsed, parse_input_shape(s));
            if (options.input_shapes.contains(parsed.first))
                return failure(error_code::invalid_argument, "--input-shape gives '" + parsed.first + "' twice");
            options.input_shapes.insert(std::move(parsed));
        }
        options.fold_batchnorm = !args.flag("--no-fold-bn");
        options.check = args.flag("--check");
        if (const auto t = args.value("--tolerance")) {
            if (!options.check) return failure(error_code::invalid_argument, "--tolerance needs --check");
            char* end = nullptr;
            options.tolerance = std::strtod(t->c_str(), &end);
            if (end == t->c_str() || *end != '\0' || !(options.tolerance > 0))
                return failure(error_code::invalid_argument,
                               "--tolerance takes a positive number such as 1e-4 (got '" + *t + "')");
        }
        options.report = args.flag("--report");
        if (const auto d = args.value("--check-dump")) options.check_dump = *d;
        return {};
    };
    if (auto parsed = parse_all(); !parsed) return usage_error("export", parsed.error().message);
    const auto report = run_with_progress(options, context, p.flags,
                                          [&] { return ops::export_caffe(args.positionals[0], options); });
    if (!report) return fail(report.error(), p.flags.json);
    print_warnings(report->warnings);
    if (p.flags.json) print_json(report::to_json(*report, options.tolerance));
    if (!report->refusals.empty()) {
        print_text(stderr, "%s", report::refusals_text(*report, flag_wording()).c_str());
        return exit_failed;
    }
    if (!p.flags.json && !p.flags.quiet) print_out(report::to_text(*report));
    if (report->check.ran && !report->check.passed) {
        std::fprintf(
            stderr,
            "onnxstream: error: the export differs from the original by %.3g of the output's magnitude (tolerance %.3g)\n"
            "  the files were written for inspection; --report shows the error of every layer\n",
            report->check.max_relative_error, options.tolerance);
        return exit_failed;
    }
    return exit_ok;
}

}  // namespace onnxstream::cli
