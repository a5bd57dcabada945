// The x86-64 conversion kernels (float_conversion_kernels.hpp). Each function carries its
// own target attribute: the dispatcher (float_conversion.cpp) calls it only when
// __builtin_cpu_supports says the CPU and the OS have those instructions.
//
// float16: vcvtps2ph with an immediate round-to-nearest-even already matches the portable
// code on normals, subnormals, zeros, infinities and NaNs (it sets the quiet bit and keeps
// the top ten payload bits, as float32_to_float16_bits does). It differs only where a
// finite value is 65520 or more in magnitude: it gives infinity, the tool gives +-65504
// and counts the value. Those lanes are found by comparing the magnitude's bits, counted,
// and fixed. The comparisons are on integers: a magnitude is a non-negative int32 whose
// order is the float order.
#include "float_conversion_kernels.hpp"

#if ONNXSTREAM_X86_SIMD

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace onnxstream::onnx::detail {
namespace {

constexpr int magnitude_bits = 0x7FFFFFFF;
constexpr int below_saturation = 0x477FEFFF;  // the largest magnitude that rounds to a finite float16
constexpr int infinity_bits = 0x7F800000;
constexpr int largest_float16_bits = 0x477FE000;  // 65504 as float32

std::uint32_t load_bits(const std::byte* at) noexcept {
    std::uint32_t bits = 0;
    std::memcpy(&bits, at, 4);
    return bits;
}

void store_half(std::byte* at, std::uint16_t value) noexcept { std::memcpy(at, &value, 2); }

// The values after the last whole vector, one at a time as the portable loop does them.
std::uint64_t float16_tail(const std::byte* in, std::byte* out, std::size_t from, std::size_t count) noexcept {
    std::uint32_t saturated = 0;
    for (std::size_t i = from; i < count; ++i) store_half(out + 2 * i, float32_to_float16_fast(load_bits(in + 4 * i), saturated));
    return saturated;
}

void bfloat16_tail(const std::byte* in, std::byte* out, std::size_t from, std::size_t count) noexcept {
    for (std::size_t i = from; i < count; ++i) store_half(out + 2 * i, float32_to_bfloat16_bits(load_bits(in + 4 * i)));
}

void overflow_tail(const std::byte* in, std::size_t from, std::size_t count, float16_overflow& found) noexcept {
    for (std::size_t i = from; i < count; ++i) {
        const std::uint32_t magnitude = load_bits(in + 4 * i) & 0x7FFFFFFFU;
        if (magnitude <= static_cast<std::uint32_t>(below_saturation) || magnitude >= static_cast<std::uint32_t>(infinity_bits))
            continue;
        ++found.values;
        found.largest = std::max(found.largest, std::bit_cast<float>(magnitude));
    }
}

}  // namespace

// ------------------------------------------------------------------------------ AVX2

__attribute__((target("avx2,f16c,popcnt"))) std::uint64_t float16_avx2(const std::byte* in, std::byte* out,
                                                                       std::size_t count) noexcept {
    const __m256i magnitude_mask = _mm256_set1_epi32(magnitude_bits);
    const __m256i threshold = _mm256_set1_epi32(below_saturation);
    const __m256i infinity = _mm256_set1_epi32(infinity_bits);
    std::uint64_t saturated = 0;
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 4 * i));
        const __m256i magnitude = _mm256_and_si256(bits, magnitude_mask);
        const __m256i too_large = _mm256_and_si256(_mm256_cmpgt_epi32(magnitude, threshold),
                                                   _mm256_cmpgt_epi32(infinity, magnitude));
        __m128i half = _mm256_cvtps_ph(_mm256_castsi256_ps(bits), _MM_FROUND_TO_NEAREST_INT);
        if (_mm256_testz_si256(too_large, too_large) == 0) {  // rare: a branch beats fixing every vector
            saturated += static_cast<std::uint64_t>(
                std::popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(too_large)))));
            // Those lanes hold +-infinity (0x7C00 / 0xFC00); adding -1 makes them +-65504.
            half = _mm_add_epi16(half,
                                 _mm_packs_epi32(_mm256_castsi256_si128(too_large), _mm256_extracti128_si256(too_large, 1)));
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), half);
    }
    return saturated + float16_tail(in, out, i, count);
}

namespace {
// bfloat16 of 8 values in the low 16 bits of each lane: add 0x7FFF plus the lowest kept bit
// (round to nearest even; a carry into the exponent is right, up to infinity), or for a NaN
// set the quiet bit and truncate.
__attribute__((target("avx2"))) __m256i bfloat16_lanes(__m256i bits) noexcept {
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(magnitude_bits));
    const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(infinity_bits));
    const __m256i lowest_kept = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(lowest_kept, _mm256_set1_epi32(0x7FFF)));
    const __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
    return _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
}
}  // namespace

__attribute__((target("avx2"))) void bfloat16_avx2(const std::byte* in, std::byte* out, std::size_t count) noexcept {
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m256i low = bfloat16_lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 4 * i)));
        const __m256i high = bfloat16_lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 4 * i + 32)));
        // packus works within 128-bit halves: the 64-bit quarters come out as low0 high0
        // low1 high1, and the permutation puts them back in order.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(low, high), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), packed);
    }
    bfloat16_tail(in, out, i, count);
}

