// `export MODEL --to FORMAT ...`: finds the format and hands every word after `export`
// to that format's command, which parses the rest (its own options, --help).
#include "cli_common.hpp"

#include <array>
#include <cstdio>

namespace onnxstream::cli {
namespace {

struct export_format {
    std::string_view name;
    std::string_view summary;
    int (*run)(std::span<const std::string> args, const command_context& context);
};

constexpr std::array export_formats{
    export_format{"caffe", "a Caffe .prototxt + .caffemodel, BatchNorm folded, checked against the original", run_export_caffe},
    export_format{"safetensors", "the weights as safetensors (Hugging Face), optionally linked from the .onnx",
                  run_export_safetensors},
};

void print_help() {
    std::printf("usage: onnxstream export MODEL --to FORMAT [options]\n\nFormats:\n");
    for (const auto& f : export_formats)
        std::printf("  %-12.*s %.*s\n", static_cast<int>(f.name.size()), f.name.data(), static_cast<int>(f.summary.size()),
                    f.summary.data());
    std::printf("\n'onnxstream export --to FORMAT --help' lists a format's options.\n");
}

}  // namespace

int run_export(std::span<const std::string> args, const command_context& context) {
    std::optional<std::string> format;
    bool help = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& a = args[i];
        if (a == "--") break;
        if (a == "--to" && i + 1 < args.size()) format = args[i + 1];
        else if (a.starts_with("--to=")) format = a.substr(5);
        else if (a == "--help" || a == "-h") help = true;
    }
    if (!format) {
        if (help) {
            print_help();
            return exit_ok;
        }
        return usage_error("export", "export needs --to FORMAT (one of: caffe, safetensors)");
    }
    for (const auto& f : export_formats)
        if (f.name == *format) return f.run(args, context);
    std::string names;
    for (const auto& f : export_formats) names += (names.empty() ? "" : ", ") + std::string(f.name);
    return usage_error("export", "unknown export format '" + *format + "' (one of: " + names + ")");
}

}  // namespace onnxstream::cli
