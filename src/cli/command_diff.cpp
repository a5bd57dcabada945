#include "cli_common.hpp"

#include <onnxstream/ops/diff.hpp>

#include <array>

namespace onnxstream::cli {
namespace {

constexpr std::string_view diff_epilog =
    "Exit status (as cmp): 0 equivalent, 1 different, 2 trouble (unreadable model, missing data,\n"
    "usage error). With --json, \"ok\" is true when equivalent; --quiet prints nothing.\n";

constexpr int exit_trouble = 2;

}  // namespace

int run_diff(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("diff"), "diff", "A B [options]", diff_epilog};
    auto s = start(command, argv, api::diff_options_from);
    if (!s.options) return s.status;
    const auto& p = s.p;
    const std::string other(p.reader().text("other"));
    const auto report = run_with_progress(*s.options, context, p.flags, [&] { return ops::diff(s.model, other, *s.options); });
    const int status = show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
    if (!report) return status == exit_interrupted ? status : exit_trouble;
    return report->equivalent ? exit_ok : exit_failed;
}

}  // namespace onnxstream::cli
