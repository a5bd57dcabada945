// What the micro benchmarks share: a peak-RSS counter and synthetic models written with
// a small protobuf encoder of their own (so the code under test does not build its input).
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bench_support {

/// Resets the kernel's high-water mark of this process's resident set (Linux
/// /proc/self/clear_refs, "5"), so that the next peak_rss counter is this benchmark's.
/// Best effort: elsewhere the counter is the peak since the process started.
void reset_peak_rss();

/// Adds `peak_rss_MiB` (VmHWM) to the benchmark's counters.
void report_peak_rss(benchmark::State& state);

class encoder {
public:
    encoder& varint(std::uint64_t value) {
        while (value >= 0x80) {
            bytes_.push_back(static_cast<std::byte>((value & 0x7F) | 0x80));
            value >>= 7;
        }
        bytes_.push_back(static_cast<std::byte>(value));
        return *this;
    }
    encoder& varint_field(std::uint32_t number, std::uint64_t value) { return varint(std::uint64_t{number} << 3).varint(value); }
    encoder& bytes_field(std::uint32_t number, std::span<const std::byte> payload) {
        varint((std::uint64_t{number} << 3) | 2).varint(payload.size());
        bytes_.insert(bytes_.end(), payload.begin(), payload.end());
        return *this;
    }
    encoder& text_field(std::uint32_t number, std::string_view text) {
        return bytes_field(number, std::as_bytes(std::span(text.data(), text.size())));
    }
    encoder& message_field(std::uint32_t number, const encoder& inner) { return bytes_field(number, inner.bytes_); }
    [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
    [[nodiscard]] std::vector<std::byte> take() { return std::move(bytes_); }

private:
    std::vector<std::byte> bytes_;
};

/// A ModelProto whose graph is a chain of `nodes` nodes named like an exported network's,
/// plus `tensors` initializers of `tensor_bytes` raw bytes each.
std::vector<std::byte> synthetic_model(std::uint64_t nodes, std::uint64_t tensors, std::uint64_t tensor_bytes);

/// The model named by ONNXSTREAM_BENCH_MODEL if set (read whole), else synthetic_model(200000, 16, 4096).
const std::vector<std::byte>& metadata_heavy_model();

}  // namespace bench_support
