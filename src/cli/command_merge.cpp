#include "cli_common.hpp"

#include <onnxstream/onnx/model_input.hpp>
#include <onnxstream/ops/batch.hpp>

#include <mutex>

namespace onnxstream::cli {

int run_merge(std::span<const std::string> argv, const command_context& context) {
    const table_command command{table_spec("merge"), "merge", "MODEL... [options]"};
    const auto p = prepare(command, argv);
    if (!p.values) return p.status;
    const auto in = p.reader();
    const auto models = in.texts("model");
    if (models.size() > 1 && in.given("output"))
        return usage_error("merge", "-o can only be used with a single MODEL (each model gets <stem>.merged.onnx)");
    // Before anything is written: a weights file among the models, or an output name given
    // where only models go (the cp habit: merge in.onnx out.onnx).
    for (std::size_t i = 0; i < models.size(); ++i) {
        const auto& model = models[i];
        const auto what = onnx::probe_model_input(model);
        if (!what) return fail(what.error(), p.flags.json);
        if (i == 1 && models.size() == 2 && *what != onnx::model_input::model)
            return usage_error("merge", "merge takes only models, and " + model +
                                            (*what == onnx::model_input::missing ? " does not exist" : " is not a model") +
                                            ": to write the merged model there, use -o " + shell_word(model));
    }
    ops::rewrite_options options;
    if (auto filled = api::fill_rewrite_options(in, options); !filled) return option_error("merge", filled.error(), p.flags.json);
    options.backend = writer_from_environment(options.backend);
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
    ops::merge_batch batch(models, options);
    batch.start();
    for (std::size_t index = 0; index < models.size(); ++index) {
        const auto& model = models[index];
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
