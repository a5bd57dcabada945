// The x86-64 quantize loops (quantize_kernels.hpp). Each function carries its own target
// attribute: quantize_kernels_on hands them out only when onnx::available_conversion_paths()
// says the CPU and the OS have those instructions.
//
// Exactness, operation by operation against the portable code:
// - std::min(low, w) is `w < low ? w : low` and minps(a, b) is `a < b ? a : b`, so the
//   portable min is minps(w, low) (max alike), down to which zero of +0 and -0 is kept.
//   Non-finite lanes keep the accumulator (a blend or a mask), as the portable loop skips them.
// - A scan's lanes start from the range passed in and are folded into it at the end. Every
//   fold is a min or a max of values that compare unequal, except zeros; a range that starts
//   at low <= 0 <= high (value_range{}, or any scan's result) never takes the other zero in,
//   so the order of the folds cannot show.
// - quantize: the same division, clamps, additions and truncation as quantize_value, in
//   float, with NaN lanes replaced by the zero point. The error is computed in double as
//   the portable code does; (q - zero point) * scale is exact there, so a fused
//   multiply-subtract (avx512f implies FMA to the compiler) gives the same double.
// - The largest error is a max of non-negative doubles with no NaN: any order gives it.
// The values after the last whole vector go through the portable loops themselves.
#include "quantize_kernels.hpp"

#if ONNXSTREAM_X86_SIMD

#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace onnxstream::ops::detail {
namespace {

constexpr float ratio_bound = 512.0F;          // quantize_value's first clamp
constexpr float rounding_shift = 12582912.0F;  // 1.5 * 2^23, quantize_value's rounding
constexpr float infinity = std::numeric_limits<float>::infinity();

const quantize_kernels& portable() noexcept { return quantize_kernels_on(onnx::conversion_path::portable); }

// ------------------------------------------------------------------------------ AVX2

__attribute__((target("avx2"))) void scan_avx2(const float* values, std::size_t count, value_range& range) noexcept {
    const __m256 magnitude_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 inf = _mm256_set1_ps(infinity);
    __m256 low = _mm256_set1_ps(range.low);
    __m256 high = _mm256_set1_ps(range.high);
    __m256 largest = _mm256_set1_ps(range.largest);
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m256 w = _mm256_loadu_ps(values + i);
        const __m256 magnitude = _mm256_and_ps(w, magnitude_mask);
        const __m256 finite = _mm256_cmp_ps(magnitude, inf, _CMP_LT_OQ);
        low = _mm256_blendv_ps(low, _mm256_min_ps(w, low), finite);
        high = _mm256_blendv_ps(high, _mm256_max_ps(w, high), finite);
        largest = _mm256_blendv_ps(largest, _mm256_max_ps(magnitude, largest), finite);
    }
    float lows[8], highs[8], largests[8];
    _mm256_storeu_ps(lows, low);
    _mm256_storeu_ps(highs, high);
    _mm256_storeu_ps(largests, largest);
    for (int k = 0; k < 8; ++k) {
        range.low = std::min(range.low, lows[k]);
        range.high = std::max(range.high, highs[k]);
        range.largest = std::max(range.largest, largests[k]);
    }
    portable().scan(values + i, count - i, range);
}

__attribute__((target("avx2"))) void scan_columns_avx2(const float* row, std::size_t count, float* low, float* high,
                                                       float* largest) noexcept {
    const __m256 magnitude_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 inf = _mm256_set1_ps(infinity);
    std::size_t c = 0;
    for (; c + 8 <= count; c += 8) {
        const __m256 w = _mm256_loadu_ps(row + c);
        const __m256 magnitude = _mm256_and_ps(w, magnitude_mask);
        const __m256 finite = _mm256_cmp_ps(magnitude, inf, _CMP_LT_OQ);
        const __m256 l = _mm256_loadu_ps(low + c);
        const __m256 h = _mm256_loadu_ps(high + c);
        const __m256 m = _mm256_loadu_ps(largest + c);
        _mm256_storeu_ps(low + c, _mm256_blendv_ps(l, _mm256_min_ps(w, l), finite));
        _mm256_storeu_ps(high + c, _mm256_blendv_ps(h, _mm256_max_ps(w, h), finite));
        _mm256_storeu_ps(largest + c, _mm256_blendv_ps(m, _mm256_max_ps(magnitude, m), finite));
    }
    portable().scan_columns(row + c, count - c, low + c, high + c, largest + c);
}

