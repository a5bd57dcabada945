#include "cli_common.hpp"

#include <onnxstream/ops/optimize.hpp>

#include <array>
#include <cstdio>

namespace onnxstream::cli {
namespace {

constexpr std::string_view optimize_help =
    "usage: onnxstream optimize MODEL [-o OUT] [--passes LIST] [--dry-run] [--force] [--reuse-data]\n"
    "\n"
    "Runs graph passes until nothing changes and writes the result (default: <stem>.optimized.onnx\n"
    "beside the input), printing what each pass removed or folded. Weights are read only where\n"
    "a pass needs them (the weights being folded, BatchNorm parameters, conditions, samples of\n"
    "same-shaped initializers); the rest is copied. An embedded model stays embedded; a model\n"
    "with external data gets a new data file <output file name>.data with the surviving and\n"
    "new tensors (--reuse-data: the original data files stay referenced).\n"
    "\n"
    "  --passes LIST     comma-separated, in this order by default: dce,const-if,cse,identity,fold-bn\n"
    "                      dce       dead nodes, unused initializers, value_info and local functions\n"
    "                      const-if  If with a constant condition -> the branch taken; Loop that never runs\n"
    "                      cse       duplicate nodes and identical initializers merged\n"
    "                      identity  Identity and inference-mode Dropout removed\n"
    "                      fold-bn   BatchNormalization folded into Conv, ConvTranspose, Gemm\n"
    "  -o, --output OUT  the output model\n"
    "  --dry-run         run the passes and report, write nothing\n"
    "  --reuse-data      point at the input's data files instead of copying them (they must be\n"
    "                    inside the output's folder)\n"
    "  -f, --force       replace existing outputs\n"
    "  --json            print a JSON document on stdout\n"
    "  --quiet           print nothing but warnings and errors\n";

constexpr std::array optimize_options{opt_help, opt_quiet, opt_json, opt_output, opt_force, opt_writer, opt_threads,
                                      option_spec{"--passes", "", true, false},
                                      option_spec{"--dry-run", "", false, false},
                                      option_spec{"--reuse-data", "", false, false}};

using passes::finding_kind;


std::string summary_line(const ops::pass_result& pass, bool dry_run) {
    const auto s = report::totals(pass);
    std::string line;
    auto add = [&](const std::string& part) { line += (line.empty() ? "" : ", ") + part; };
    if (pass.name == "fold-bn") add((dry_run ? "would fold " : "folded ") + plural(s.folded, "BatchNormalization"));
    if (pass.name == "const-if") add((dry_run ? "would replace " : "replaced ") + plural(s.branches, "If/Loop"));
    if (s.nodes > 0 || pass.name != "fold-bn") add((dry_run ? "would remove " : "removed ") + plural(s.nodes, "node"));
    if (s.initializers > 0) add(plural(s.initializers, "initializer") + " (" + human_bytes(s.bytes) + ")");
    if (s.value_info > 0) add(plural(s.value_info, "value_info"));
    if (s.functions > 0) add(plural(s.functions, "function"));
    if (s.skipped > 0) add(std::to_string(s.skipped) + " skipped");
    return line;
}

void print_json(const ops::optimize_report& r) { std::printf("%s\n", report::to_json(r).c_str()); }

void print_text(const ops::optimize_report& r) {
    if (r.dry_run) std::printf("%s (dry run, nothing written)", r.input.string().c_str());
    else std::printf("%s -> %s (%s)", r.input.string().c_str(), r.output.string().c_str(), human_bytes(r.output_size).c_str());
    if (r.rounds == 0) std::printf(", nothing to change\n");
    else std::printf(", %s until nothing changed\n", plural(r.rounds, "round").c_str());
    for (const auto& f : r.data_files)
        std::printf("  data %s: %s, %s\n", f.path.string().c_str(), plural(f.tensors, "tensor").c_str(),
                    human_bytes(f.size).c_str());
    std::printf("  nodes %llu -> %llu (main graph %llu -> %llu), initializers %llu -> %llu (%s -> %s)\n",
                static_cast<unsigned long long>(r.before.nodes), static_cast<unsigned long long>(r.after.nodes),
                static_cast<unsigned long long>(r.before.main_graph_nodes),
                static_cast<unsigned long long>(r.after.main_graph_nodes),
                static_cast<unsigned long long>(r.before.initializers), static_cast<unsigned long long>(r.after.initializers),
                human_bytes(r.before.initializer_bytes).c_str(), human_bytes(r.after.initializer_bytes).c_str());
    for (const auto& pass : r.passes) {
        std::printf("  %-9s %s\n", (pass.name + ":").c_str(), summary_line(pass, r.dry_run).c_str());
        std::size_t shown = 0;
        for (const auto& f : pass.findings) {
            if (f.kind != finding_kind::skipped) continue;
            if (++shown > 10) {
                std::printf("    ... (--json lists every skip)\n");
                break;
            }
            std::printf("    skipped %s%s: %s\n", f.op_type.empty() ? "" : (f.op_type + " ").c_str(),
                        f.names.empty() ? "" : f.names[0].c_str(), f.detail.c_str());
        }
    }
}

}  // namespace

int run_optimize(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("optimize", optimize_help, argv, optimize_options);
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
    else if (!p.flags.quiet) print_text(*report);
    return exit_ok;
}

}  // namespace onnxstream::cli
