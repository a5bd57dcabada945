// float32 -> float16 / bfloat16 in bulk on each conversion path this CPU has
// (onnx/conversion_path.hpp), one core, over 256 KiB of weight-like values (normal, sd
// 0.05, so a few subnormals and no saturation) that stay in cache: the bytes/s counter
// is float32 input per second, the rate convert can reach before the disk limits it.
// float16_overflow is the scan convert makes before an fp16 conversion.
#include "bench_support.hpp"

#include <onnxstream/onnx/conversion_path.hpp>

#include <bit>
#include <random>
#include <string>

namespace {

using onnxstream::onnx::conversion_path;
using onnxstream::onnx::float_conversion;

std::vector<std::byte> weights(std::size_t count) {
    std::mt19937 random(7);
    std::normal_distribution<float> value(0.0F, 0.05F);
    std::vector<std::byte> bytes(count * 4);
    for (std::size_t i = 0; i < count; ++i) {
        const auto bits = std::bit_cast<std::uint32_t>(value(random));
        for (std::size_t k = 0; k < 4; ++k) bytes[4 * i + k] = static_cast<std::byte>((bits >> (8 * k)) & 0xFFU);
    }
    return bytes;
}

bool runnable(benchmark::State& state, conversion_path path) {
    for (const auto p : onnxstream::onnx::available_conversion_paths())
        if (p == path) return true;
    state.SkipWithError("this CPU has no such path");
    return false;
}

void convert(benchmark::State& state, float_conversion kind, conversion_path path) {
    if (!runnable(state, path)) return;
    bench_support::reset_peak_rss();
    const auto in = weights(65536);
    std::vector<std::byte> out(in.size() / 2);
    for (auto _ : state) {
        benchmark::DoNotOptimize(onnxstream::onnx::convert_float32_bytes_on(path, kind, in, out));
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
    bench_support::report_peak_rss(state);
}

void overflow_scan(benchmark::State& state, conversion_path path) {
    if (!runnable(state, path)) return;
    const auto in = weights(65536);
    for (auto _ : state) {
        onnxstream::onnx::float16_overflow found;
        onnxstream::onnx::count_float16_overflow_on(path, in, found);
        benchmark::DoNotOptimize(found);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
}

const int registered = [] {
    for (const auto path : {conversion_path::portable, conversion_path::avx2, conversion_path::avx512}) {
        const std::string name(onnxstream::onnx::conversion_path_name(path));
        benchmark::RegisterBenchmark(("float16_convert/" + name).c_str(), convert, float_conversion::float32_to_float16, path);
        benchmark::RegisterBenchmark(("bfloat16_convert/" + name).c_str(), convert, float_conversion::float32_to_bfloat16, path);
        benchmark::RegisterBenchmark(("float16_overflow/" + name).c_str(), overflow_scan, path);
    }
    return 0;
}();

}  // namespace
