// Options every rewriting operation shares: where the output goes, how to run the writer,
// how to report progress and how to be stopped.
#pragma once

#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/ops/progress_event.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace onnxstream::ops {

// How the model is opened (--data, --data-dir, --strict, --allow-size-mismatch) is the
// base: an operation hands itself to bound_model::open.
struct rewrite_options : onnx::open_options {
    std::filesystem::path output;  // empty: the command's default beside the input
    bool force = false;            // replace an existing output
    unsigned threads = 0;          // 0: the number of cores
    io::writer_backend backend = io::writer_backend::automatic;
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const progress_event&)> on_progress;
};

/// The worker count for a --threads value: the value itself, or the number of cores for 0.
[[nodiscard]] unsigned effective_threads(unsigned requested) noexcept;

/// `<dir>/<stem>.<suffix>.onnx` beside `model` (`model.onnx` -> `model.merged.onnx`).
[[nodiscard]] std::filesystem::path default_output(const std::filesystem::path& model, const std::string& suffix);

}  // namespace onnxstream::ops
