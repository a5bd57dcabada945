// float32 -> float16 / bfloat16 on the bits, as IEEE 754 and numpy do it: round to
// nearest, ties to even. NaN stays NaN (quiet, sign kept), infinities stay infinities.
//
// float16 only: a finite value beyond the float16 range would round to infinity; it
// saturates to +-65504 instead (the largest finite float16) and is counted, so that a
// weight a little too large does not become an infinity that poisons every output. This is
// the one place the tool departs from numpy's astype (which gives inf); the count is
// reported so the user can see it happened.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace onnxstream::onnx {

enum class float_conversion : std::uint8_t { none, float32_to_float16, float32_to_bfloat16 };

/// One float32 (as bits) to float16 bits. `saturated` is set when a finite value was
/// clamped to +-65504.
[[nodiscard]] constexpr std::uint16_t float32_to_float16_bits(std::uint32_t bits, bool& saturated) noexcept {
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
    const std::uint32_t magnitude = bits & 0x7FFFFFFFU;
    saturated = false;
    if (magnitude >= 0x7F800000U) {
        if (magnitude == 0x7F800000U) return static_cast<std::uint16_t>(sign | 0x7C00U);
        // NaN: keep the top payload bits, force the quiet bit so it stays a NaN.
        return static_cast<std::uint16_t>(sign | 0x7E00U | ((magnitude >> 13) & 0x03FFU));
    }
    // 65520 = 0x477FF000 rounds to infinity under round-to-nearest-even; everything from
    // there up saturates.
    if (magnitude >= 0x477FF000U) {
        saturated = true;
        return static_cast<std::uint16_t>(sign | 0x7BFFU);
    }
    if (magnitude >= 0x38800000U) {                              // normal in float16 (>= 2^-14)
        const std::uint32_t rebiased = magnitude - 0x38000000U;  // exponent 127 -> 15
        const std::uint32_t half = rebiased >> 13;
        const std::uint32_t rest = rebiased & 0x1FFFU;
        const std::uint32_t round_up = (rest > 0x1000U || (rest == 0x1000U && (half & 1U) != 0)) ? 1U : 0U;
        return static_cast<std::uint16_t>(sign | (half + round_up));  // a carry into the exponent is right
    }
    if (magnitude < 0x33000000U) return sign;  // below half the smallest subnormal (2^-25): zero
    // Subnormal in float16: value = mantissa_with_hidden * 2^(e-150); the result counts
    // units of 2^-24, so shift right by (126 - e) ... computed from the exponent.
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7FFFFFU) | 0x800000U;
    const std::uint32_t shift = 126U - exponent;  // 14..24 for exponents 102..112
    const std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1U << shift) - 1U);
    const std::uint32_t halfway = 1U << (shift - 1U);
    const std::uint32_t round_up = (rest > halfway || (rest == halfway && (half & 1U) != 0)) ? 1U : 0U;
    return static_cast<std::uint16_t>(sign | (half + round_up));
}

/// One float32 (as bits) to bfloat16 bits: the top half, rounded to nearest even.
[[nodiscard]] constexpr std::uint16_t float32_to_bfloat16_bits(std::uint32_t bits) noexcept {
    if ((bits & 0x7FFFFFFFU) > 0x7F800000U) return static_cast<std::uint16_t>((bits >> 16) | 0x0040U);  // quiet NaN
    const std::uint32_t rounding = 0x7FFFU + ((bits >> 16) & 1U);
    return static_cast<std::uint16_t>((bits + rounding) >> 16);  // may round up to infinity, as it should
}

/// float16 / bfloat16 bits back to float32 bits (exact), for tests and checks.
[[nodiscard]] constexpr std::uint32_t float16_to_float32_bits(std::uint16_t half) noexcept {
    const std::uint32_t sign = (static_cast<std::uint32_t>(half) & 0x8000U) << 16;
    const std::uint32_t exponent = (half >> 10) & 0x1FU;
    std::uint32_t mantissa = half & 0x3FFU;
    if (exponent == 0x1FU) return sign | 0x7F800000U | (mantissa << 13);
    if (exponent != 0) return sign | ((exponent + 112U) << 23) | (mantissa << 13);
    if (mantissa == 0) return sign;
    std::uint32_t e = 113;
    while ((mantissa & 0x400U) == 0) {
        mantissa <<= 1;
        --e;
    }
    return sign | (e << 23) | ((mantissa & 0x3FFU) << 13);
}

[[nodiscard]] constexpr std::uint32_t bfloat16_to_float32_bits(std::uint16_t value) noexcept {
    return static_cast<std::uint32_t>(value) << 16;
}

/// The same as float32_to_float16_bits, without branches, so that a loop over many values
/// compiles to straight-line (and vectorizable) code. Subnormal results use the FPU's own
/// round-to-nearest-even: adding 0.5 aligns the value's bits to units of 2^-24.
[[nodiscard]] inline std::uint16_t float32_to_float16_fast(std::uint32_t bits, std::uint32_t& saturated) noexcept {
    const std::uint32_t sign = (bits >> 16) & 0x8000U;
    const std::uint32_t magnitude = bits & 0x7FFFFFFFU;
    const std::uint32_t normal = (magnitude - 0x38000000U + 0x0FFFU + ((magnitude >> 13) & 1U)) >> 13;
    const float aligned = std::bit_cast<float>(magnitude) + 0.5F;
    const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(aligned) - 0x3F000000U;
    const std::uint32_t special = magnitude > 0x7F800000U ? (0x7E00U | ((magnitude >> 13) & 0x03FFU)) : 0x7C00U;
    const std::uint32_t clamp = (magnitude >= 0x477FF000U) & (magnitude < 0x7F800000U);
    saturated += clamp;
    std::uint32_t out = magnitude < 0x38800000U ? subnormal : normal;
    out = clamp != 0 ? 0x7BFFU : out;
    out = magnitude >= 0x7F800000U ? special : out;
    return static_cast<std::uint16_t>(sign | out);
}

/// How many of the little-endian float32 values in `in` (a multiple of 4 bytes) float16
/// would saturate (finite, 65520 or more in magnitude), and the largest such magnitude
/// (0 when none), so that a caller can keep them float32 before converting anything.
struct float16_overflow {
    std::uint64_t values = 0;
    float largest = 0;
};
/// Runs on the fastest path the CPU has (conversion_path.hpp); every path counts the same.
void count_float16_overflow(std::span<const std::byte> in, float16_overflow& found) noexcept;

/// Converts little-endian float32 bytes to little-endian 16-bit values: `out` holds
/// `in.size() / 2` bytes; `in.size()` must be a multiple of 4. Returns how many values
/// saturated (float16 only).
/// Runs on the fastest path the CPU has (conversion_path.hpp); every path gives the same bytes.
std::uint64_t convert_float32_bytes(float_conversion kind, std::span<const std::byte> in, std::span<std::byte> out) noexcept;

}  // namespace onnxstream::onnx
