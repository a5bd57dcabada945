#include "cli_common.hpp"

#include <onnxstream/ops/export_caffe.hpp>

#include <array>
#include <cstdio>

namespace onnxstream::cli {

int run_export_caffe(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("export-caffe"), "export", "MODEL --to caffe [options]"};
    const std::array extra{opt_to};
    auto s = start(command, argv, api::export_caffe_options_from, extra);
    if (!s.options) return s.status;
    const auto& p = s.p;
    auto& options = *s.options;
    const auto report = run_with_progress(options, context, p.flags, [&] { return ops::export_caffe(s.model, options); });
    if (!report) return fail(report.error(), p.flags.json);
    print_warnings(report->warnings);
    if (p.flags.json) print_json(report::to_json(*report, options.tolerance));
    if (!report->refusals.empty()) {
        print_text(stderr, "%s", report::refusals_text(*report, flag_wording()).c_str());
        return exit_failed;
    }
    if (!p.flags.json && !p.flags.quiet) print_out(report::to_text(*report));
    if (report->check.ran && !report->check.passed) {
        std::fprintf(
            stderr,
            "onnxstream: error: the export differs from the original by %.3g of the output's magnitude (tolerance %.3g)\n"
            "  the files were written for inspection; --report shows the error of every layer\n",
            report->check.max_relative_error, options.tolerance);
        return exit_failed;
    }
    return exit_ok;
}

}  // namespace onnxstream::cli
