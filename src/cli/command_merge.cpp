#include "cli_common.hpp"

#include <onnxstream/ops/merge.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

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

constexpr std::array merge_options{opt_help,    opt_quiet, opt_json, opt_output, opt_data, opt_data_dir, opt_threads,
                                   opt_force,   opt_writer,
                                   opt_allow_size_mismatch, opt_strict};

// Several MODELs are merged by up to --threads workers at once, each writer getting its
// share of the threads. Results are handed back in the order of the command line, so
// what is printed does not depend on which model finishes first.
class merge_queue {
public:
    merge_queue(std::span<const std::string> models, const ops::rewrite_options& options, unsigned threads)
        : models_(models), options_(options), results_(models.size()) {
        workers_ = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(models.size())));
        if (!outputs_distinct()) workers_ = 1;  // the same output twice: keep the one-by-one outcome
        options_.threads = std::max(1U, threads / workers_);
        if (options.on_progress) {
            progress_.resize(models.size());
            report_progress_ = options.on_progress;
        }
    }

    /// Starts the workers (none when one at a time: each model is then merged by
    /// `wait_for` on the calling thread).
    void start() {
        if (workers_ == 1) return;
        try {
            for (unsigned w = 0; w < workers_; ++w) threads_.emplace_back([this] { work(); });
        } catch (const std::system_error&) {
            // Fewer threads than asked for (none: wait_for merges on the calling thread).
        }
    }

    /// The result for model `index` (waiting for it); call with 0, 1, 2 ...
    result<ops::merge_report>& wait_for(std::size_t index) {
        if (threads_.empty()) {
            results_[index].emplace(merge_one(index));
            return *results_[index];
        }
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return results_[index].has_value(); });
        return *results_[index];
    }

    /// Stops handing out models (those not started report `interrupted`).
    void stop() { stopped_.store(true); }

    ~merge_queue() {
        stop();
        for (auto& thread : threads_) thread.join();
    }
    merge_queue(const merge_queue&) = delete;
    merge_queue& operator=(const merge_queue&) = delete;

private:
    bool outputs_distinct() const {
        if (models_.size() < 2) return true;
        std::set<std::filesystem::path> seen;
        for (const auto& model : models_) {
            std::error_code ignored;
            const auto output = std::filesystem::weakly_canonical(ops::default_output(model, "merged"), ignored);
            if (!seen.insert(output).second) return false;
        }
        return true;
    }

    void work() {
        for (;;) {
            const std::size_t index = next_.fetch_add(1);
            if (index >= models_.size()) return;
            auto report = merge_one(index);
            std::lock_guard lock(mutex_);
            results_[index].emplace(std::move(report));
            done_.notify_all();
        }
    }

    result<ops::merge_report> merge_one(std::size_t index) {
        if (stopped_.load() || (options_.cancel != nullptr && options_.cancel->load()))
            return failure(error_code::interrupted, "interrupted before " + models_[index] + " was started");
        // No exception may leave a worker thread (std::terminate): it becomes this model's error.
        try {
            return ops::merge(models_[index], options_for(index));
        } catch (const std::bad_alloc&) {
            return failure(error_code::io, "out of memory while merging " + models_[index],
                           "merge fewer models at once (--threads) or free memory");
        } catch (const std::exception& e) {
            return failure(error_code::io, std::string("internal error while merging ") + models_[index] + ": " + e.what(),
                           "please report this with the model that caused it");
        }
    }

    // Progress of all models as one stage: bytes done and planned so far, summed.
    ops::rewrite_options options_for(std::size_t index) {
        auto options = options_;
        if (!report_progress_) return options;
        options.on_progress = [this, index](const ops::progress_event& event) {
            std::lock_guard lock(progress_mutex_);
            progress_[index] = {event.done, event.total};
            ops::progress_event all{models_.size() == 1 ? event.stage : "merge " + std::to_string(models_.size()) + " models",
                                    0, 0, event.tensor};
            for (const auto& [done, total] : progress_) {
                all.done += done;
                all.total += total;
            }
            report_progress_(all);
        };
        return options;
    }

    std::span<const std::string> models_;
    ops::rewrite_options options_;
    unsigned workers_ = 1;
    std::vector<std::optional<result<ops::merge_report>>> results_;
    std::atomic<std::size_t> next_{0};
    std::atomic<bool> stopped_{false};
    std::mutex mutex_;
    std::condition_variable done_;
    std::vector<std::thread> threads_;
    std::mutex progress_mutex_;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> progress_;
    std::function<void(const ops::progress_event&)> report_progress_;
};

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
    std::mutex bar_mutex;  // models merged at once report from their own threads
    options.on_progress = [&](const ops::progress_event& event) {
        std::lock_guard lock(bar_mutex);
        bar.update(event);
    };

    json_writer json;
    json.begin_object().key("models").begin_array();
    int status = exit_ok;
    const unsigned threads = ops::effective_threads(options.threads);
    merge_queue queue(args.positionals, options, threads);
    queue.start();
    for (std::size_t index = 0; index < args.positionals.size(); ++index) {
        const auto& model = args.positionals[index];
        auto& report = queue.wait_for(index);
        {
            std::lock_guard lock(bar_mutex);
            bar.finish();
        }
        if (!report) {
            print_error(report.error());
            if (status == exit_ok || exit_for(report.error()) == exit_interrupted) status = exit_for(report.error());
            report::write_merge_failure(json, model, report.error());
            if (report.error().code == error_code::interrupted) {
                queue.stop();
                break;
            }
            continue;
        }
        for (const auto& w : report->warnings) print_warning(w);
        if (p.flags.json) {
            report::write_merged(json, model, *report);
        } else if (!p.flags.quiet) {
            if (report->tensors_inlined == 0) {
                print_text(stdout, "%s -> %s: no external data; copied unchanged (%s)\n", model.c_str(),
                                   report->output.string().c_str(), human_bytes(report->output_size).c_str());
            } else {
                print_text(stdout, "%s -> %s: inlined %s (%s), output %s\n", model.c_str(), report->output.string().c_str(),
                                   plural(report->tensors_inlined, "tensor").c_str(), human_bytes(report->bytes_inlined).c_str(),
                                   human_bytes(report->output_size).c_str());
                for (const auto& f : report->data_files)
                    print_text(stdout, "  from %s (%s): %s\n", f.path.string().c_str(), f.how.c_str(),
                                       plural(f.tensors, "tensor").c_str());
            }
        }
    }
    json.end_array().field("ok", status == exit_ok).end_object();
    if (p.flags.json) print_text(stdout, "%s\n", json.text().c_str());
    return status;
}

}  // namespace onnxstream::cli
