#include "cli_common.hpp"

#include <onnxstream/ops/externalize.hpp>

namespace onnxstream::cli {

namespace {

int run_externalize(std::string_view name, std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec(name), name, "MODEL [options]"};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    auto options = api::externalize_options_from(in, name == "split" ? ops::externalize_kind::split
                                                                      : ops::externalize_kind::repack);
    if (!options) return option_error(name, options.error(), p.flags.json);
    options->backend = writer_from_environment(options->backend);
    const auto report = run_with_progress(*options, context, p.flags,
                                          [&] { return ops::externalize(std::string(in.text("model")), *options); });
    return show(
        report, p.flags, [](const auto& r) { return report::to_json(r); }, [](const auto& r) { return report::to_text(r); });
}

}  // namespace

int run_split(std::span<const std::string> argv, const command_context& context) {
    return run_externalize("split", argv, context);
}

int run_repack(std::span<const std::string> argv, const command_context& context) {
    return run_externalize("repack", argv, context);
}

}  // namespace onnxstream::cli
