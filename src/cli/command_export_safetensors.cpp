#include "cli_common.hpp"

#include <onnxstream/ops/export_safetensors.hpp>

#include <array>

namespace onnxstream::cli {
namespace {

constexpr std::string_view safetensors_help =
    "usage: onnxstream export MODEL --to safetensors [-o OUT] [--shard-size BYTES] [--link] [--force] [--json]\n"
    "\n"
    "Writes every initializer (name, dtype, shape) into a safetensors file, copying the bytes\n"
    "as they are (no conversion, no loading). Default output <stem>.safetensors beside the\n"
    "model. Names safetensors cannot hold, duplicate names and types it has no dtype for\n"
    "(strings, complex, 4-bit) are refused before anything is written.\n"
    "\n"
    "  --to safetensors      the format\n"
    "  -o, --output OUT      the safetensors file (sharded: the base of the shard names)\n"
    "  --shard-size BYTES    the Hugging Face sharded layout: <stem>-00001-of-0000N.safetensors\n"
    "                        of at most BYTES of data each, plus <stem>.safetensors.index.json\n"
    "  --link                also write <stem>.linked.onnx beside the output, whose weights are\n"
    "                        external data inside the safetensors file(s): one copy for both\n"
    "  --data FILE, --data-dir DIR   where the input's external data is\n"
    "  --strict              refuse a data file found only by a guess; a SHA-1 mismatch fails\n"
    "  -f, --force           replace existing outputs (never the inputs)\n"
    "  --json, --quiet       as everywhere\n";

constexpr auto safetensors_options = with_options(rewrite_command_options, opt_to, opt_shard_size, flag_option("--link"));

}  // namespace

int run_export_safetensors(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("export", safetensors_help, argv, safetensors_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("export", "export takes exactly one MODEL");
    ops::safetensors_options options;
    auto parse_all = [&]() -> result<void> {
        ONNXSTREAM_TRY(fill_rewrite_options(args, options));
        if (const auto out = args.value("--output")) options.output = *out;
        ONNXSTREAM_TRY(read_shard_size(args, options.shard_size));
        options.link = args.flag("--link");
        return {};
    };
    if (auto parsed = parse_all(); !parsed) return usage_error("export", parsed.error().message);
    const auto report = run_with_progress(options, context, p.flags,
                                          [&] { return ops::export_safetensors(args.positionals[0], options); });
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
}

}  // namespace onnxstream::cli
