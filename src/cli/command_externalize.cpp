#include "cli_common.hpp"

#include <onnxstream/ops/externalize.hpp>

#include <array>

namespace onnxstream::cli {
namespace {

// ---------------------------------------------------------------- split and repack

constexpr std::string_view split_help =
    "usage: onnxstream split MODEL [-o OUT] [--data-name NAME] [--threshold BYTES] [--align BYTES]\n"
    "                        [--align-threshold BYTES] [--force]\n"
    "\n"
    "Moves tensors of at least --threshold bytes out of the model into one data file beside\n"
    "the output (default output <stem>.split.onnx, data file <output file name>.data).\n"
    "Strings and tensors a runtime reads while loading (Reshape shapes, Slice bounds, Resize\n"
    "scales, Range bounds...) stay embedded whatever the threshold.\n"
    "\n"
    "  -o, --output OUT      the output model\n"
    "  --data-name NAME      the data file's name (beside the output)\n"
    "  --threshold BYTES     smallest tensor to move out (default 1024; sizes take K, M, G)\n"
    "  --align BYTES         offset alignment of large tensors (default 4096; 0 = dense)\n"
    "  --align-threshold BYTES  smallest tensor to align (default 1M); smaller ones stay dense\n"
    "  --data FILE, --data-dir DIR   where the input's own external data is, if any\n"
    "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
    "                    mismatches); accept bytes that do not match the dims\n"
    "  -f, --force           replace existing outputs\n"
    "  --json, --quiet       as everywhere\n";

constexpr std::string_view repack_help =
    "usage: onnxstream repack MODEL [-o OUT] [--data-name NAME] [--threshold BYTES] [--align BYTES]\n"
    "                         [--align-threshold BYTES] [--shard-size BYTES] [--dedupe] [--write-checksums]\n"
    "                         [--threads N] [--force]\n"
    "\n"
    "Rewrites every tensor of at least --threshold bytes, wherever it is (embedded, one data\n"
    "file, a file per tensor, any mix), into a fresh aligned data file beside the output\n"
    "(default output <stem>.repacked.onnx, data <output file name>.data). Orphaned bytes are\n"
    "dropped. Works far past 2 GB: only the .onnx must stay under it.\n"
    "\n"
    "  -o, --output OUT      the output model\n"
    "  --data-name NAME      the data file's name (beside the output)\n"
    "  --threshold BYTES     smallest tensor to move out (default 1024)\n"
    "  --align BYTES         offset alignment of large tensors (default 4096; 0 = dense;\n"
    "                        65536 suits Windows mapping)\n"
    "  --align-threshold BYTES  smallest tensor to align (default 1M); smaller ones stay dense\n"
    "  --shard-size BYTES    several data files <name>-00001-of-0000N.data of at most BYTES;\n"
    "                        a tensor larger than BYTES gets a shard of its own\n"
    "  --dedupe              store identical tensors (same type and bytes) once\n"
    "  --write-checksums     write each tensor's SHA-1 into its 'checksum' key\n"
    "  --data FILE, --data-dir DIR   where the input's external data is\n"
    "  --strict, --allow-size-mismatch   refuse a data file found only by a guess (and SHA-1\n"
    "                    mismatches); accept bytes that do not match the dims\n"
    "  -j, --threads N       worker threads (default: the number of cores)\n"
    "  -f, --force           replace existing outputs, even the model's own files (repack in\n"
    "                        place: the old files are replaced only once the new ones are on disk)\n"
    "  --json, --quiet       as everywhere\n";

constexpr auto split_options = with_options(rewrite_command_options, opt_data_name, opt_threshold, opt_align,
                                            opt_align_threshold);

constexpr auto repack_options = with_options(rewrite_command_options, opt_data_name, opt_threshold, opt_align,
                                             opt_align_threshold, opt_shard_size, flag_option("--dedupe"),
                                             flag_option("--write-checksums"));

}  // namespace

int run_externalize(std::string_view name, std::string_view help, std::span<const option_spec> specs,
                    std::span<const std::string> argv, const command_context& context) {
    auto p = prepare(name, help, argv, specs);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error(name, std::string(name) + " takes exactly one MODEL");
    auto options = ops::externalize_defaults(name == "split" ? ops::externalize_kind::split : ops::externalize_kind::repack);
    auto parse_all = [&]() -> result<void> {
        ONNXSTREAM_TRY(fill_rewrite_options(args, options));
        if (const auto out = args.value("--output")) options.output = *out;
        if (const auto v = args.value("--data-name")) options.data_name = *v;
        ONNXSTREAM_TRY(read_size(args, "--threshold", options.threshold));
        ONNXSTREAM_TRY(read_size(args, "--align", options.alignment));
        ONNXSTREAM_TRY(read_size(args, "--align-threshold", options.align_threshold));
        ONNXSTREAM_TRY(read_shard_size(args, options.shard_size));
        options.dedupe = args.flag("--dedupe");
        options.write_checksums = args.flag("--write-checksums");
        return {};
    };
    if (auto parsed = parse_all(); !parsed) return usage_error(name, parsed.error().message);
    const auto report = run_with_progress(options, context, p.flags,
                                          [&] { return ops::externalize(args.positionals[0], options); });
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
}

int run_split(std::span<const std::string> argv, const command_context& context) {
    return run_externalize("split", split_help, split_options, argv, context);
}

int run_repack(std::span<const std::string> argv, const command_context& context) {
    return run_externalize("repack", repack_help, repack_options, argv, context);
}

}  // namespace onnxstream::cli
