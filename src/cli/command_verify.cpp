#include "cli_common.hpp"

#include <onnxstream/ops/verify.hpp>

#include <algorithm>
#include <array>
#include <cstdio>

namespace onnxstream::cli {
namespace {

constexpr std::string_view verify_help =
    "usage: onnxstream verify MODEL [--data FILE]... [--data-dir DIR]... [--json]\n"
    "\n"
    "Checks that a model is whole, without changing anything: the .onnx tokenizes and every\n"
    "tensor in it reads; every external data file is found and holds each tensor's bytes\n"
    "(in bounds, dims x element size); every SHA-1 'checksum' key matches its bytes (read\n"
    "through a small buffer, never loaded). Each problem names the tensor, its file and\n"
    "what is wrong.\n"
    "\n"
    "Exit status: 0 clean, 1 problems found (or the model cannot be read), 2 usage error.\n"
    "\n"
    "  --data FILE      an external data file (matched by name; a single one serves all)\n"
    "  --data-dir DIR   a folder to look for external data files in\n"
    "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
    "                    mismatches); accept bytes that do not match the dims\n"
    "  -j, --threads N  hashing threads (default: the number of cores)\n"
    "  --json           print a JSON document on stdout; \"ok\" is true when clean\n"
    "  --quiet          print only the problems\n";

constexpr auto verify_options = with_options(model_command_options, opt_threads);

}  // namespace

int run_verify(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("verify", verify_help, argv, verify_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("verify", "verify takes exactly one MODEL");
    ops::verify_options options;
    static_cast<onnx::open_options&>(options) = open_options_from(args);
    if (auto threads = read_threads(args, options.threads); !threads) return usage_error("verify", threads.error().message);
    const auto report = run_with_progress(options, context, p.flags, [&] { return ops::verify(args.positionals[0], options); });
    if (!report) return fail(report.error(), p.flags.json);
    if (p.flags.json) print_json(report::to_json(*report, flag_wording()));
    else
        print_out(
            report::to_text(*report, flag_wording(), p.flags.quiet ? report::text_detail::findings : report::text_detail::full));
    if (report->clean()) return exit_ok;
    // The problems are the report (stdout); stderr still says the run did not pass, and
    // what helps: an intact data file under another name needs a name or --data, not a
    // download.
    const auto misnamed = [&report](const ops::verify_problem& problem) {
        return problem.check == ops::verify_check::data && problem.tensor.empty() &&
               std::any_of(report->files.begin(), report->files.end(),
                           [&problem](const ops::verified_file& f) { return f.guessed && f.location == problem.location; });
    };
    const bool only_misnamed = std::all_of(report->problems.begin(), report->problems.end(), misnamed);
    print_text(stderr, "onnxstream: error: %s found in %s\n  %s\n", plural(report->problems.size(), "problem").c_str(),
               report->path.string().c_str(),
               p.flags.json    ? "they are listed in the JSON document"
               : only_misnamed ? "the data is whole but not where the model says: rename the file as the model names it "
                                 "(listed above), pass it with --data, or run 'onnxstream merge' to embed it"
                               : "each is listed above with its tensor and file; fetch damaged or missing data again, "
                                 "or re-export the model");
    return exit_failed;
}

}  // namespace onnxstream::cli
