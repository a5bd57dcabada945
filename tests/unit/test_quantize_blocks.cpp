// The arithmetic of block quantization (a private header of the ops layer): scales, zero
// points, round half to even, clamping and the 4-bit packing ONNX lays out. The expected
// values are worked out by hand from the rule in quantize.hpp.
#include "ops/quantize_blocks.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace onnxstream;
using ops::quantized_type;
using ops::detail::block_parameters;
using ops::detail::keep_float32;
using ops::detail::parameters_of;
using ops::detail::quantize_value;
using ops::detail::range_of;
using ops::detail::round_to_float16;
using ops::detail::value_packer;

TEST_CASE("symmetric scales map the largest magnitude to 127 or 7") {
    const auto p8 = parameters_of(-2.54F, 1.0F, 2.54F, quantized_type::int8, true, keep_float32);
    CHECK(p8.scale == 2.54F / 127.0F);
    CHECK(p8.zero_point == 0);
    const auto p4 = parameters_of(-1.0F, 7.0F, 7.0F, quantized_type::int4, true, keep_float32);
    CHECK(p4.scale == 1.0F);
    CHECK(quantize_value(7.0F, p4, range_of(quantized_type::int4)) == 7);
    CHECK(quantize_value(-7.0F, p4, range_of(quantized_type::int4)) == -7);
    const auto u4 = parameters_of(-7.0F, 7.0F, 7.0F, quantized_type::uint4, true, keep_float32);
    CHECK(u4.zero_point == 8);  // uint4 symmetric is centred on 8
    CHECK(quantize_value(-7.0F, u4, range_of(quantized_type::uint4)) == 1);
    CHECK(quantize_value(7.0F, u4, range_of(quantized_type::uint4)) == 15);
}

TEST_CASE("ties round to even, and values past the range clamp") {
    const block_parameters unit{1.0F, 0};
    const auto r = range_of(quantized_type::int4);
    CHECK(quantize_value(0.5F, unit, r) == 0);
    CHECK(quantize_value(1.5F, unit, r) == 2);
    CHECK(quantize_value(2.5F, unit, r) == 2);
    CHECK(quantize_value(-2.5F, unit, r) == -2);
    CHECK(quantize_value(100.0F, unit, r) == 7);
    CHECK(quantize_value(-100.0F, unit, r) == -8);
    CHECK(quantize_value(1e30F, unit, range_of(quantized_type::int8)) == 127);
    CHECK(quantize_value(std::numeric_limits<float>::infinity(), unit, r) == 7);
    CHECK(quantize_value(-std::numeric_limits<float>::infinity(), unit, r) == -8);
    CHECK(quantize_value(std::nanf(""), {1.0F, 3}, r) == 3);
}

TEST_CASE("asymmetric: the range holds zero, and zero is exact") {
    const auto r = range_of(quantized_type::uint4);
    const auto p = parameters_of(1.0F, 16.0F, 16.0F, quantized_type::uint4, false, keep_float32);
    CHECK(p.scale == 16.0F / 15.0F);  // [0, 16]: min is raised to 0
    CHECK(p.zero_point == 0);
    CHECK(quantize_value(0.0F, p, r) == p.zero_point);
    const auto q = parameters_of(-3.0F, 12.0F, 12.0F, quantized_type::uint4, false, keep_float32);
    CHECK(q.scale == 1.0F);
    CHECK(q.zero_point == 3);
    CHECK(quantize_value(-3.0F, q, r) == 0);
    CHECK(quantize_value(12.0F, q, r) == 15);
    const auto s = parameters_of(-8.0F, 7.0F, 8.0F, quantized_type::int4, false, keep_float32);
    CHECK(s.scale == 1.0F);
    CHECK(s.zero_point == 0);
}

TEST_CASE("asymmetric: a block spanning more than FLT_MAX keeps a finite scale and a zero point in range") {
    // hi - lo overflows to infinity here: the scale once fell back to 1 and the zero point,
    // about 3.4e38, was converted to int (undefined; INT_MIN on x86, then clamped to the
    // wrong end). clang's UBSan (float-cast-overflow) found it.
    constexpr float big = std::numeric_limits<float>::max();
    for (const auto type : {quantized_type::int8, quantized_type::int4, quantized_type::uint4}) {
        CAPTURE(static_cast<int>(type));
        const auto r = range_of(type);
        const auto p = parameters_of(-big, big, big, type, false, keep_float32);
        REQUIRE(std::isfinite(p.scale));
        CHECK(p.scale == doctest::Approx(2.0 * static_cast<double>(big) / (r.high - r.low)).epsilon(1e-6));
        CHECK(p.zero_point >= r.low);
        CHECK(p.zero_point <= r.high);
        CHECK(quantize_value(-big, p, r) == r.low);
        CHECK(quantize_value(big, p, r) == r.high);
        CHECK(quantize_value(0.0F, p, r) == p.zero_point);
        // An infinite end (never a scanned weight's, but the function's own contract): the
        // zero point is still one of the type's values.
        const auto inf = parameters_of(-std::numeric_limits<float>::infinity(), 1.0F, 1.0F, type, false, keep_float32);
        CHECK(inf.zero_point >= r.low);
        CHECK(inf.zero_point <= r.high);
    }
}

TEST_CASE("an all-zero block gets scale 1 and dequantizes to zeros") {
    for (const auto type : {quantized_type::int8, quantized_type::int4, quantized_type::uint4})
        for (const bool symmetric : {true, false}) {
            const auto p = parameters_of(0.0F, 0.0F, 0.0F, type, symmetric, keep_float32);
            CHECK(p.scale == 1.0F);
            CHECK(quantize_value(0.0F, p, range_of(type)) == p.zero_point);
        }
}

TEST_CASE("float16 weights get their scale rounded to float16, to nearest even") {
    // 1/127 is not a float16 value: the stored scale is the nearest one, and quantizing
    // divides by the stored scale.
    const auto p = parameters_of(-1.0F, 1.0F, 1.0F, quantized_type::int8, true, round_to_float16);
    CHECK(p.scale == round_to_float16(1.0F / 127.0F));
    CHECK(p.scale != 1.0F / 127.0F);
    CHECK(round_to_float16(1.0F + 1.0F / 2048.0F) == 1.0F);  // a tie: to even
    CHECK(round_to_float16(1.0F + 3.0F / 2048.0F) == 1.0F + 2.0F / 1024.0F);
    // A scale float16 cannot hold (too small) falls back to 1, not 0.
    const auto tiny = parameters_of(0.0F, 1e-9F, 1e-9F, quantized_type::int8, true, round_to_float16);
    CHECK(tiny.scale == 1.0F);
}

TEST_CASE("4-bit values pack two per byte, the first in the low nibble") {
    std::vector<std::byte> out;
    value_packer packer(4, out);
    for (const int q : {1, -1, 7, -8, 5}) packer.add(q);
    packer.finish();
    REQUIRE(out.size() == 3);
    CHECK(out[0] == std::byte{0xF1});
    CHECK(out[1] == std::byte{0x87});
    CHECK(out[2] == std::byte{0x05});  // an odd count: the last high nibble is 0
    std::vector<std::byte> bytes;
    value_packer eight(8, bytes);
    eight.add(-128);
    eight.add(127);
    eight.finish();
    CHECK(bytes == std::vector<std::byte>{std::byte{0x80}, std::byte{0x7F}});
    CHECK(ops::detail::packed_bytes(5, 4) == 3);
    CHECK(ops::detail::packed_bytes(5, 8) == 5);
}
