// Every SIMD conversion path against the portable one (and the portable one against the
// per-value reference, float32_to_float16_bits / float32_to_bfloat16_bits): a dense sample
// of the 2^32 float32 patterns (every 256th) plus every pattern near each boundary
// (zero, the float16 subnormal range and its rounding cut-off, the smallest normal, the
// largest finite float16 and the saturation threshold, the largest float32, infinities,
// NaNs with every kind of payload) and every tie between neighbouring float16 values, in
// both signs. Outputs must be the same bytes and saturation counts the same numbers,
// also for pieces of every length and misalignment (the kernels' tails).
// bench/float_conversion_sweep.cpp runs all 2^32 patterns (too slow for CI).
#include <onnxstream/onnx/conversion_path.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

using namespace onnxstream;
using onnx::conversion_path;
using onnx::float_conversion;

namespace {

std::vector<std::uint32_t> sample_patterns() {
    std::vector<std::uint32_t> bits;
    for (std::uint64_t b = 0; b < (1ULL << 32); b += 256) bits.push_back(static_cast<std::uint32_t>(b + (b >> 8) % 256));
    for (const std::uint32_t edge : {0x00000000U, 0x33000000U, 0x33800000U, 0x387FE000U, 0x38800000U, 0x477FE000U, 0x477FF000U,
                                     0x7F7FFFFFU, 0x7F800000U, 0x7FC00000U, 0x7FFFFFFFU})
        for (std::uint32_t d = 0; d < 4096; ++d) {
            bits.push_back(edge + d);
            bits.push_back(edge - d);
        }
    // NaN payloads: each single payload bit, and the quiet bit with each.
    for (std::uint32_t bit = 0; bit < 22; ++bit) {
        bits.push_back(0x7F800000U | (1U << bit));
        bits.push_back(0x7FC00000U | (1U << bit));
    }
    // Ties: the midpoint of every pair of neighbouring finite float16 values, and one
    // float32 step either side of it.
    for (std::uint32_t h = 0; h < 0x7BFF; ++h) {
        const auto a = onnx::float16_to_float32_bits(static_cast<std::uint16_t>(h));
        const auto b = onnx::float16_to_float32_bits(static_cast<std::uint16_t>(h + 1));
        const auto mid = std::bit_cast<std::uint32_t>(static_cast<float>(
            (static_cast<double>(std::bit_cast<float>(a)) + static_cast<double>(std::bit_cast<float>(b))) / 2));
        for (const std::uint32_t m : {mid - 1, mid, mid + 1}) bits.push_back(m);
    }
    const std::size_t positive = bits.size();
    for (std::size_t i = 0; i < positive; ++i) bits.push_back(bits[i] ^ 0x80000000U);
    return bits;
}

std::vector<std::byte> little_endian(const std::vector<std::uint32_t>& bits) {
    std::vector<std::byte> bytes(bits.size() * 4);
    for (std::size_t i = 0; i < bits.size(); ++i)
        for (std::size_t k = 0; k < 4; ++k) bytes[4 * i + k] = static_cast<std::byte>((bits[i] >> (8 * k)) & 0xFFU);
    return bytes;
}

std::uint16_t half_at(const std::vector<std::byte>& out, std::size_t i) {
    return static_cast<std::uint16_t>(std::to_integer<unsigned>(out[2 * i]) | (std::to_integer<unsigned>(out[2 * i + 1]) << 8));
}

}  // namespace

TEST_CASE("the portable path is the reference and names every path") {
    const auto paths = onnx::available_conversion_paths();
    REQUIRE_FALSE(paths.empty());
    CHECK(paths.front() == conversion_path::portable);
    CHECK(std::is_sorted(paths.begin(), paths.end()));
    CHECK(onnx::conversion_path_name(conversion_path::portable) == "portable");
    CHECK(onnx::conversion_path_name(conversion_path::avx2) == "avx2");
    CHECK(onnx::conversion_path_name(conversion_path::avx512) == "avx512");
    MESSAGE("conversion paths here: ", paths.size(), ", active: ", onnx::conversion_path_name(onnx::active_conversion_path()));
}

TEST_CASE("limiting the path to portable turns SIMD off, and the limit can be lifted again") {
    const auto best = onnx::available_conversion_paths().back();
    CHECK(onnx::active_conversion_path() == best);
    onnx::limit_conversion_path(conversion_path::portable);
    CHECK(onnx::active_conversion_path() == conversion_path::portable);
    onnx::limit_conversion_path(conversion_path::avx2);
    CHECK(onnx::active_conversion_path() == std::min(best, conversion_path::avx2));
    onnx::limit_conversion_path(conversion_path::avx512);
    CHECK(onnx::active_conversion_path() == best);
}

