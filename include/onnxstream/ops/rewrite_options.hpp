// Options every rewriting operation shares: where the output goes, how to run the writer,
// how to report progress and how to be stopped.
#pragma once

#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/onnx/resolve_options.hpp>
#include <onnxstream/ops/progress_event.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace onnxstream::ops {

struct rewrite_options {
    std::filesystem::path output;  // empty: the command's default beside the input
    onnx::resolve_options data;    // --data, --data-dir
    bool force = false;            // replace an existing output
    bool allow_size_mismatch = false;
    bool strict = false;   // a checksum mismatch is an error, and data files are never guessed
    unsigned threads = 0;  // 0: the number of cores
    io::writer_backend backend = io::writer_backend::automatic;
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const progress_event&)> on_progress;
};

/// `options.data` as the resolver must see it: --strict takes no guessed data file.
[[nodiscard]] inline onnx::resolve_options data_options_for(const rewrite_options& options) {
    auto data = options.data;
    data.allow_guesses = data.allow_guesses && !options.strict;
    return data;
}

/// The worker count for a --threads value: the value itself, or the number of cores for 0.
[[nodiscard]] unsigned effective_threads(unsigned requested) noexcept;

/// `<dir>/<stem>.<suffix>.onnx` beside `model` (`model.onnx` -> `model.merged.onnx`).
[[nodiscard]] std::filesystem::path default_output(const std::filesystem::path& model, const std::string& suffix);

}  // namespace onnxstream::ops
