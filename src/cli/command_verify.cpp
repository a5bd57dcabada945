#include "cli_common.hpp"

#include <onnxstream/ops/verify.hpp>

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
    "  -j, --threads N  hashing threads (default: the number of cores)\n"
    "  --json           print a JSON document on stdout; \"ok\" is true when clean\n"
    "  --quiet          print only the problems\n";

constexpr std::array verify_options{opt_help, opt_quiet, opt_json, opt_data, opt_data_dir, opt_threads};

std::string where(const ops::verify_problem& p) {
    std::string text;
    if (!p.tensor.empty()) text += "tensor '" + p.tensor + "'";
    if (!p.location.empty()) {
        text += (text.empty() ? "" : " in ") + p.location;
        if (p.file && p.file->filename().string() != p.location) text += " (" + p.file->string() + ")";
    }
    return text;
}

void print_json(const ops::verify_report& r) { print_text(stdout, "%s\n", report::to_json(r).c_str()); }

void print_report(const ops::verify_report& r, bool quiet) {
    for (const auto& p : r.problems) {
        const auto place = where(p);
        print_text(stdout, "problem: [%s] %s%s%s\n", to_string(p.check), terminal_safe(place).c_str(), place.empty() ? "" : ": ",
                           terminal_safe(p.what.describe()).c_str());
        if (!p.what.hint.empty()) print_text(stdout, "  %s\n", p.what.hint.c_str());
    }
    if (quiet) return;
    for (const auto& n : r.notes) print_text(stdout, "note: %s\n", terminal_safe(n).c_str());
    print_text(stdout, "%s: %s", r.path.string().c_str(), r.clean() ? "OK" : plural(r.problems.size(), "problem").c_str());
    if (r.structure_ok) {
        print_text(stdout, " (%s, %llu external in %s; ", plural(r.tensors, "tensor").c_str(),
                           static_cast<unsigned long long>(r.external_tensors), plural(r.files.size(), "file").c_str());
        if (r.checksums == 0) print_text(stdout, "no checksums)");
        else
            print_text(stdout, "%llu of %s match, %s hashed)", static_cast<unsigned long long>(r.checksums_matched),
                               plural(r.checksums, "checksum").c_str(), human_bytes(r.bytes_hashed).c_str());
    }
    print_text(stdout, "\n");
}

}  // namespace

int run_verify(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("verify", verify_help, argv, verify_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("verify", "verify takes exactly one MODEL");
    ops::verify_options options;
    options.data = data_options(args);
    if (const auto threads = args.value("--threads")) {
        auto parsed = parse_count(*threads, "--threads");
        if (!parsed) return usage_error("verify", parsed.error().message);
        options.threads = *parsed;
    }
    options.cancel = context.cancel;
    progress_bar bar(!p.flags.quiet && !p.flags.json);
    options.on_progress = progress_to(bar);
    auto report = ops::verify(args.positionals[0], options);
    bar.finish();
    if (!report) return fail(report.error(), p.flags.json);
    if (p.flags.json) print_json(*report);
    else print_report(*report, p.flags.quiet);
    if (report->clean()) return exit_ok;
    // The problems are the report (stdout); stderr still says the run did not pass.
    print_text(stderr, "onnxstream: error: %s found in %s\n  %s\n", plural(report->problems.size(), "problem").c_str(),
               report->path.string().c_str(),
               p.flags.json ? "they are listed in the JSON document"
                            : "each is listed above with its tensor and file; fetch damaged or missing data again, "
                              "or re-export the model");
    return exit_failed;
}

}  // namespace onnxstream::cli
