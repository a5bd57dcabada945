#include "cli_common.hpp"

#include <onnxstream/ops/externalize.hpp>

namespace onnxstream::cli {

namespace {

int run_externalize(std::string_view name, std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec(name), name, "MODEL [options]"};
    const auto kind = name == "split" ? ops::externalize_kind::split : ops::externalize_kind::repack;
    auto s = start(command, argv, [kind](const auto& in) { return api::externalize_options_from(in, kind); });
    if (!s.options) return s.status;
    const auto& p = s.p;
    const auto report = run_with_progress(*s.options, context, p.flags, [&] { return ops::externalize(s.model, *s.options); });
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
