#include "cli_common.hpp"

#include <onnxstream/ops/merge.hpp>

#include <array>
#include <cstdio>

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
    "  -j, --threads N           worker threads (default: the number of cores)\n"
    "  --allow-size-mismatch     warn instead of failing when bytes != dims x element size\n"
    "  --strict                  fail (instead of warning) when a SHA-1 checksum does not match\n"
    "  -f, --force               replace an existing output\n"
    "  --json                    print a JSON document on stdout\n"
    "  --quiet                   print nothing but warnings and errors\n";

constexpr std::array merge_options{opt_help,    opt_quiet, opt_json, opt_output, opt_data, opt_data_dir, opt_threads,
                                   opt_force,   opt_writer,
                                   opt_allow_size_mismatch, opt_strict};

}  // namespace

int run_merge(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("merge", merge_help, argv, merge_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.empty()) return usage_error("merge", "merge needs at least one MODEL");
    if (args.positionals.size() > 1 && args.flag("--output"))
        return usage_error("merge", "-o can only be used with a single MODEL (each model gets <stem>.merged.onnx)");
    ops::rewrite_options options;
    if (auto filled = fill_rewrite_options(args, options); !filled) return usage_error("merge", filled.error().message);
    if (const auto out = args.value("--output")) options.output = *out;
    options.cancel = context.cancel;
    progress_bar bar(!p.flags.quiet && !p.flags.json);
    options.on_progress = progress_to(bar);

    json_writer json;
    json.begin_object().key("models").begin_array();
    int status = exit_ok;
    std::optional<error> first_error;
    for (const auto& model : args.positionals) {
        auto report = ops::merge(model, options);
        bar.finish();
        if (!report) {
            print_error(report.error());
            if (status == exit_ok || exit_for(report.error()) == exit_interrupted) status = exit_for(report.error());
            json.begin_object().field("input", model).field("ok", false).key("error");
            write_error_json(json, report.error());
            json.end_object();
            if (report.error().code == error_code::interrupted) break;
            continue;
        }
        for (const auto& w : report->warnings) print_warning(w);
        if (p.flags.json) {
            json.begin_object().field("input", model).field("ok", true).field("output", report->output.string());
            json.field("output_size", report->output_size).field("tensors_inlined", report->tensors_inlined);
            json.field("bytes_inlined", report->bytes_inlined).field("writer", report->writer).key("data_files").begin_array();
            for (const auto& f : report->data_files)
                json.begin_object().field("location", f.location).field("path", f.path.string()).field("found_by", f.how)
                    .field("tensors", f.tensors).field("bytes", f.bytes).end_object();
            json.end_array().key("warnings").begin_array();
            for (const auto& w : report->warnings) json.value(w.message);
            json.end_array().end_object();
        } else if (!p.flags.quiet) {
            if (report->tensors_inlined == 0) {
                std::printf("%s -> %s: no external data; copied unchanged (%s)\n", model.c_str(),
                            report->output.string().c_str(), human_bytes(report->output_size).c_str());
            } else {
                std::printf("%s -> %s: inlined %s (%s), output %s\n", model.c_str(), report->output.string().c_str(),
                            plural(report->tensors_inlined, "tensor").c_str(), human_bytes(report->bytes_inlined).c_str(),
                            human_bytes(report->output_size).c_str());
                for (const auto& f : report->data_files)
                    std::printf("  from %s (%s): %s\n", f.path.string().c_str(), f.how.c_str(),
                                plural(f.tensors, "tensor").c_str());
            }
        }
    }
    json.end_array().field("ok", status == exit_ok).end_object();
    if (p.flags.json) std::printf("%s\n", json.text().c_str());
    return status;
}

}  // namespace onnxstream::cli
