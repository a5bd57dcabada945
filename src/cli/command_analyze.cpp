#include "cli_common.hpp"

#include <onnxstream/ops/analyze.hpp>

#include <array>

namespace onnxstream::cli {
namespace {

constexpr std::string_view analyze_help =
    "usage: onnxstream analyze MODEL [--data FILE]... [--data-dir DIR]... [--json]\n"
    "\n"
    "A redundancy report, per graph and subgraph: dead nodes (no output reaches a graph\n"
    "output), isolated components (connected to neither the inputs nor the outputs), dead\n"
    "branches (If whose condition is constant, Loop that never runs), duplicate computations,\n"
    "duplicate and unused initializers, Identity and no-op Dropout nodes, and graph inputs\n"
    "nothing uses (reported, never removed), nodes of constant inputs that fold, Shape/Size of\n"
    "static shapes, and no-op nodes (Cast to its own type, Reshape to the same shape...). Each\n"
    "with the nodes and initializer bytes its removal would save; 'onnxstream optimize' removes\n"
    "them. Nothing is written.\n"
    "\n"
    "  --data FILE, --data-dir DIR   where the model's external data is\n"
    "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
    "                    mismatches); accept bytes that do not match the dims\n"
    "  --json           print a JSON document on stdout\n"
    "  --quiet          print nothing but warnings and errors\n";

constexpr auto analyze_options = model_command_options;

}  // namespace

int run_analyze(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("analyze", analyze_help, argv, analyze_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("analyze", "analyze takes exactly one MODEL");
    ops::analyze_options options;
    static_cast<onnx::open_options&>(options) = open_options_from(args);
    const auto report = run_with_progress(options, context, p.flags, [&] { return ops::analyze(args.positionals[0], options); });
    if (!report) return fail(report.error(), p.flags.json);
    print_warnings(report->warnings);
    // A million findings make a document of a hundred megabytes: streamed, never whole.
    if (p.flags.json) print_json([&report](json_writer& json) { report::write_json(json, *report); });
    else if (!p.flags.quiet) print_out(report::to_text(*report));
    return exit_ok;
}

}  // namespace onnxstream::cli
