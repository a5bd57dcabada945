// Every SIMD path of quantize's loops (a private header of the ops layer) against the
// portable one, which is the reference: the same range bits (which zero, +0 or -0), the same
// levels, the same largest error to the last bit. On dense random weights and on every
// boundary: NaNs with payloads and signs in every lane, +-0 in every order, +-infinity,
// subnormals, the largest floats, ties of the rounding, subnormal scales; pieces of every
// length from 0 to 67 (every tail of a 8- and a 16-lane loop) at every misalignment.
#include "ops/quantize_kernels.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cfloat>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace onnxstream;
using onnx::conversion_path;
using ops::quantized_type;
using ops::detail::block_parameters;
using ops::detail::quantize_kernels;
using ops::detail::quantize_kernels_on;
using ops::detail::quantized_range;
using ops::detail::range_of;
using ops::detail::value_range;

namespace {

float from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
std::uint64_t bits_of(double d) { return std::bit_cast<std::uint64_t>(d); }

// The values a weight can hold that a SIMD loop could get wrong.
std::vector<float> boundary_values() {
    std::vector<float> v;
    for (const std::uint32_t bits : {0x00000000U, 0x80000000U,                                         // +0, -0
                                     0x7F800000U, 0xFF800000U,                                         // +-infinity
                                     0x7FC00000U, 0xFFC00000U, 0x7F800001U, 0xFF800001U, 0x7FBFFFFFU,  // NaNs: quiet, signalling,
                                     0x7FFFFFFFU, 0xFFFFFFFFU, 0x7FC12345U, 0xFFA00001U,               //   payloads, signs
                                     0x00000001U, 0x80000001U, 0x007FFFFFU, 0x807FFFFFU, 0x00400000U,  // subnormals
                                     0x00800000U, 0x80800000U,                                         // the smallest normals
                                     0x7F7FFFFFU, 0xFF7FFFFFU})                                        // the largest floats
        v.push_back(from_bits(bits));
    for (const float f : {0.5F, -0.5F, 1.5F, -1.5F, 2.5F, -2.5F, 127.5F, -128.5F, 7.5F, -8.5F, 1.0F, -1.0F, 1e-30F, -1e30F})
        v.push_back(f);
    return v;
}

// Mostly normal weights, a third of them boundary values.
std::vector<float> mixed_values(std::size_t count, unsigned seed) {
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.0F, 0.05F);
    const auto specials = boundary_values();
    std::vector<float> v(count);
    for (auto& x : v) x = random() % 3 == 0 ? specials[random() % specials.size()] : normal(random);
    return v;
}

void same_range(const value_range& a, const value_range& b) {
    REQUIRE(bits_of(a.low) == bits_of(b.low));
    REQUIRE(bits_of(a.high) == bits_of(b.high));
    REQUIRE(bits_of(a.largest) == bits_of(b.largest));
}

// One piece through `path` and through the portable loops: scans from an empty range and
// from the range of what came before, then quantization with the piece's own parameters
// and with each of `fixed`.
void compare_piece(const quantize_kernels& simd, const float* values, std::size_t count, const value_range& before) {
    const auto& portable = quantize_kernels_on(conversion_path::portable);
    for (const auto& start : {value_range{}, before, value_range{-0.0F, -0.0F, 0.0F}}) {
        value_range expected = start, got = start;
        portable.scan(values, count, expected);
        simd.scan(values, count, got);
        same_range(expected, got);
    }
    value_range seen;
    portable.scan(values, count, seen);
    for (const auto type : {quantized_type::int8, quantized_type::int4, quantized_type::uint4})
        for (const bool symmetric : {true, false}) {
            const auto range = range_of(type);
            std::vector<block_parameters> parameters{
                ops::detail::parameters_of(seen.low, seen.high, seen.largest, type, symmetric, ops::detail::keep_float32),
                ops::detail::parameters_of(seen.low, seen.high, seen.largest, type, symmetric, ops::detail::round_to_float16),
                {1.0F, range.low},
                {from_bits(0x00000001U), range.high},
                {3e-39F, 0},
                {FLT_MAX, range.high},
                {0.25F, range.low / 2}};
            for (const auto p : parameters) {
                CAPTURE(p.scale);
                CAPTURE(p.zero_point);
                // One byte of slack each side: a kernel writes exactly its levels.
                std::vector<std::int8_t> expected(count + 2, 0x5A), got(count + 2, 0x5A);
                const double e1 = portable.quantize(values, count, p, range, expected.data() + 1);
                const double e2 = simd.quantize(values, count, p, range, got.data() + 1);
                REQUIRE(bits_of(e1) == bits_of(e2));
                REQUIRE(expected == got);
            }
        }
}

}  // namespace

TEST_CASE("the paths' loops are handed out for every available path, and the portable ones elsewhere") {
    for (const auto path : onnx::available_conversion_paths()) {
        const auto& k = quantize_kernels_on(path);
        const bool complete = k.scan != nullptr && k.scan_columns != nullptr && k.quantize != nullptr &&
                              k.quantize_columns != nullptr;
        CHECK(complete);
    }
    CHECK(&quantize_kernels_on(conversion_path::portable) == &quantize_kernels_on(conversion_path::portable));
}

