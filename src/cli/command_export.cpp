// `export MODEL --to FORMAT ...`: finds the target format and hands every word after
// `export` to that format's command.
#include "cli_common.hpp"

#include <array>
#include <cstdio>

namespace onnxstream::cli {
namespace {

struct export_target {
    std::string_view name;
    int (*run)(std::span<const std::string> args, const command_context& context);
};

constexpr std::array export_targets{
    export_target{"caffe", run_export_caffe},
};

constexpr std::string_view export_help =
    "usage: onnxstream export MODEL --to FORMAT [options]\n"
    "\n"
    "Writes the model in another format. `onnxstream export --to FORMAT --help` lists a\n"
    "format's options. Formats: caffe.\n";

}  // namespace

int run_export(std::span<const std::string> args, const command_context& context) {
    std::optional<std::string> target;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--") break;
        if (args[i] == "--to" && i + 1 < args.size()) target = args[i + 1];
        else if (args[i].starts_with("--to=")) target = args[i].substr(5);
    }
    if (!target) {
        for (const auto& a : args)
            if (a == "--help" || a == "-h") {
                std::printf("%.*s", static_cast<int>(export_help.size()), export_help.data());
                return exit_ok;
            }
        return usage_error("export", "export needs --to FORMAT (caffe)");
    }
    for (const auto& t : export_targets)
        if (t.name == *target) return t.run(args, context);
    std::string known;
    for (const auto& t : export_targets) known += (known.empty() ? "" : ", ") + std::string(t.name);
    return usage_error("export", "unknown export format '" + *target + "' (known: " + known + ")");
}

}  // namespace onnxstream::cli
