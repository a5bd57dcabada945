#include "cli_common.hpp"

#include <onnxstream/ops/analyze.hpp>

namespace onnxstream::cli {

int run_analyze(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("analyze"), "analyze", "MODEL [options]"};
    auto s = start(command, argv, api::analyze_options_from);
    if (!s.options) return s.status;
    const auto& p = s.p;
    const auto report = run_with_progress(*s.options, context, p.flags, [&] { return ops::analyze(s.model, *s.options); });
    if (!report) return fail(report.error(), p.flags.json);
    print_warnings(report->warnings);
    // A million findings make a document of a hundred megabytes: streamed, never whole.
    if (p.flags.json) print_json([&report](json_writer& json) { report::write_json(json, *report); });
    else if (!p.flags.quiet) print_out(report::to_text(*report));
    return exit_ok;
}

}  // namespace onnxstream::cli
