#include "cli_common.hpp"

#include <onnxstream/ops/extract.hpp>

namespace onnxstream::cli {

int run_extract(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("extract"), "extract", "MODEL --outputs NAMES [--inputs NAMES] [options]"};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    auto options = api::extract_options_from(in);
    if (!options) return option_error("extract", options.error(), p.flags.json);
    options->backend = writer_from_environment(options->backend);
    const auto report = run_with_progress(*options, context, p.flags,
                                          [&] { return ops::extract(std::string(in.text("model")), *options); });
    return show(
        report, p.flags, [](const auto& r) { return ops::extract_report_json(r); },
        [](const auto& r) { return ops::extract_report_text(r); });
}

}  // namespace onnxstream::cli
