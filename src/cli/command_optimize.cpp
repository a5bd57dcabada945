#include "cli_common.hpp"

#include <onnxstream/ops/optimize.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <string>

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
        "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
        "                    mismatches); accept bytes that do not match the dims\n"
        "  -f, --force       replace existing outputs\n"
        "  --json            print a JSON document on stdout\n"
        "  --quiet           print nothing but warnings and errors\n";
    return text;
}

constexpr auto optimize_options = with_options(model_command_options, opt_output, opt_force, opt_writer, opt_threads,
                                               value_option("--passes"), value_option("--fold-limit"), flag_option("--dry-run"),
                                               flag_option("--reuse-data"));

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
        ONNXSTREAM_TRY(read_size(args, "--fold-limit", options.fold_limit));
        options.dry_run = args.flag("--dry-run");
        options.keep_findings = p.flags.json;  // the text shows each pass's totals and skips
        options.reuse_data = args.flag("--reuse-data");
        return {};
    };
    if (auto parsed = parse_all(); !parsed) return usage_error("optimize", parsed.error().message);
    const auto report = run_with_progress(options, context, p.flags, [&] { return ops::optimize(args.positionals[0], options); });
    // The JSON is streamed (print_json of a writing function): a million findings make a
    // document of a hundred megabytes, never held whole.
    const auto json = [](const ops::optimize_report& r) {
        return std::function<void(json_writer&)>([&r](json_writer& writer) { report::write_json(writer, r); });
    };
    return show(report, p.flags, json, [](const auto& r) { return report::to_text(r); });
}

}  // namespace onnxstream::cli
