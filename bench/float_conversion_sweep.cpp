// All 2^32 float32 bit patterns through every conversion path this CPU has, compared with
// the portable path: the same float16 and bfloat16 bytes, the same saturation count, and
// the same overflow scan. Too slow for CI (a minute or more of one core); the unit test
// tests/unit/test_conversion_path.cpp runs a dense sample of it. Prints the counts and
// the time of each path, and exits 1 at the first difference.
//   build/bench/onnxstream_float_sweep
#include <onnxstream/onnx/conversion_path.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using onnxstream::onnx::conversion_path;
using onnxstream::onnx::float_conversion;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
    namespace onnx = onnxstream::onnx;
    constexpr std::size_t chunk = std::size_t{1} << 24;  // patterns per pass: 64 MiB of float32
    std::vector<std::byte> in(chunk * 4), expected_half(chunk * 2), expected_bf16(chunk * 2), half(chunk * 2), bf16(chunk * 2);
    const auto paths = onnx::available_conversion_paths();
    std::vector<double> time(3, 0.0);
    std::uint64_t saturated = 0;
    for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += chunk) {
        for (std::size_t i = 0; i < chunk; ++i) {
            const auto bits = static_cast<std::uint32_t>(base + i);
            for (std::size_t k = 0; k < 4; ++k) in[4 * i + k] = static_cast<std::byte>((bits >> (8 * k)) & 0xFFU);
        }
        std::uint64_t expected_saturated = 0;
        onnx::float16_overflow expected_overflow;
        for (const auto path : paths) {
            auto& half_out = path == conversion_path::portable ? expected_half : half;
            auto& bf16_out = path == conversion_path::portable ? expected_bf16 : bf16;
            const auto start = std::chrono::steady_clock::now();
            const auto s = onnx::convert_float32_bytes_on(path, float_conversion::float32_to_float16, in, half_out);
            onnx::convert_float32_bytes_on(path, float_conversion::float32_to_bfloat16, in, bf16_out);
            onnx::float16_overflow overflow;
            onnx::count_float16_overflow_on(path, in, overflow);
            time[static_cast<std::size_t>(path)] += seconds_since(start);
            if (path == conversion_path::portable) {
                expected_saturated = s;
                expected_overflow = overflow;
                saturated += s;
                continue;
            }
            if (s != expected_saturated || std::memcmp(half.data(), expected_half.data(), half.size()) != 0 ||
                std::memcmp(bf16.data(), expected_bf16.data(), bf16.size()) != 0 || overflow.values != expected_overflow.values ||
                overflow.largest != expected_overflow.largest) {
                std::printf("DIFFERENT: path %s, patterns 0x%08llx..0x%08llx\n", onnx::conversion_path_name(path).data(),
                            static_cast<unsigned long long>(base), static_cast<unsigned long long>(base + chunk - 1));
                return 1;
            }
        }
    }
    std::printf("all 2^32 float32 patterns: every path equals portable; %llu saturate in float16\n",
                static_cast<unsigned long long>(saturated));
    for (const auto path : paths)
        std::printf("  %-8s %.1f s (fp16 + bf16 + overflow scan, 3 x 16 GiB of float32)\n",
                    onnx::conversion_path_name(path).data(), time[static_cast<std::size_t>(path)]);
    return 0;
}
