#include "cli_common.hpp"

#include <onnxstream/ops/optimize.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <cstdio>

namespace onnxstream::cli {
namespace {

// The help text; the pass list comes from the registry.
std::string optimize_help() {
    std::string text =
        "usage: onnxstream optimize MODEL [-o OUT] [--passes LIST] [--fold-limit BYTES] [--dry-run] [--force]\n"
        "                           [--reuse-data] [--data FILE]... [--data-dir DIR]...\n"
        "\n"
        "Runs graph passes until nothing changes and writes the result (default: <stem>.optimized.onnx\n"
        "beside the input), printing what each pass removed or folded. Weights are read only where\n"
        "a pass needs them (the weights being folded, BatchNorm parameters, conditions, constants\n"
        "being folded, samples of same-shaped initializers); the rest is copied. An embedded model\n"
        "stays embedded; a model with external data gets a new data file <output file name>.data\n"
        "with the surviving and new tensors (--reuse-data: the original data files stay referenced).\n"
        "\n"
        "  --passes LIST     comma-separated; by default all, in this order:\n"
        "                      " +
        passes::pass_names(",") + "\n";
    for (const auto& pass : passes::pass_registry()) {
        std::string name(pass.name);
        name.resize(std::max<std::size_t>(name.size() + 1, 15), ' ');
        text += "                      " + name + std::string(pass.summary) + "\n";
    }
    text +=
        "  --fold-limit BYTES the largest tensor folding may create or read (default 1M)\n"
        "  -o, --output OUT  the output model\n"
        "  --dry-run         run the passes and report, write nothing\n"
        "  --reuse-data      point at the input's data files instead of copying them (they must be\n"
        "                    inside the output's folder)\n"
        "  --data FILE, --data-dir DIR   where the input's external data is\n"
        "  -f, --force       replace existing outputs\n"
        "  --json            print a JSON document on stdout\n"
        "  --quiet           print nothing but warnings and errors\n";
    return text;
}

constexpr std::array optimize_options{opt_help, opt_quiet, opt_json, opt_output, opt_force, opt_writer, opt_threads,
                                      opt_data, opt_data_dir,
                                      option_spec{"--passes", "", true, false},
                                      option_spec{"--fold-limit", "", true, false},
                                      option_spec{"--dry-run", "", false, false},
                                      option_spec{"--reuse-data", "", false, false}};

using passes::finding_kind;


std::string summary_line(const ops::pass_result& pass, bool dry_run) {
    const auto s = report::totals(pass);
    std::string line;
    auto add = [&](const std::string& part) { line += (line.empty() ? "" : ", ") + part; };
    const auto* entry = passes::find_pass(pass.name);
    if (entry != nullptr && entry->headline.kind != finding_kind::skipped) {
        const auto& h = entry->headline;
        const auto count = std::count_if(pass.findings.begin(), pass.findings.end(),
                                         [&](const passes::finding& f) { return f.kind == h.kind; });
        add(std::string(dry_run ? h.would : h.done) + " " + plural(static_cast<std::uint64_t>(count), h.noun));
    }
    if (s.nodes > 0 || entry == nullptr || entry->always_count_nodes)
        add((dry_run ? "would remove " : "removed ") + plural(s.nodes, "node"));
    if (s.initializers > 0) add(plural(s.initializers, "initializer") + " (" + human_bytes(s.bytes) + ")");
    if (s.value_info > 0) add(plural(s.value_info, "value_info"));
    if (s.functions > 0) add(plural(s.functions, "function"));
    if (s.skipped > 0) add(std::to_string(s.skipped) + " skipped");
    return line;
}

void print_json(const ops::optimize_report& r) { print_text(stdout, "%s\n", report::to_json(r).c_str()); }

void print_report(const ops::optimize_report& r) {
    if (r.dry_run) print_text(stdout, "%s (dry run, nothing written)", r.input.string().c_str());
    else print_text(stdout, "%s -> %s (%s)", r.input.string().c_str(), r.output.string().c_str(), human_bytes(r.output_size).c_str());
    if (r.rounds == 0) print_text(stdout, ", nothing to change\n");
    else print_text(stdout, ", %s until nothing changed\n", plural(r.rounds, "round").c_str());
    for (const auto& f : r.data_files)
        print_text(stdout, "  data %s: %s, %s\n", f.path.string().c_str(), plural(f.tensors, "tensor").c_str(),
                           human_bytes(f.size).c_str());
    print_text(stdout, "  nodes %llu -> %llu (main graph %llu -> %llu), initializers %llu -> %llu (%s -> %s)\n",
                       static_cast<unsigned long long>(r.before.nodes), static_cast<unsigned long long>(r.after.nodes),
                       static_cast<unsigned long long>(r.before.main_graph_nodes),
                       static_cast<unsigned long long>(r.after.main_graph_nodes),
                       static_cast<unsigned long long>(r.before.initializers), static_cast<unsigned long long>(r.after.initializers),
                       human_bytes(r.before.initializer_bytes).c_str(), human_bytes(r.after.initializer_bytes).c_str());
    int width = 0;
    for (const auto& pass : r.passes) width = std::max(width, static_cast<int>(pass.name.size() + 1));
    for (const auto& pass : r.passes) {
        print_text(stdout, "  %-*s %s\n", width, (pass.name + ":").c_str(), summary_line(pass, r.dry_run).c_str());
        std::size_t shown = 0;
        for (const auto& f : pass.findings) {
            if (f.kind != finding_kind::skipped) continue;
            if (++shown > 10) {
                print_text(stdout, "    ... (--json lists every skip)\n");
                break;
            }
            print_text(stdout, "    skipped %s%s: %s\n", f.op_type.empty() ? "" : (f.op_type + " ").c_str(),
                               f.names.empty() ? "" : f.names[0].c_str(), f.detail.c_str());
        }
    }
}

}  // namespace

int run_optimize(std::span<const std::string> argv, const command_context& context) {
    const auto help = optimize_help();
    auto p = prepare("optimize", help, argv, optimize_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("optimize", "optimize takes exactly one MODEL");
    ops::optimize_options options;
    auto parse_all = [&]() -> result<void> {
        ONNXSTREAM_TRY(fill_rewrite_options(args, options));
        if (const auto out = args.value("--output")) options.output = *out;
        if (const auto list = args.value("--passes")) {
            ONNXSTREAM_ASSIGN(options.passes, ops::parse_pass_list(*list));
        }
        if (const auto limit = args.value("--fold-limit")) {
            ONNXSTREAM_ASSIGN(options.fold_limit, parse_size(*limit, "--fold-limit"));
        }
        options.dry_run = args.flag("--dry-run");
        options.reuse_data = args.flag("--reuse-data");
        return {};
    };
    if (auto parsed = parse_all(); !parsed) return usage_error("optimize", parsed.error().message);
    options.cancel = context.cancel;
    progress_bar bar(!p.flags.quiet && !p.flags.json);
    options.on_progress = progress_to(bar);
    auto report = ops::optimize(args.positionals[0], options);
    bar.finish();
    if (!report) return fail(report.error(), p.flags.json);
    for (const auto& w : report->warnings) print_warning(w);
    if (p.flags.json) print_json(*report);
    else if (!p.flags.quiet) print_report(*report);
    return exit_ok;
}

}  // namespace onnxstream::cli
