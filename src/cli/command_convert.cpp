#include "cli_common.hpp"

#include <onnxstream/ops/convert.hpp>

#include <cstdio>

namespace onnxstream::cli {

int run_convert(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("convert"), "convert", "MODEL --dtype fp16|bf16 [options]"};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    auto options = api::convert_options_from(in);
    if (!options) return option_error("convert", options.error(), p.flags.json);
    options->backend = writer_from_environment(options->backend);
    const auto report = run_with_progress(*options, context, p.flags,
                                          [&] { return ops::convert(std::string(in.text("model")), *options); });
    const char* dtype = options->target == ops::half_type::float16 ? "float16" : "bfloat16";
    const int status = show(
        report, p.flags, [&](const auto& r) { return report::to_json(r, dtype); },
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