TEST_CASE("the portable bulk conversion equals the per-value functions on the sample") {
    const auto bits = sample_patterns();
    const auto in = little_endian(bits);
    std::vector<std::byte> half(bits.size() * 2), bf16(bits.size() * 2);
    const auto saturated = onnx::convert_float32_bytes_on(conversion_path::portable, float_conversion::float32_to_float16, in,
                                                          half);
    CHECK(onnx::convert_float32_bytes_on(conversion_path::portable, float_conversion::float32_to_bfloat16, in, bf16) == 0);
    std::uint64_t expected_saturated = 0;
    for (std::size_t i = 0; i < bits.size(); ++i) {
        bool s = false;
        const auto h = onnx::float32_to_float16_bits(bits[i], s);
        expected_saturated += s ? 1 : 0;
        // One check per difference, not per value: millions of passing assertions are slow.
        if (half_at(half, i) != h || half_at(bf16, i) != onnx::float32_to_bfloat16_bits(bits[i])) {
            CAPTURE(bits[i]);
            REQUIRE(half_at(half, i) == h);
            REQUIRE(half_at(bf16, i) == onnx::float32_to_bfloat16_bits(bits[i]));
        }
    }
    CHECK(saturated == expected_saturated);
    CHECK(saturated > 10'000);  // the sample does reach past the float16 range
}

TEST_CASE("every SIMD path gives the portable path's bytes and counts") {
    const auto bits = sample_patterns();
    const auto in = little_endian(bits);
    std::vector<std::byte> expected_half(bits.size() * 2), expected_bf16(bits.size() * 2);
    const auto expected_saturated = onnx::convert_float32_bytes_on(conversion_path::portable,
                                                                   float_conversion::float32_to_float16, in, expected_half);
    onnx::convert_float32_bytes_on(conversion_path::portable, float_conversion::float32_to_bfloat16, in, expected_bf16);
    onnx::float16_overflow expected_overflow;
    onnx::count_float16_overflow_on(conversion_path::portable, in, expected_overflow);
    CHECK(expected_overflow.values == expected_saturated);

    for (const auto path : onnx::available_conversion_paths()) {
        CAPTURE(onnx::conversion_path_name(path));
        std::vector<std::byte> half(bits.size() * 2), bf16(bits.size() * 2);
        CHECK(onnx::convert_float32_bytes_on(path, float_conversion::float32_to_float16, in, half) == expected_saturated);
        CHECK(onnx::convert_float32_bytes_on(path, float_conversion::float32_to_bfloat16, in, bf16) == 0);
        for (std::size_t i = 0; i < bits.size(); ++i) {
            if (half_at(half, i) == half_at(expected_half, i) && half_at(bf16, i) == half_at(expected_bf16, i)) continue;
            CAPTURE(bits[i]);
            REQUIRE(half_at(half, i) == half_at(expected_half, i));
            REQUIRE(half_at(bf16, i) == half_at(expected_bf16, i));
        }
        onnx::float16_overflow overflow;
        onnx::count_float16_overflow_on(path, in, overflow);
        CHECK(overflow.values == expected_overflow.values);
        CHECK(std::bit_cast<std::uint32_t>(overflow.largest) == std::bit_cast<std::uint32_t>(expected_overflow.largest));
    }
}

TEST_CASE("every path agrees on short and misaligned pieces (the vector loops' tails)") {
    // 96 values around the saturation threshold, NaNs and subnormals, so that every lane
    // of a piece has something to get wrong.
    std::vector<std::uint32_t> bits;
    for (std::uint32_t i = 0; i < 96; ++i) {
        const std::uint32_t kinds[] = {0x477FF000U + i, 0x7F800001U + (i << 12), 0x33000000U + (i << 16), 0x3F800000U + i * 4096};
        bits.push_back(kinds[i % 4] | ((i & 4) != 0 ? 0x80000000U : 0));
    }
    const auto in = little_endian(bits);
    for (const auto path : onnx::available_conversion_paths()) {
        CAPTURE(onnx::conversion_path_name(path));
        for (std::size_t first = 0; first < 17; ++first)
            for (std::size_t count = 0; first + count <= bits.size(); ++count) {
                CAPTURE(first);
                CAPTURE(count);
                const auto piece = std::span(in).subspan(4 * first, 4 * count);
                for (const auto kind : {float_conversion::float32_to_float16, float_conversion::float32_to_bfloat16}) {
                    // One byte of slack each side: a kernel must write exactly its output.
                    std::vector<std::byte> expected(2 * count + 2, std::byte{0xA5}), got(2 * count + 2, std::byte{0xA5});
                    const auto s1 = onnx::convert_float32_bytes_on(conversion_path::portable, kind, piece,
                                                                   std::span(expected).subspan(1, 2 * count));
                    const auto s2 = onnx::convert_float32_bytes_on(path, kind, piece, std::span(got).subspan(1, 2 * count));
                    REQUIRE(s1 == s2);
                    REQUIRE(got == expected);
                }
                onnx::float16_overflow a, b;
                onnx::count_float16_overflow_on(conversion_path::portable, piece, a);
                onnx::count_float16_overflow_on(path, piece, b);
                REQUIRE(a.values == b.values);
                REQUIRE(a.largest == b.largest);
            }
    }
}
