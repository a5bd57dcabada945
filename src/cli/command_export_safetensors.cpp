#include "cli_common.hpp"

#include <onnxstream/ops/export_safetensors.hpp>

#include <array>

namespace onnxstream::cli {

int run_export_safetensors(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("export-safetensors"), "export", "MODEL --to safetensors [options]"};
    const std::array extra{opt_to};
    const auto p = prepare(command, argv, extra);
    if (!p.values) return p.status;
    const auto in = p.reader();
    auto options = api::safetensors_options_from(in);
    if (!options) return option_error("export", options.error(), p.flags.json);
    options->backend = writer_from_environment(options->backend);
    const auto report = run_with_progress(*options, context, p.flags,
                                          [&] { return ops::export_safetensors(std::string(in.text("model")), *options); });
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
}

}  // namespace onnxstream::cli
