#include "cli_common.hpp"

#include <onnxstream/ops/verify.hpp>

#include <algorithm>
#include <array>
#include <cstdio>

namespace onnxstream::cli {
namespace {

constexpr std::string_view verify_epilog =
    "Exit status: 0 clean, 1 problems found (or the model cannot be read), 2 usage error.\n"
    "With --json, \"ok\" is true when clean; with --quiet, only the problems are printed.\n";

}  // namespace

int run_verify(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("verify"), "verify", "MODEL [options]", verify_epilog};
    auto s = start(command, argv, api::verify_options_from);
    if (!s.options) return s.status;
    const auto& p = s.p;
    const auto report = run_with_progress(*s.options, context, p.flags, [&] { return ops::verify(s.model, *s.options); });
    if (!report) return fail(report.error(), p.flags.json);
    if (p.flags.json) print_json(report::to_json(*report, flag_wording()));
    else
        print_out(
            report::to_text(*report, flag_wording(), p.flags.quiet ? report::text_detail::findings : report::text_detail::full));
    if (report->clean()) return exit_ok;
    // The problems are the report (stdout); stderr still says the run did not pass, and
    // what helps: an intact data file under another name needs a name or --data, not a
    // download.
    const auto misnamed = [&report](const ops::verify_problem& problem) {
        return problem.check == ops::verify_check::data && problem.tensor.empty() &&
               std::any_of(report->files.begin(), report->files.end(),
                           [&problem](const ops::verified_file& f) { return f.guessed && f.location == problem.location; });
    };
    const bool only_misnamed = std::all_of(report->problems.begin(), report->problems.end(), misnamed);
    print_text(stderr, "onnxstream: error: %s found in %s\n  %s\n", plural(report->problems.size(), "problem").c_str(),
               report->path.string().c_str(),
               p.flags.json    ? "they are listed in the JSON document"
               : only_misnamed ? "the data is whole but not where the model says: rename the file as the model names it "
                                 "(listed above), pass it with --data, or run 'onnxstream merge' to embed it"
                               : "each is listed above with its tensor and file; fetch damaged or missing data again, "
                                 "or re-export the model");
    return exit_failed;
}

}  // namespace onnxstream::cli
