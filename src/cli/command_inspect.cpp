#include "cli_common.hpp"

#include <onnxstream/ops/inspect.hpp>

namespace onnxstream::cli {

int run_inspect(std::span<const std::string> argv, const command_context&) {
    const table_command command{table_spec("inspect"), "inspect", "MODEL [options]"};
    const auto s = start(command, argv, api::open_options_from);
    if (!s.options) return s.status;
    const auto& p = s.p;
    const auto report = ops::inspect(s.model, *s.options);
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r, flag_wording()); },
        [](const auto& r) { return report::to_text(r, flag_wording()); });
}

}  // namespace onnxstream::cli
