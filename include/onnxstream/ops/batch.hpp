// A batch of models merged with one thread budget: up to `options.threads` models at once
// (the number of cores for 0), each writer getting its share of the threads. Results come
// back in the order of the models, so what a front end shows does not depend on which
// model finishes first. Progress of all models is reported as one stage (bytes done and
// planned so far, summed), from the workers' threads: `on_progress` must be thread-safe.
//
// Cancellation: `options.cancel`, or `stop()`, stops handing out models; a model not yet
// started then reports `interrupted`. No exception leaves a worker: it becomes that
// model's error.
#pragma once

#include <onnxstream/ops/merge.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace onnxstream::ops {

class merge_batch {
public:
    /// `models` must outlive the batch. With several models, `options.output` must be
    /// empty (each gets its default output). Two models with the same default output are
    /// merged one after the other, so the outcome is the one-by-one outcome.
    merge_batch(std::span<const std::string> models, const rewrite_options& options);
    ~merge_batch();  // stops and waits for the workers
    merge_batch(const merge_batch&) = delete;
    merge_batch& operator=(const merge_batch&) = delete;

    /// Starts the workers (none when one model at a time: `wait_for` then merges each on
    /// the calling thread).
    void start();
    /// The result for model `index`, waiting for it; call with 0, 1, 2 ...
    [[nodiscard]] result<merge_report>& wait_for(std::size_t index);
    /// Stops handing out models.
    void stop();

private:
    struct state;
    std::unique_ptr<state> state_;
};

}  // namespace onnxstream::ops
