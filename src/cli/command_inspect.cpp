#include "cli_common.hpp"

#include <onnxstream/ops/inspect.hpp>

#include <array>

namespace onnxstream::cli {
namespace {

// ---------------------------------------------------------------- inspect

constexpr std::string_view inspect_help =
    "usage: onnxstream inspect MODEL [--data FILE]... [--data-dir DIR]... [--json]\n"
    "\n"
    "What a model is and what it needs: IR version, opsets, producer, inputs and outputs,\n"
    "nodes per op type, tensors per data type, subgraphs and functions, and every external\n"
    "data file (how it was found, or every place tried; tensors and bytes it must hold; its\n"
    "real size; problems). Ends with the size the merged model would have and whether it\n"
    "fits in one .onnx file (under 2 GB). Weights are never read.\n"
    "\n"
    "  --data FILE      an external data file (matched by name; a single one serves all)\n"
    "  --data-dir DIR   a folder to look for external data files in\n"
    "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
    "                    mismatches); accept bytes that do not match the dims\n"
    "  --json           print a JSON document on stdout\n"
    "  --quiet          print nothing but warnings and errors\n";

constexpr auto inspect_options = model_command_options;

}  // namespace

int run_inspect(std::span<const std::string> argv, const command_context&) {
    auto p = prepare("inspect", inspect_help, argv, inspect_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("inspect", "inspect takes exactly one MODEL");
    const auto report = ops::inspect(args.positionals[0], open_options_from(args));
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r, flag_wording()); },
        [](const auto& r) { return report::to_text(r, flag_wording()); });
}

}  // namespace onnxstream::cli
