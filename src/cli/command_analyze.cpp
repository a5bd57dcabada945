#include "cli_common.hpp"

#include <onnxstream/ops/analyze.hpp>

#include <array>
#include <cstdio>
#include <map>

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
    "  --json           print a JSON document on stdout\n"
    "  --quiet          print nothing but warnings and errors\n";

constexpr std::array analyze_options{opt_help, opt_quiet, opt_json, opt_data, opt_data_dir};

using passes::finding_kind;

std::string describe(const passes::finding& f) {
    std::string text;
    if (!f.op_type.empty()) text += terminal_safe(f.op_type) + " ";
    for (std::size_t i = 0; i < f.names.size() && i < 8; ++i) text += (i ? ", " : "") + terminal_safe(f.names[i]);
    if (f.names.size() > 8) text += ", ... (" + std::to_string(f.names.size()) + ")";
    std::string saves;
    if (f.nodes > 0) saves += plural(f.nodes, "node");
    if (f.bytes > 0) saves += (saves.empty() ? "" : ", ") + human_bytes(f.bytes);
    if (!saves.empty()) text += " [" + saves + "]";
    if (!f.detail.empty()) text += ": " + terminal_safe(f.detail);
    return text;
}

void print_json(const ops::analyze_report& r) { print_text(stdout, "%s\n", report::to_json(r).c_str()); }

void print_report(const ops::analyze_report& r) {
    print_text(stdout, "%s: %s, %s (%s)\n", r.path.string().c_str(), plural(r.nodes, "node").c_str(),
                       plural(r.initializers, "initializer").c_str(), human_bytes(r.initializer_bytes).c_str());
    bool any = false;
    for (const auto& scope : r.scopes) {
        bool header = false;
        for (const auto& c : report::analyze_categories()) {
            std::vector<const passes::finding*> items;
            for (const auto& f : r.findings)
                if (f.kind == c.kind && f.scope == scope) items.push_back(&f);
            if (items.empty()) continue;
            if (!header) print_text(stdout, "%s\n", scope.c_str());
            header = any = true;
            print_text(stdout, "  %s: %zu\n", c.title, items.size());
            for (std::size_t i = 0; i < items.size() && i < 20; ++i) print_text(stdout, "    %s\n", describe(*items[i]).c_str());
            if (items.size() > 20) print_text(stdout, "    ... and %zu more (--json lists all)\n", items.size() - 20);
        }
    }
    if (!any) {
        print_text(stdout, "  nothing redundant found\n");
        return;
    }
    print_text(stdout, "summary:\n");
    for (const auto& c : report::analyze_categories()) {
        const auto t = r.totals(c.kind);
        if (t.count == 0) continue;
        print_text(stdout, "  %-26s %6llu", c.title, static_cast<unsigned long long>(t.count));
        if (t.nodes > 0) print_text(stdout, "  %s", plural(t.nodes, "node").c_str());
        if (t.bytes > 0) print_text(stdout, "  %s", human_bytes(t.bytes).c_str());
        print_text(stdout, "\n");
    }
    print_text(stdout, "  %s removable in all (each counted once)\n", plural(r.removable_nodes, "node").c_str());
}

}  // namespace

int run_analyze(std::span<const std::string> argv, const command_context&) {
    auto p = prepare("analyze", analyze_help, argv, analyze_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("analyze", "analyze takes exactly one MODEL");
    auto report = ops::analyze(args.positionals[0], data_options(args));
    if (!report) return fail(report.error(), p.flags.json);
    for (const auto& w : report->warnings) print_warning(w);
    if (p.flags.json) print_json(*report);
    else if (!p.flags.quiet) print_report(*report);
    return exit_ok;
}

}  // namespace onnxstream::cli
