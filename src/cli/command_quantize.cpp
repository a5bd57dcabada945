#include "cli_common.hpp"

#include <onnxstream/ops/quantize.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/text.hpp>

namespace onnxstream::cli {

int run_quantize(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("quantize"), "quantize", "MODEL --weights int8|int4|uint4 [options]"};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    auto options = api::quantize_options_from(in);
    if (!options) return option_error("quantize", options.error(), p.flags.json);
    options->backend = writer_from_environment(options->backend);
    const auto report = run_with_progress(*options, context, p.flags,
                                          [&] { return ops::quantize(std::string(in.text("model")), *options); });
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
}

}  // namespace onnxstream::cli