// Eight values' levels, stored as bytes at `levels`; their errors folded into `largest_error`.
// Inlined: vectors passed by value to a call of its own would go through the stack (Windows).
__attribute__((target("avx2"), always_inline)) inline void levels_avx2(const float* values, __m256 scale, __m256i zero_point,
                                                                       __m256 range_low, __m256 range_high, std::int8_t* levels,
                                                                       __m256d& largest_error) noexcept {
    const __m256 w = _mm256_loadu_ps(values);
    const __m256 bound = _mm256_set1_ps(ratio_bound);
    const __m256 shift = _mm256_set1_ps(rounding_shift);
    // std::clamp(v, lo, hi) of a non-NaN v is max then min with these operand orders.
    const __m256 ratio = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(w, scale), _mm256_set1_ps(-ratio_bound)), bound);
    const __m256 rounded = _mm256_sub_ps(_mm256_add_ps(ratio, shift), shift);
    const __m256 shifted = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(rounded, _mm256_cvtepi32_ps(zero_point)), range_low),
                                         range_high);
    const __m256 nan = _mm256_cmp_ps(w, w, _CMP_UNORD_Q);
    const __m256i q = _mm256_blendv_epi8(_mm256_cvttps_epi32(shifted), zero_point, _mm256_castps_si256(nan));
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(levels), _mm_packs_epi16(words, words));

    const __m256 magnitude = _mm256_and_ps(w, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    const __m256i finite = _mm256_castps_si256(_mm256_cmp_ps(magnitude, _mm256_set1_ps(infinity), _CMP_LT_OQ));
    const __m256i steps = _mm256_sub_epi32(q, zero_point);
    const __m256d magnitude_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
    for (int half = 0; half < 2; ++half) {
        const __m128 w4 = half == 0 ? _mm256_castps256_ps128(w) : _mm256_extractf128_ps(w, 1);
        const __m128 scale4 = half == 0 ? _mm256_castps256_ps128(scale) : _mm256_extractf128_ps(scale, 1);
        const __m128i steps4 = half == 0 ? _mm256_castsi256_si128(steps) : _mm256_extracti128_si256(steps, 1);
        const __m128i finite4 = half == 0 ? _mm256_castsi256_si128(finite) : _mm256_extracti128_si256(finite, 1);
        const __m256d back = _mm256_mul_pd(_mm256_cvtepi32_pd(steps4), _mm256_cvtps_pd(scale4));
        const __m256d error = _mm256_and_pd(_mm256_sub_pd(_mm256_cvtps_pd(w4), back), magnitude_mask);
        const __m256d kept = _mm256_and_pd(error, _mm256_castsi256_pd(_mm256_cvtepi32_epi64(finite4)));
        largest_error = _mm256_max_pd(kept, largest_error);
    }
}

__attribute__((target("avx2"))) double fold_avx2(__m256d largest_error) noexcept {
    double lanes[4];
    _mm256_storeu_pd(lanes, largest_error);
    return *std::max_element(lanes, lanes + 4);
}

__attribute__((target("avx2"))) double quantize_avx2(const float* values, std::size_t count, block_parameters p,
                                                     quantized_range range, std::int8_t* levels) noexcept {
    const __m256 scale = _mm256_set1_ps(p.scale);
    const __m256i zero_point = _mm256_set1_epi32(p.zero_point);
    const __m256 range_low = _mm256_set1_ps(static_cast<float>(range.low));
    const __m256 range_high = _mm256_set1_ps(static_cast<float>(range.high));
    __m256d largest_error = _mm256_setzero_pd();
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) levels_avx2(values + i, scale, zero_point, range_low, range_high, levels + i, largest_error);
    return std::max(fold_avx2(largest_error), portable().quantize(values + i, count - i, p, range, levels + i));
}

