#include "progress.hpp"

#include <onnxstream/report/byte_size.hpp>
#include <onnxstream/report/safe_text.hpp>

#include <unistd.h>
#include <cstdio>

namespace onnxstream::cli {

using clock_type = std::chrono::steady_clock;
using report::human_bytes;

progress_bar::progress_bar(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) == 1) {}

progress_bar::~progress_bar() { finish(); }

void progress_bar::update(const ops::progress_event& event) {
    if (!enabled_) return;
    const auto now = clock_type::now();
    if (event.stage != stage_) {
        stage_ = event.stage;
        start_ = now;
    }
    if (now - start_ < std::chrono::seconds(1)) return;
    if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && event.done < event.total) return;
    last_draw_ = now;
    drawn_ = true;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double fraction = event.total > 0 ? static_cast<double>(event.done) / static_cast<double>(event.total) : 1.0;
    const double rate = seconds > 0 ? static_cast<double>(event.done) / seconds : 0.0;
    const double eta = rate > 0 ? static_cast<double>(event.total - std::min(event.done, event.total)) / rate : 0.0;
    constexpr int width = 24;
    const int filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(width - filled), '.');
    // The stage names a file and the tensor is a model's name: both untrusted.
    const auto tensor = event.tensor.empty() ? std::string() : "  " + report::terminal_safe_prefix(event.tensor, 40);
    if (!event.unit.empty()) {
        // Steps (passes run), not bytes: counted, with no rate.
        std::fprintf(stderr, "\r\033[K%s [%s] %3d%% %llu/%llu %s ETA %ds%s", report::terminal_safe(stage_).c_str(), bar.c_str(),
                     static_cast<int>(fraction * 100), static_cast<unsigned long long>(event.done),
                     static_cast<unsigned long long>(event.total), event.unit.c_str(), static_cast<int>(eta + 0.5),
                     tensor.c_str());
    } else {
        std::fprintf(stderr, "\r\033[K%s [%s] %3d%% %s/%s %s/s ETA %ds%s", report::terminal_safe(stage_).c_str(), bar.c_str(),
                     static_cast<int>(fraction * 100), human_bytes(event.done).c_str(), human_bytes(event.total).c_str(),
                     human_bytes(static_cast<std::uint64_t>(rate)).c_str(), static_cast<int>(eta + 0.5), tensor.c_str());
    }
    std::fflush(stderr);
}

void progress_bar::finish() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace onnxstream::cli
