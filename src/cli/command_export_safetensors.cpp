#include "cli_common.hpp"

#include <onnxstream/ops/export_safetensors.hpp>

#include <array>

namespace onnxstream::cli {

int run_export_safetensors(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("export-safetensors"), "export", "MODEL --to safetensors [options]"};
    const std::array extra{opt_to};
    auto s = start(command, argv, api::safetensors_options_from, extra);
    if (!s.options) return s.status;
    const auto& p = s.p;
    const auto report = run_with_progress(*s.options, context, p.flags,
                                          [&] { return ops::export_safetensors(s.model, *s.options); });
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
}

}  // namespace onnxstream::cli