__attribute__((target("avx2"))) double quantize_columns_avx2(const float* row, std::size_t count, const float* scales,
                                                             const std::int32_t* zero_points, quantized_range range,
                                                             std::int8_t* levels) noexcept {
    const __m256 range_low = _mm256_set1_ps(static_cast<float>(range.low));
    const __m256 range_high = _mm256_set1_ps(static_cast<float>(range.high));
    __m256d largest_error = _mm256_setzero_pd();
    std::size_t c = 0;
    for (; c + 8 <= count; c += 8)
        levels_avx2(row + c, _mm256_loadu_ps(scales + c), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_points + c)),
                    range_low, range_high, levels + c, largest_error);
    return std::max(fold_avx2(largest_error),
                    portable().quantize_columns(row + c, count - c, scales + c, zero_points + c, range, levels + c));
}

// ---------------------------------------------------------------------------- AVX-512

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() values, which its own
// -Wuninitialized then reports at every use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Unoptimized (the sanitizer build's -O0), some of GCC's AVX-512 intrinsics are macros
// passing -1 as a mask: a -Wsign-conversion inside the header's own expansion.
#pragma GCC diagnostic ignored "-Wsign-conversion"

__attribute__((target("avx512f"), always_inline)) inline __m512 magnitude_512(__m512 w) noexcept {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(w), _mm512_set1_epi32(0x7FFFFFFF)));
}

__attribute__((target("avx512f"))) void scan_avx512(const float* values, std::size_t count, value_range& range) noexcept {
    const __m512 inf = _mm512_set1_ps(infinity);
    __m512 low = _mm512_set1_ps(range.low);
    __m512 high = _mm512_set1_ps(range.high);
    __m512 largest = _mm512_set1_ps(range.largest);
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const __m512 w = _mm512_loadu_ps(values + i);
        const __m512 magnitude = magnitude_512(w);
        const __mmask16 finite = _mm512_cmp_ps_mask(magnitude, inf, _CMP_LT_OQ);
        low = _mm512_mask_min_ps(low, finite, w, low);
        high = _mm512_mask_max_ps(high, finite, w, high);
        largest = _mm512_mask_max_ps(largest, finite, magnitude, largest);
    }
    float lows[16], highs[16], largests[16];
    _mm512_storeu_ps(lows, low);
    _mm512_storeu_ps(highs, high);
    _mm512_storeu_ps(largests, largest);
    for (int k = 0; k < 16; ++k) {
        range.low = std::min(range.low, lows[k]);
        range.high = std::max(range.high, highs[k]);
        range.largest = std::max(range.largest, largests[k]);
    }
    portable().scan(values + i, count - i, range);
}

__attribute__((target("avx512f"))) void scan_columns_avx512(const float* row, std::size_t count, float* low, float* high,
                                                            float* largest) noexcept {
    const __m512 inf = _mm512_set1_ps(infinity);
    std::size_t c = 0;
    for (; c + 16 <= count; c += 16) {
        const __m512 w = _mm512_loadu_ps(row + c);
        const __m512 magnitude = magnitude_512(w);
        const __mmask16 finite = _mm512_cmp_ps_mask(magnitude, inf, _CMP_LT_OQ);
        const __m512 l = _mm512_loadu_ps(low + c);
        const __m512 h = _mm512_loadu_ps(high + c);
        const __m512 m = _mm512_loadu_ps(largest + c);
        _mm512_storeu_ps(low + c, _mm512_mask_min_ps(l, finite, w, l));
        _mm512_storeu_ps(high + c, _mm512_mask_max_ps(h, finite, w, h));
        _mm512_storeu_ps(largest + c, _mm512_mask_max_ps(m, finite, magnitude, m));
    }
    portable().scan_columns(row + c, count - c, low + c, high + c, largest + c);
}

