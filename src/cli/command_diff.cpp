#include "cli_common.hpp"

#include <onnxstream/ops/diff.hpp>

#include <array>
#include <cstdio>

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
    "  -j, --threads N  hashing threads (default: the number of cores)\n"
    "  --json           print a JSON document on stdout; \"ok\" is true when equivalent\n"
    "  --quiet          print nothing; the exit status says it all\n";

constexpr std::array diff_options{opt_help, opt_quiet, opt_json, opt_threads, opt_data, opt_data_dir};

constexpr int exit_trouble = 2;

void print_json(const ops::diff_report& r) { print_text(stdout, "%s\n", report::to_json(r).c_str()); }

void print_report(const ops::diff_report& r) {
    const auto a = r.a.string();
    const auto b = r.b.string();
    if (r.equivalent) {
        print_text(stdout, "%s and %s are equivalent%s\n", a.c_str(), b.c_str(),
                           r.byte_identical ? " (the .onnx files are byte-identical)" : " (stored differently)");
        return;
    }
    print_text(stdout, "%s and %s differ: %s, %s, %s%s\n", a.c_str(), b.c_str(), plural(r.differing_tensors, "tensor").c_str(),
                       plural(r.differing_nodes, "node").c_str(), plural(r.other_differences, "other difference").c_str(),
                       r.byte_identical ? " (yet the .onnx files are byte-identical: their external data differs)" : "");
    for (const auto& d : r.differences) {
        const char* side = d.kind == ops::difference_kind::only_in_b ? " [B]" : "";
        print_text(stdout, "  %s%s%s at %s%s: %s\n", d.what.c_str(), d.name.empty() ? "" : " '", d.name.empty() ? "" : (terminal_safe(d.name) + "'").c_str(),
                           terminal_safe(d.path).c_str(), side, terminal_safe(d.detail).c_str());
    }
    const auto listed = r.differences.size();
    const auto total = r.differing_tensors + r.differing_nodes + r.other_differences;
    if (total > listed) print_text(stdout, "  ... and %llu more\n", static_cast<unsigned long long>(total - listed));
}

}  // namespace

int run_diff(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("diff", diff_help, argv, diff_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 2) return usage_error("diff", "diff takes exactly two models, A and B");
    ops::diff_options options;
    options.data = data_options(args);
    if (const auto threads = args.value("--threads")) {
        auto parsed = parse_count(*threads, "--threads");
        if (!parsed) return usage_error("diff", parsed.error().message);
        options.threads = *parsed;
    }
    options.cancel = context.cancel;
    progress_bar bar(!p.flags.quiet && !p.flags.json);
    options.on_progress = progress_to(bar);
    auto report = ops::diff(args.positionals[0], args.positionals[1], options);
    bar.finish();
    if (!report) {
        const int status = fail(report.error(), p.flags.json);
        return status == exit_interrupted ? status : exit_trouble;
    }
    for (const auto& w : report->warnings) print_warning(w);
    if (p.flags.json) print_json(*report);
    else if (!p.flags.quiet) print_report(*report);
    return report->equivalent ? exit_ok : exit_failed;
}

}  // namespace onnxstream::cli