__attribute__((target("avx2,popcnt"))) void overflow_avx2(const std::byte* in, std::size_t count,
                                                          float16_overflow& found) noexcept {
    const __m256i magnitude_mask = _mm256_set1_epi32(magnitude_bits);
    const __m256i threshold = _mm256_set1_epi32(below_saturation);
    const __m256i infinity = _mm256_set1_epi32(infinity_bits);
    __m256i largest = _mm256_setzero_si256();
    std::uint64_t values = 0;
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m256i magnitude = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 4 * i)),
                                                   magnitude_mask);
        const __m256i too_large = _mm256_and_si256(_mm256_cmpgt_epi32(magnitude, threshold),
                                                   _mm256_cmpgt_epi32(infinity, magnitude));
        if (_mm256_testz_si256(too_large, too_large) != 0) continue;
        values += static_cast<std::uint64_t>(
            std::popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(too_large)))));
        largest = _mm256_max_epu32(largest, _mm256_and_si256(magnitude, too_large));
    }
    std::uint32_t lanes[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), largest);  // unaligned: Windows stacks are 16-byte aligned
    found.values += values;
    found.largest = std::max(found.largest, std::bit_cast<float>(*std::max_element(lanes, lanes + 8)));
    overflow_tail(in, i, count, found);
}

// ---------------------------------------------------------------------------- AVX-512

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() values, which its own
// -Wuninitialized then reports at every use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Unoptimized (the sanitizer build's -O0), GCC's _mm512_cvtps_ph is a macro passing -1 as its
// 16-bit mask: a -Wsign-conversion inside the header's own expansion.
#pragma GCC diagnostic ignored "-Wsign-conversion"

__attribute__((target("avx512f,avx2,f16c,popcnt"))) std::uint64_t float16_avx512(const std::byte* in, std::byte* out,
                                                                                 std::size_t count) noexcept {
    const __m512i magnitude_mask = _mm512_set1_epi32(magnitude_bits);
    const __m512i threshold = _mm512_set1_epi32(below_saturation);
    const __m512i infinity = _mm512_set1_epi32(infinity_bits);
    const __m512i largest_half = _mm512_set1_epi32(largest_float16_bits);
    std::uint64_t saturated = 0;
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        __m512i bits = _mm512_loadu_si512(in + 4 * i);
        const __m512i magnitude = _mm512_and_si512(bits, magnitude_mask);
        const __mmask16 too_large = _mm512_cmpgt_epi32_mask(magnitude, threshold) & _mm512_cmpgt_epi32_mask(infinity, magnitude);
        if (too_large != 0) {
            saturated += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(too_large)));
            // Those lanes become +-65504 before the conversion, keeping their sign.
            bits = _mm512_mask_mov_epi32(bits, too_large,
                                         _mm512_or_si512(_mm512_andnot_si512(magnitude_mask, bits), largest_half));
        }
        const __m256i half = _mm512_cvtps_ph(_mm512_castsi512_ps(bits), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), half);
    }
    return saturated + float16_tail(in, out, i, count);
}

__attribute__((target("avx512f"))) void bfloat16_avx512(const std::byte* in, std::byte* out, std::size_t count) noexcept {
    const __m512i magnitude_mask = _mm512_set1_epi32(magnitude_bits);
    const __m512i infinity = _mm512_set1_epi32(infinity_bits);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i rounding = _mm512_set1_epi32(0x7FFF);
    const __m512i quiet_bit = _mm512_set1_epi32(0x00400000);
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m512i bits = _mm512_loadu_si512(in + 4 * i);
        const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(bits, magnitude_mask), infinity);
        const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(bits, 16), one);
        __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lowest_kept, rounding));
        rounded = _mm512_mask_or_epi32(rounded, nan, bits, quiet_bit);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16)));
    }
    bfloat16_tail(in, out, i, count);
}

__attribute__((target("avx512f,popcnt"))) void overflow_avx512(const std::byte* in, std::size_t count,
                                                               float16_overflow& found) noexcept {
    const __m512i magnitude_mask = _mm512_set1_epi32(magnitude_bits);
    const __m512i threshold = _mm512_set1_epi32(below_saturation);
    const __m512i infinity = _mm512_set1_epi32(infinity_bits);
    __m512i largest = _mm512_setzero_si512();
    std::uint64_t values = 0;
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m512i magnitude = _mm512_and_si512(_mm512_loadu_si512(in + 4 * i), magnitude_mask);
        const __mmask16 too_large = _mm512_cmpgt_epi32_mask(magnitude, threshold) & _mm512_cmpgt_epi32_mask(infinity, magnitude);
        if (too_large == 0) continue;
        values += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(too_large)));
        largest = _mm512_mask_max_epu32(largest, too_large, largest, magnitude);
    }
    found.values += values;
    found.largest = std::max(found.largest, std::bit_cast<float>(_mm512_reduce_max_epu32(largest)));
    overflow_tail(in, i, count, found);
}

#pragma GCC diagnostic pop

}  // namespace onnxstream::onnx::detail

#endif  // ONNXSTREAM_X86_SIMD
