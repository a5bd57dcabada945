#include "cli_common.hpp"

#include <onnxstream/ops/optimize.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <algorithm>
#include <functional>
#include <string>

namespace onnxstream::cli {
namespace {

// What --help adds to the table's words: the passes, from the registry.
std::string optimize_epilog() {
    std::string text = "Passes (--passes LIST, comma-separated; by default all, in this order):\n";
    for (const auto& pass : passes::pass_registry()) {
        std::string name(pass.name);
        name.resize(std::max<std::size_t>(name.size() + 1, 15), ' ');
        text += "  " + name + std::string(pass.summary) + "\n";
    }
    return text;
}

}  // namespace

int run_optimize(std::span<const std::string> argv, const command_context& context) {
    const auto epilog = optimize_epilog();
    const table_command command{table_spec("optimize"), "optimize", "MODEL [options]", epilog};
    auto s = start(command, argv, api::optimize_options_from);
    if (!s.options) return s.status;
    const auto& p = s.p;
    s.options->keep_findings = p.flags.json;  // the text shows each pass's totals and skips
    const auto report = run_with_progress(*s.options, context, p.flags, [&] { return ops::optimize(s.model, *s.options); });
    // The JSON is streamed (print_json of a writing function): a million findings make a
    // document of a hundred megabytes, never held whole.
    const auto json = [](const ops::optimize_report& r) {
        return std::function<void(json_writer&)>([&r](json_writer& writer) { report::write_json(writer, r); });
    };
    return show(report, p.flags, json, [](const auto& r) { return report::to_text(r); });
}

}  // namespace onnxstream::cli
