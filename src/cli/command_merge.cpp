#include "cli_common.hpp"

#include <onnxstream/onnx/model_input.hpp>
#include <onnxstream/ops/batch.hpp>

#include <array>
#include <mutex>

namespace onnxstream::cli {
namespace {

// ---------------------------------------------------------------- merge

constexpr std::string_view merge_help =
    "usage: onnxstream merge MODEL... [-o OUT] [--data FILE]... [--data-dir DIR]... [--threads N]\n"
    "                        [--allow-size-mismatch] [--strict] [--force]\n"
    "\n"
    "Inlines every external tensor into one self-contained .onnx (default: <stem>.merged.onnx\n"
    "beside the input). Everything is validated before the first byte is written; a model\n"
    "that would pass protobuf's 2 GB limit is refused before any file is created.\n"
    "\n"
    "  -o, --output OUT          the output file (only with one MODEL)\n"
    "  --data FILE               an external data file (matched by name; a single one serves all)\n"
    "  --data-dir DIR            a folder to look for external data files in\n"
    "  -j, --threads N           worker threads; with several MODELs, up to N are merged at once\n"
    "                            (default: the number of cores)\n"
    "  --allow-size-mismatch     warn instead of failing when bytes != dims x element size\n"
    "  --strict                  fail (instead of warning) when a SHA-1 checksum does not match,\n"
    "                            and never guess a data file the model does not name as it is\n"
    "  -f, --force               replace an existing output\n"
    "  --json                    print a JSON document on stdout\n"
    "  --quiet                   print nothing but warnings and errors\n";

constexpr auto merge_options = rewrite_command_options;

}  // namespace

int run_merge(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("merge", merge_help, argv, merge_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.empty()) return usage_error("merge", "merge needs at least one MODEL");
    if (args.positionals.size() > 1 && args.flag("--output"))
        return usage_error("merge", "-o can only be used with a single MODEL (each model gets <stem>.merged.onnx)");
    // Before anything is written: a weights file among the models, or an output name given
    // where only models go (the cp habit: merge in.onnx out.onnx).
    for (std::size_t i = 0; i < args.positionals.size(); ++i) {
        const auto& model = args.positionals[i];
        const auto what = onnx::probe_model_input(model);
        if (!what) return fail(what.error(), p.flags.json);
        if (i == 1 && args.positionals.size() == 2 && *what != onnx::model_input::model)
            return usage_error("merge", "merge takes only models, and " + model +
                                            (*what == onnx::model_input::missing ? " does not exist" : " is not a model") +
                                            ": to write the merged model there, use -o " + shell_word(model));
    }
    ops::rewrite_options options;
    if (auto filled = fill_rewrite_options(args, options); !filled) return usage_error("merge", filled.error().message);
    if (const auto out = args.value("--output")) options.output = *out;
    options.cancel = context.cancel;
    progress_bar bar(!p.flags.quiet && !p.flags.json);
    std::mutex bar_mutex;  // models merged at once report from their own threads
    options.on_progress = [&](const ops::progress_event& event) {
        std::lock_guard lock(bar_mutex);
        bar.update(event);
    };

    json_writer json;
    json.begin_object().key("models").begin_array();
    int status = exit_ok;
    ops::merge_batch batch(args.positionals, options);
    batch.start();
    for (std::size_t index = 0; index < args.positionals.size(); ++index) {
        const auto& model = args.positionals[index];
        auto& report = batch.wait_for(index);
        {
            std::lock_guard lock(bar_mutex);
            bar.finish();
        }
        if (!report) {
            print_error(report.error());
            if (status == exit_ok || exit_for(report.error()) == exit_interrupted) status = exit_for(report.error());
            report::write_merge_failure(json, model, report.error(), flag_wording());
            if (report.error().code == error_code::interrupted) {
                batch.stop();
                break;
            }
            continue;
        }
        print_warnings(report->warnings);
        if (p.flags.json) report::write_merged(json, model, *report);
        else if (!p.flags.quiet) print_out(report::merged_text(model, *report, flag_wording()));
    }
    json.end_array().field("ok", status == exit_ok).end_object();
    if (p.flags.json) print_json(json.text());
    return status;
}

}  // namespace onnxstream::cli
