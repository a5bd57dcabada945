// A progress bar on stderr: bytes done, rate, ETA and the current tensor (when the
// operation names one), shown only when stderr is a terminal, only once work has run for
// about a second, redrawn at most ten times a second, and erased when done.
#pragma once

#include <onnxstream/ops/rewrite_options.hpp>

#include <chrono>
#include <string>

namespace onnxstream::cli {

class progress_bar {
public:
    /// `enabled` false (--quiet, or not a terminal) makes every call a no-op.
    explicit progress_bar(bool enabled);
    ~progress_bar();
    progress_bar(const progress_bar&) = delete;
    progress_bar& operator=(const progress_bar&) = delete;

    void update(const ops::progress_event& event);
    void finish();

private:
    bool enabled_;
    bool drawn_ = false;
    std::string stage_;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace onnxstream::cli
