#include "cli_common.hpp"

#include <onnxstream/ops/inspect.hpp>

namespace onnxstream::cli {

int run_inspect(std::span<const std::string> argv, const command_context&) {
    const table_command command{table_spec("inspect"), "inspect", "MODEL [options]"};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    const auto options = api::open_options_from(in);
    if (!options) return option_error("inspect", options.error(), p.flags.json);
    const auto report = ops::inspect(std::string(in.text("model")), *options);
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r, flag_wording()); },
        [](const auto& r) { return report::to_text(r, flag_wording()); });
}

}  // namespace onnxstream::cli
