#include "cli_common.hpp"

#include <onnxstream/ops/convert.hpp>

#include <array>
#include <cstdio>

namespace onnxstream::cli {
namespace {

constexpr std::string_view convert_help =
    "usage: onnxstream convert MODEL --dtype fp16|bf16 [-o OUT] [--keep-io-types] [--block-ops LIST]\n"
    "                          [--allow-saturation] [--data-name NAME] [--align BYTES] [--shard-size BYTES]\n"
    "                          [--force] [--json]\n"
    "\n"
    "Converts every float32 tensor the model computes with (initializers, Constant nodes,\n"
    "sparse tensors, subgraphs, functions) to float16 or bfloat16, slice by slice while\n"
    "writing: memory does not grow with the weights. Rounds to nearest even. A tensor with\n"
    "values beyond float16's +-65504 stays float32, and so do the nodes that read it; the\n"
    "report names it. Operators unsafe in half precision stay float32 behind inserted Cast\n"
    "nodes, and so does any node whose converted types the operator schemas would refuse.\n"
    "A model in 16 bits already is refused (nothing to convert). Default output\n"
    "<stem>.fp16.onnx (or .bf16.onnx); a model with external data, or one that would not\n"
    "fit in 2 GB, gets fresh aligned data files as repack lays them out.\n"
    "\n"
    "  --dtype fp16|bf16     the new precision (required)\n"
    "  -o, --output OUT      the output model\n"
    "  --keep-io-types       keep the graph's inputs and outputs float32 (Casts at the boundary)\n"
    "  --block-ops LIST      comma-separated operators kept in float32, replacing the default\n"
    "                        list (Resize, Upsample, TopK, NonMaxSuppression, Range, CumSum,\n"
    "                        Min, Max, RoiAlign and the ai.onnx.ml operators); '' blocks none\n"
    "  --allow-saturation    fp16: convert tensors with values beyond +-65504 too (they\n"
    "                        saturate to +-65504, counted) instead of keeping them float32\n"
    "  --data-name NAME      the data file's name (external layout; beside the output)\n"
    "  --align BYTES         offset alignment (default 4096 for tensors >= 1 MiB; 0 = dense)\n"
    "  --shard-size BYTES    several data files <name>-00001-of-0000N.data of at most BYTES\n"
    "  --data FILE, --data-dir DIR   where the input's external data is\n"
    "  --strict              refuse a data file found only by a guess; a SHA-1 mismatch fails\n"
    "  --allow-size-mismatch convert a tensor whose bytes do not match its dims (warning)\n"
    "  -f, --force           replace existing outputs (never the inputs)\n"
    "  --json, --quiet       as everywhere\n";

constexpr auto convert_options = with_options(rewrite_command_options, value_option("--dtype"), flag_option("--keep-io-types"),
                                              value_option("--block-ops"), flag_option("--allow-saturation"), opt_data_name,
                                              opt_align, opt_shard_size);

std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto comma = text.find(',', start);
        const auto piece = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (!piece.empty()) out.emplace_back(piece);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace

int run_convert(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("convert", convert_help, argv, convert_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("convert", "convert takes exactly one MODEL");
    ops::convert_options options;
    auto parse_all = [&]() -> result<void> {
        ONNXSTREAM_TRY(fill_rewrite_options(args, options));
        const auto dtype = args.value("--dtype");
        if (!dtype) return failure(error_code::invalid_argument, "convert needs --dtype fp16 or --dtype bf16");
        if (*dtype == "fp16" || *dtype == "float16") options.target = ops::half_type::float16;
        else if (*dtype == "bf16" || *dtype == "bfloat16") options.target = ops::half_type::bfloat16;
        else return failure(error_code::invalid_argument, "unknown --dtype '" + std::string(*dtype) + "' (use fp16 or bf16)");
        if (const auto out = args.value("--output")) options.output = *out;
        options.keep_io_types = args.flag("--keep-io-types");
        options.allow_saturation = args.flag("--allow-saturation");
        if (const auto v = args.value("--block-ops")) options.block_ops = split_list(*v);
        if (const auto v = args.value("--data-name")) options.data_name = *v;
        ONNXSTREAM_TRY(read_size(args, "--align", options.alignment));
        ONNXSTREAM_TRY(read_shard_size(args, options.shard_size));
        return {};
    };
    if (auto parsed = parse_all(); !parsed) return usage_error("convert", parsed.error().message);
    const auto report = run_with_progress(options, context, p.flags, [&] { return ops::convert(args.positionals[0], options); });
    const char* dtype = options.target == ops::half_type::float16 ? "float16" : "bfloat16";
    const int status = show(
        report, p.flags, [&](const auto& r) { return report::to_json(r, dtype); },
        [&](const auto& r) { return report::to_text(r, dtype); });
    if (!report) return status;
    const auto& r = *report;
    if (r.saturated > 0 && p.flags.json) {
        // Keep stdout pure JSON; still tell a person on stderr.
        std::fprintf(stderr, "onnxstream: warning: %llu values beyond the float16 range saturated to +-65504\n",
                     static_cast<unsigned long long>(r.saturated));
    }
    return exit_ok;
}

}  // namespace onnxstream::cli
