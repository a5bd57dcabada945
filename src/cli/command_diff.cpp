#include "cli_common.hpp"

#include <onnxstream/ops/diff.hpp>

#include <array>

namespace onnxstream::cli {
namespace {

constexpr std::string_view diff_help =
    "usage: onnxstream diff A B [--data FILE]... [--data-dir DIR]... [--json]\n"
    "\n"
    "Compares two models as models, not as files: the same graph (nodes, attributes, inputs\n"
    "and outputs, functions, opsets, metadata) and the same tensors (name, type, dims and\n"
    "values, hashed while streaming). Where the bytes live does not count: embedded or\n"
    "external, raw or typed fields, file layout, alignment, checksum keys. Says whether the\n"
    "two .onnx files are byte-identical too. External data is found beside each model, or\n"
    "through --data / --data-dir (which serve both).\n"
    "\n"
    "Exit status (as cmp): 0 equivalent, 1 different, 2 trouble (unreadable model, missing\n"
    "data, usage error).\n"
    "\n"
    "  --data FILE, --data-dir DIR   where the models' external data is\n"
    "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
    "                    mismatches); accept bytes that do not match the dims\n"
    "  -j, --threads N  hashing threads (default: the number of cores)\n"
    "  --json           print a JSON document on stdout; \"ok\" is true when equivalent\n"
    "  --quiet          print nothing; the exit status says it all\n";

constexpr auto diff_options = with_options(model_command_options, opt_threads);

constexpr int exit_trouble = 2;

}  // namespace

int run_diff(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("diff", diff_help, argv, diff_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 2) return usage_error("diff", "diff takes exactly two models, A and B");
    ops::diff_options options;
    static_cast<onnx::open_options&>(options) = open_options_from(args);
    if (auto threads = read_threads(args, options.threads); !threads) return usage_error("diff", threads.error().message);
    const auto report = run_with_progress(options, context, p.flags,
                                          [&] { return ops::diff(args.positionals[0], args.positionals[1], options); });
    const int status = show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
    if (!report) return status == exit_interrupted ? status : exit_trouble;
    return report->equivalent ? exit_ok : exit_failed;
}

}  // namespace onnxstream::cli
