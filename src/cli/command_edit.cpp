#include "cli_common.hpp"

#include <onnxstream/ops/edit.hpp>

namespace onnxstream::cli {

int run_edit(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("edit"), "edit", "MODEL [-o OUT] [--input-shape NAME=DIMS]... [options]"};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    auto options = api::edit_options_from(in);
    if (!options) return option_error("edit", options.error(), p.flags.json);
    options->backend = writer_from_environment(options->backend);
    const auto report = run_with_progress(*options, context, p.flags,
                                          [&] { return ops::edit(std::string(in.text("model")), *options); });
    return show(
        report, p.flags, [](const auto& r) { return ops::edit_report_json(r); },
        [](const auto& r) { return ops::edit_report_text(r); });
}

}  // namespace onnxstream::cli