TEST_CASE("every path scans and quantizes blocks as the portable loops do, at every length and misalignment") {
    const auto values = mixed_values(67 + 17 + 4096, 35);
    for (const auto path : onnx::available_conversion_paths()) {
        CAPTURE(onnx::conversion_path_name(path));
        const auto& simd = quantize_kernels_on(path);
        for (std::size_t first = 0; first < 17; ++first)
            for (std::size_t count = 0; count <= 67; ++count) {
                CAPTURE(first);
                CAPTURE(count);
                value_range before;
                quantize_kernels_on(conversion_path::portable).scan(values.data() + 67 + 17, 256, before);
                compare_piece(simd, values.data() + first, count, before);
            }
        // Long dense pieces: every block size, and a whole 4096-value row.
        for (const std::size_t count : {32U, 64U, 128U, 256U, 4096U})
            for (std::size_t at = 0; at + count <= values.size(); at += count) compare_piece(simd, values.data() + at, count, {});
    }
}

TEST_CASE("a NaN, an infinity or a zero of either sign in any lane leaves the paths alike") {
    const auto specials = boundary_values();
    std::vector<float> base = mixed_values(67, 7);
    for (auto& x : base)
        if (!std::isfinite(x)) x = 0.125F;
    for (const auto path : onnx::available_conversion_paths()) {
        CAPTURE(onnx::conversion_path_name(path));
        const auto& simd = quantize_kernels_on(path);
        for (const float special : specials)
            for (std::size_t lane = 0; lane < base.size(); ++lane) {
                CAPTURE(bits_of(special));
                CAPTURE(lane);
                auto v = base;
                v[lane] = special;
                compare_piece(simd, v.data(), v.size(), {});
            }
        // Every order of +0 and -0 over 8 lanes, and over 16 lanes with the pattern repeated
        // shifted, alone and after negative and positive values.
        for (std::uint32_t pattern = 0; pattern < 256; ++pattern) {
            std::vector<float> zeros(35);
            for (std::size_t i = 0; i < zeros.size(); ++i) zeros[i] = ((pattern >> (i % 8)) & 1U) != 0 ? -0.0F : 0.0F;
            compare_piece(simd, zeros.data(), zeros.size(), {});
            compare_piece(simd, zeros.data(), zeros.size(), {-1.0F, 2.0F, 2.0F});
        }
    }
}

TEST_CASE("every path scans and quantizes rows of axis-0 blocks column by column as the portable loops do") {
    const auto rows = mixed_values(67 * 40, 11);
    const auto& portable = quantize_kernels_on(conversion_path::portable);
    std::mt19937 random(3);
    for (const auto path : onnx::available_conversion_paths()) {
        CAPTURE(onnx::conversion_path_name(path));
        const auto& simd = quantize_kernels_on(path);
        for (std::size_t first = 0; first < 17; ++first)
            for (std::size_t count = 0; count <= 67; ++count) {
                CAPTURE(first);
                CAPTURE(count);
                // Columns' ranges over 32 rows, each row at its own misalignment.
                std::vector<float> low(count + 17, 0.0F), high(count + 17, 0.0F), largest(count + 17, 0.0F);
                auto low2 = low, high2 = high, largest2 = largest;
                for (std::size_t r = 0; r < 32; ++r) {
                    const float* row = rows.data() + (r * 67 + first) % (rows.size() - 67);
                    portable.scan_columns(row, count, low.data() + first, high.data() + first, largest.data() + first);
                    simd.scan_columns(row, count, low2.data() + first, high2.data() + first, largest2.data() + first);
                }
                for (std::size_t c = 0; c < low.size(); ++c) {
                    REQUIRE(bits_of(low[c]) == bits_of(low2[c]));
                    REQUIRE(bits_of(high[c]) == bits_of(high2[c]));
                    REQUIRE(bits_of(largest[c]) == bits_of(largest2[c]));
                }
                for (const auto type : {quantized_type::int8, quantized_type::int4, quantized_type::uint4}) {
                    const auto range = range_of(type);
                    std::vector<float> scales(count + 17);
                    std::vector<std::int32_t> zeros(count + 17);
                    for (std::size_t c = 0; c < scales.size(); ++c) {
                        const auto p = ops::detail::parameters_of(low[c], high[c], largest[c], type, random() % 2 == 0,
                                                                  ops::detail::keep_float32);
                        const float odd[] = {p.scale, from_bits(0x00000001U), 1.0F, FLT_MAX};
                        scales[c] = odd[random() % 8 < 5 ? 0 : random() % 4];
                        zeros[c] = random() % 4 == 0 ? range.low + static_cast<int>(random() % 16) % (range.high - range.low + 1)
                                                     : p.zero_point;
                    }
                    for (std::size_t r = 0; r < 40; ++r) {
                        const float* row = rows.data() + (r * 67 + first) % (rows.size() - 67);
                        std::vector<std::int8_t> expected(count + 2, 0x5A), got(count + 2, 0x5A);
                        const double e1 = portable.quantize_columns(row, count, scales.data() + first, zeros.data() + first,
                                                                    range, expected.data() + 1);
                        const double e2 = simd.quantize_columns(row, count, scales.data() + first, zeros.data() + first, range,
                                                                got.data() + 1);
                        REQUIRE(bits_of(e1) == bits_of(e2));
                        REQUIRE(expected == got);
                    }
                }
            }
    }
}

TEST_CASE("the portable quantization is quantize_value, and its error the largest over the finite values") {
    const float values[] = {1.0F, -2.5F, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 0.3F};
    const block_parameters p{0.5F, 0};
    std::int8_t levels[5] = {};
    const double error =
        quantize_kernels_on(conversion_path::portable).quantize(values, 5, p, range_of(quantized_type::int8), levels);
    CHECK(levels[0] == 2);
    CHECK(levels[1] == -5);
    CHECK(levels[2] == 0);    // NaN: the zero point
    CHECK(levels[3] == 127);  // +infinity: the top of the range, left out of the error
    CHECK(levels[4] == 1);
    CHECK(error == doctest::Approx(0.2).epsilon(1e-6));  // 0.3 against 0.5
}