__attribute__((target("avx512f"), always_inline)) inline void levels_avx512(const float* values, __m512 scale, __m512i zero_point,
                                                                            __m512 range_low, __m512 range_high,
                                                                            std::int8_t* levels,
                                                                            __m512d& largest_error) noexcept {
    const __m512 w = _mm512_loadu_ps(values);
    const __m512 bound = _mm512_set1_ps(ratio_bound);
    const __m512 shift = _mm512_set1_ps(rounding_shift);
    const __m512 ratio = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(w, scale), _mm512_set1_ps(-ratio_bound)), bound);
    const __m512 rounded = _mm512_sub_ps(_mm512_add_ps(ratio, shift), shift);
    const __m512 shifted = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(rounded, _mm512_cvtepi32_ps(zero_point)), range_low),
                                         range_high);
    const __mmask16 nan = _mm512_cmp_ps_mask(w, w, _CMP_UNORD_Q);
    const __m512i q = _mm512_mask_mov_epi32(_mm512_cvttps_epi32(shifted), nan, zero_point);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(levels), _mm512_cvtsepi32_epi8(q));

    const __mmask16 finite = _mm512_cmp_ps_mask(magnitude_512(w), _mm512_set1_ps(infinity), _CMP_LT_OQ);
    const __m512i steps = _mm512_sub_epi32(q, zero_point);
    for (int half = 0; half < 2; ++half) {
        const __m256 w8 = half == 0 ? _mm512_castps512_ps256(w)
                                    : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(w), 1));
        const __m256 scale8 = half == 0 ? _mm512_castps512_ps256(scale)
                                        : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(scale), 1));
        const __m256i steps8 = half == 0 ? _mm512_castsi512_si256(steps) : _mm512_extracti64x4_epi64(steps, 1);
        const auto kept = static_cast<__mmask8>(half == 0 ? finite : finite >> 8);
        const __m512d back = _mm512_mul_pd(_mm512_cvtepi32_pd(steps8), _mm512_cvtps_pd(scale8));
        const __m512d error = _mm512_abs_pd(_mm512_sub_pd(_mm512_cvtps_pd(w8), back));
        largest_error = _mm512_mask_max_pd(largest_error, kept, error, largest_error);
    }
}

__attribute__((target("avx512f"))) double fold_avx512(__m512d largest_error) noexcept {
    double lanes[8];
    _mm512_storeu_pd(lanes, largest_error);
    return *std::max_element(lanes, lanes + 8);
}

__attribute__((target("avx512f"))) double quantize_avx512(const float* values, std::size_t count, block_parameters p,
                                                          quantized_range range, std::int8_t* levels) noexcept {
    const __m512 scale = _mm512_set1_ps(p.scale);
    const __m512i zero_point = _mm512_set1_epi32(p.zero_point);
    const __m512 range_low = _mm512_set1_ps(static_cast<float>(range.low));
    const __m512 range_high = _mm512_set1_ps(static_cast<float>(range.high));
    __m512d largest_error = _mm512_setzero_pd();
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16)
        levels_avx512(values + i, scale, zero_point, range_low, range_high, levels + i, largest_error);
    return std::max(fold_avx512(largest_error), portable().quantize(values + i, count - i, p, range, levels + i));
}

__attribute__((target("avx512f"))) double quantize_columns_avx512(const float* row, std::size_t count, const float* scales,
                                                                  const std::int32_t* zero_points, quantized_range range,
                                                                  std::int8_t* levels) noexcept {
    const __m512 range_low = _mm512_set1_ps(static_cast<float>(range.low));
    const __m512 range_high = _mm512_set1_ps(static_cast<float>(range.high));
    __m512d largest_error = _mm512_setzero_pd();
    std::size_t c = 0;
    for (; c + 16 <= count; c += 16)
        levels_avx512(row + c, _mm512_loadu_ps(scales + c), _mm512_loadu_si512(zero_points + c), range_low, range_high,
                      levels + c, largest_error);
    return std::max(fold_avx512(largest_error),
                    portable().quantize_columns(row + c, count - c, scales + c, zero_points + c, range, levels + c));
}

#pragma GCC diagnostic pop

}  // namespace

const quantize_kernels avx2_quantize_kernels{scan_avx2, scan_columns_avx2, quantize_avx2, quantize_columns_avx2};
const quantize_kernels avx512_quantize_kernels{scan_avx512, scan_columns_avx512, quantize_avx512, quantize_columns_avx512};

}  // namespace onnxstream::ops::detail

#endif  // ONNXSTREAM_X86_SIMD
