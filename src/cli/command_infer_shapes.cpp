#include "cli_common.hpp"

#include <onnxstream/ops/infer_shapes.hpp>

namespace onnxstream::cli {

int run_infer_shapes(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("infer-shapes"), "infer-shapes", "MODEL [-o OUT] [--input-shape NAME=DIMS]..."};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    auto options = api::infer_shapes_options_from(in);
    if (!options) return option_error("infer-shapes", options.error(), p.flags.json);
    options->backend = writer_from_environment(options->backend);
    const auto report = run_with_progress(*options, context, p.flags,
                                          [&] { return ops::infer_shapes(std::string(in.text("model")), *options); });
    return show(
        report, p.flags, [](const auto& r) { return ops::infer_shapes_report_json(r); },
        [](const auto& r) { return ops::infer_shapes_report_text(r); });
}

}  // namespace onnxstream::cli
