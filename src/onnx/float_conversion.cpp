// The bulk conversions: the portable loops (the reference every SIMD path is tested
// against) and the choice among the paths (conversion_path.hpp).
#include <onnxstream/onnx/conversion_path.hpp>

#include "float_conversion_kernels.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>

#if ONNXSTREAM_X86_SIMD
#include <cpuid.h>
#endif

namespace onnxstream::onnx {
namespace {

std::uint32_t to_native(std::uint32_t little) noexcept {
    if constexpr (std::endian::native == std::endian::big)
        return (little >> 24) | ((little >> 8) & 0xFF00U) | ((little << 8) & 0xFF0000U) | (little << 24);
    return little;
}

std::uint64_t convert_portable(float_conversion kind, std::span<const std::byte> in, std::span<std::byte> out) noexcept {
    const std::size_t count = in.size() / 4;
    std::uint64_t saturated = 0;
    // Values per pass, small enough to stay in L1: the copies in and out keep the loops
    // free of aliasing and alignment questions, so that the compiler vectorizes them.
    constexpr std::size_t block = 1024;
    std::uint32_t wide[block];
    std::uint16_t narrow[block];
    for (std::size_t start = 0; start < count; start += block) {
        const std::size_t n = std::min(block, count - start);
        std::memcpy(wide, in.data() + 4 * start, 4 * n);
        if constexpr (std::endian::native == std::endian::big) {
            for (std::size_t i = 0; i < n; ++i) wide[i] = to_native(wide[i]);
        }
        std::uint32_t clamped = 0;
        if (kind == float_conversion::float32_to_float16) {
            for (std::size_t i = 0; i < n; ++i) narrow[i] = float32_to_float16_fast(wide[i], clamped);
        } else {
            for (std::size_t i = 0; i < n; ++i) narrow[i] = float32_to_bfloat16_bits(wide[i]);
        }
        saturated += clamped;
        if constexpr (std::endian::native == std::endian::big) {
            for (std::size_t i = 0; i < n; ++i) narrow[i] = static_cast<std::uint16_t>((narrow[i] >> 8) | (narrow[i] << 8));
        }
        std::memcpy(out.data() + 2 * start, narrow, 2 * n);
    }
    return saturated;
}

void overflow_portable(std::span<const std::byte> in, float16_overflow& found) noexcept {
    const std::size_t count = in.size() / 4;
    for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, in.data() + 4 * i, 4);
        const std::uint32_t magnitude = to_native(bits) & 0x7FFFFFFFU;
        if (magnitude < 0x477FF000U || magnitude >= 0x7F800000U) continue;  // in range, or inf/NaN (kept as they are)
        ++found.values;
        found.largest = std::max(found.largest, std::bit_cast<float>(magnitude));
    }
}

struct detected_paths {
    std::array<conversion_path, 3> paths{};
    std::size_t count = 0;
};

detected_paths detect() noexcept {
    detected_paths d;
    d.paths[d.count++] = conversion_path::portable;
#if ONNXSTREAM_X86_SIMD
    // The compiler runtime's checks include the OS's: AVX state saved by XSAVE (XCR0),
    // not only CPUID. F16C is read from CPUID directly (clang's builtin does not know it);
    // the AVX2 check already covers the OS side of its registers.
    __builtin_cpu_init();
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
    const bool avx2 = f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
    if (avx2) d.paths[d.count++] = conversion_path::avx2;
    if (avx2 && __builtin_cpu_supports("avx512f")) d.paths[d.count++] = conversion_path::avx512;
#endif
    return d;
}

const detected_paths& detected() noexcept {
    static const detected_paths d = detect();
    return d;
}

std::atomic<conversion_path> path_limit{conversion_path::avx512};

bool available(conversion_path path) noexcept {
    const auto& d = detected();
    return std::find(d.paths.begin(), d.paths.begin() + static_cast<std::ptrdiff_t>(d.count), path) !=
           d.paths.begin() + static_cast<std::ptrdiff_t>(d.count);
}

}  // namespace

std::string_view conversion_path_name(conversion_path path) noexcept {
    switch (path) {
        case conversion_path::portable: return "portable";
        case conversion_path::avx2: return "avx2";
        case conversion_path::avx512: return "avx512";
    }
    return "portable";
}

std::span<const conversion_path> available_conversion_paths() noexcept {
    const auto& d = detected();
    return std::span(d.paths).first(d.count);
}

void limit_conversion_path(conversion_path limit) noexcept { path_limit.store(limit, std::memory_order_relaxed); }

conversion_path active_conversion_path() noexcept {
    const auto paths = available_conversion_paths();
    const auto limit = path_limit.load(std::memory_order_relaxed);
    conversion_path best = conversion_path::portable;
    for (const auto p : paths)
        if (p <= limit) best = p;
    return best;
}

std::uint64_t convert_float32_bytes_on(conversion_path path, float_conversion kind, std::span<const std::byte> in,
                                       std::span<std::byte> out) noexcept {
#if ONNXSTREAM_X86_SIMD
    const std::size_t count = in.size() / 4;
    if (path != conversion_path::portable && available(path)) {
        const bool wide = path == conversion_path::avx512;
        if (kind == float_conversion::float32_to_float16)
            return wide ? detail::float16_avx512(in.data(), out.data(), count)
                        : detail::float16_avx2(in.data(), out.data(), count);
        if (wide) detail::bfloat16_avx512(in.data(), out.data(), count);
        else detail::bfloat16_avx2(in.data(), out.data(), count);
        return 0;
    }
#else
    (void)path;
#endif
    return convert_portable(kind, in, out);
}

void count_float16_overflow_on(conversion_path path, std::span<const std::byte> in, float16_overflow& found) noexcept {
#if ONNXSTREAM_X86_SIMD
    if (path != conversion_path::portable && available(path)) {
        if (path == conversion_path::avx512) detail::overflow_avx512(in.data(), in.size() / 4, found);
        else detail::overflow_avx2(in.data(), in.size() / 4, found);
        return;
    }
#else
    (void)path;
#endif
    overflow_portable(in, found);
}

std::uint64_t convert_float32_bytes(float_conversion kind, std::span<const std::byte> in, std::span<std::byte> out) noexcept {
    return convert_float32_bytes_on(active_conversion_path(), kind, in, out);
}

void count_float16_overflow(std::span<const std::byte> in, float16_overflow& found) noexcept {
    count_float16_overflow_on(active_conversion_path(), in, found);
}

}  // namespace onnxstream::onnx
