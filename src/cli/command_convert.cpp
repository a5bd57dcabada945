#include "cli_common.hpp"

#include <onnxstream/ops/convert.hpp>

#include <cstdio>

namespace onnxstream::cli {

int run_convert(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("convert"), "convert", "MODEL --dtype fp16|bf16 [options]"};
    auto s = start(command, argv, api::convert_options_from);
    if (!s.options) return s.status;
    const auto& p = s.p;
    auto& options = s.options;
    const auto report = run_with_progress(*options, context, p.flags, [&] { return ops::convert(s.model, *options); });
    // The JSON names the type as --dtype does (and as the page and Python do); the text in words.
    const char* dtype = options->target == ops::half_type::float16 ? "float16" : "bfloat16";
    const int status = show(
        report, p.flags, [&](const auto& r) { return report::to_json(r, api::dtype_name(options->target)); },
        [&](const auto& r) { return report::to_text(r, dtype); });
    if (!report) return status;
    if (report->saturated > 0 && p.flags.json) {
        // Keep stdout pure JSON; still tell a person on stderr.
        std::fprintf(stderr, "onnxstream: warning: %llu values beyond the float16 range saturated to +-65504\n",
                     static_cast<unsigned long long>(report->saturated));
    }
    return exit_ok;
}

}  // namespace onnxstream::cli
