#include <onnxstream/ops/batch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
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

namespace onnxstream::ops {

struct merge_batch::state {
    state(std::span<const std::string> models_, const rewrite_options& options_)
        : models(models_), options(options_), results(models_.size()) {}

    bool outputs_distinct() const {
        if (models.size() < 2) return true;
        std::set<std::filesystem::path> seen;
        for (const auto& model : models) {
            std::error_code ignored;
            const auto output = std::filesystem::weakly_canonical(default_output(model, "merged"), ignored);
            if (!seen.insert(output).second) return false;
        }
        return true;
    }

    void work() {
        for (;;) {
            const std::size_t index = next.fetch_add(1);
            if (index >= models.size()) return;
            auto report = merge_one(index);
            std::lock_guard lock(mutex);
            results[index].emplace(std::move(report));
            done.notify_all();
        }
    }

    result<merge_report> merge_one(std::size_t index) {
        if (stopped.load() || (options.cancel != nullptr && options.cancel->load()))
            return failure(error_code::interrupted, "interrupted before " + models[index] + " was started");
        // No exception may leave a worker thread (std::terminate): it becomes this model's error.
        try {
            return merge(models[index], options_for(index));
        } catch (const std::bad_alloc&) {
            return failure(error_code::io, "out of memory while merging " + models[index],
                           "merge fewer models at once ({0}) or free memory", {{remedy::fewer_threads, {}}});
        } catch (const std::exception& e) {
            return failure(error_code::io, std::string("internal error while merging ") + models[index] + ": " + e.what(),
                           "please report this with the model that caused it");
        }
    }

    // Progress of all models as one stage: bytes done and planned so far, summed.
    rewrite_options options_for(std::size_t index) {
        auto each = options;
        if (!report_progress) return each;
        each.on_progress = [this, index](const progress_event& event) {
            std::lock_guard lock(progress_mutex);
            progress[index] = {event.done, event.total};
            progress_event all{models.size() == 1 ? event.stage : "merge " + std::to_string(models.size()) + " models", 0, 0,
                               event.tensor, event.unit};
            for (const auto& [done_bytes, total_bytes] : progress) {
                all.done += done_bytes;
                all.total += total_bytes;
            }
            report_progress(all);
        };
        return each;
    }

    std::span<const std::string> models;
    rewrite_options options;
    unsigned workers = 1;
    std::vector<std::optional<result<merge_report>>> results;
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stopped{false};
    std::mutex mutex;
    std::condition_variable done;
    std::vector<std::thread> threads;
    std::mutex progress_mutex;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> progress;
    std::function<void(const progress_event&)> report_progress;
};

merge_batch::merge_batch(std::span<const std::string> models, const rewrite_options& options)
    : state_(std::make_unique<state>(models, options)) {
    auto& s = *state_;
    const unsigned threads = effective_threads(options.threads);
    s.workers = std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(models.size())));
    if (!s.outputs_distinct()) s.workers = 1;  // the same output twice: keep the one-by-one outcome
    s.options.threads = std::max(1U, threads / s.workers);
    if (options.on_progress) {
        s.progress.resize(models.size());
        s.report_progress = options.on_progress;
    }
}

merge_batch::~merge_batch() {
    stop();
    for (auto& thread : state_->threads) thread.join();
}

void merge_batch::start() {
    auto& s = *state_;
    if (s.workers == 1) return;
    try {
        for (unsigned w = 0; w < s.workers; ++w) s.threads.emplace_back([&s] { s.work(); });
    } catch (const std::system_error&) {
        // Fewer threads than asked for (none: wait_for merges on the calling thread).
    }
}

result<merge_report>& merge_batch::wait_for(std::size_t index) {
    auto& s = *state_;
    if (s.threads.empty()) {
        s.results[index].emplace(s.merge_one(index));
        return *s.results[index];
    }
    std::unique_lock lock(s.mutex);
    s.done.wait(lock, [&] { return s.results[index].has_value(); });
    return *s.results[index];
}

void merge_batch::stop() { state_->stopped.store(true); }

}  // namespace onnxstream::ops
