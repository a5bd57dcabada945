// The bit conversions against references computed here another way: every float16 value
// widened and narrowed back, every midpoint between neighbours (ties to even), and a
// strided sample of all 2^32 float32 patterns against a nearest-value search over the
// sorted float16 values (in double precision). numpy and torch check the same through
// the binary in tests/e2e/test_convert.py. Then both writers execute convert operations.
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/float_conversion.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

using namespace onnxstream;
using onnx::bfloat16_to_float32_bits;
using onnx::float16_to_float32_bits;
using onnx::float32_to_bfloat16_bits;
using onnx::float32_to_float16_bits;

namespace {

float as_float(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint32_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }

std::uint16_t to_half(std::uint32_t bits) {
    bool saturated = false;
    return float32_to_float16_bits(bits, saturated);
}

// The float16 nearest to `value` (ties to the even pattern), saturating past 65504;
// found by binary search over the positive finite float16 values.
std::uint16_t reference_half(float value) {
    static const std::vector<double> positives = [] {
        std::vector<double> v;
        for (std::uint32_t h = 0; h < 0x7C00; ++h)
            v.push_back(static_cast<double>(as_float(float16_to_float32_bits(static_cast<std::uint16_t>(h)))));
        return v;
    }();
    const auto sign = static_cast<std::uint16_t>(std::signbit(value) ? 0x8000 : 0);
    const double magnitude = std::fabs(static_cast<double>(value));
    if (magnitude >= 65520.0) return static_cast<std::uint16_t>(sign | 0x7BFF);
    const auto above = std::lower_bound(positives.begin(), positives.end(), magnitude);
    if (above == positives.begin()) return sign;
    if (above == positives.end()) return static_cast<std::uint16_t>(sign | 0x7BFF);  // (65504, 65520): rounds down
    const auto hi = static_cast<std::uint16_t>(above - positives.begin());
    const auto lo = static_cast<std::uint16_t>(hi - 1);
    const double down = magnitude - positives[lo];
    const double up = positives[hi] - magnitude;
    const std::uint16_t pick = down < up ? lo : up < down ? hi : ((lo & 1) == 0 ? lo : hi);
    return static_cast<std::uint16_t>(sign | pick);
}

}  // namespace

TEST_CASE("every float16 survives a round trip through float32") {
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto half = static_cast<std::uint16_t>(h);
        const auto wide = float16_to_float32_bits(half);
        if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) {
            CHECK(std::isnan(as_float(wide)));
            CHECK((to_half(wide) & 0x7E00) == 0x7E00);  // still a (quiet) NaN
            continue;
        }
        REQUIRE(to_half(wide) == half);
    }
}

TEST_CASE("midpoints between neighbouring float16 values round to the even one") {
    for (std::uint32_t h = 0; h < 0x7BFF; ++h) {
        const double a = static_cast<double>(as_float(float16_to_float32_bits(static_cast<std::uint16_t>(h))));
        const double b = static_cast<double>(as_float(float16_to_float32_bits(static_cast<std::uint16_t>(h + 1))));
        const auto mid = static_cast<float>((a + b) / 2);  // exact in float32
        const auto expected = static_cast<std::uint16_t>((h & 1) == 0 ? h : h + 1);
        REQUIRE(to_half(bits_of(mid)) == expected);
        REQUIRE(to_half(bits_of(-mid)) == (expected | 0x8000));
    }
}

TEST_CASE("a strided sample of all float32 patterns matches the nearest-value reference") {
    std::uint64_t checked = 0;
    for (std::uint64_t b = 0; b < (1ULL << 32); b += 4093) {
        const auto bits = static_cast<std::uint32_t>(b);
        const float value = as_float(bits);
        if (std::isnan(value)) {
            CHECK(std::isnan(as_float(float16_to_float32_bits(to_half(bits)))));
            continue;
        }
        if (std::isinf(value)) {
            CHECK(to_half(bits) == (value > 0 ? 0x7C00 : 0xFC00));
            continue;
        }
        REQUIRE(to_half(bits) == reference_half(value));
        ++checked;
    }
    CHECK(checked > 1'000'000);
}

TEST_CASE("saturation is reported exactly from 65520 up") {
    bool saturated = false;
    CHECK(float32_to_float16_bits(bits_of(65504.0F), saturated) == 0x7BFF);
    CHECK_FALSE(saturated);
    CHECK(float32_to_float16_bits(bits_of(65519.99F), saturated) == 0x7BFF);
    CHECK_FALSE(saturated);
    CHECK(float32_to_float16_bits(bits_of(65520.0F), saturated) == 0x7BFF);
    CHECK(saturated);
    CHECK(float32_to_float16_bits(bits_of(-3.0e38F), saturated) == 0xFBFF);
    CHECK(saturated);
    CHECK(float32_to_float16_bits(0x7F800000U, saturated) == 0x7C00);
    CHECK_FALSE(saturated);
}

TEST_CASE("bfloat16 rounds to nearest even and keeps NaN quiet") {
    CHECK(float32_to_bfloat16_bits(bits_of(1.0F)) == 0x3F80);
    CHECK(float32_to_bfloat16_bits(0x3F808000U) == 0x3F80);  // tie, even stays
    CHECK(float32_to_bfloat16_bits(0x3F818000U) == 0x3F82);  // tie, odd rounds up
    CHECK(float32_to_bfloat16_bits(0x3F808001U) == 0x3F81);
    CHECK(float32_to_bfloat16_bits(0x7F7FFFFFU) == 0x7F80);  // rounds up to infinity, as RNE does
    CHECK(float32_to_bfloat16_bits(0x7F800001U) == 0x7FC0);  // signalling NaN made quiet
    CHECK(float32_to_bfloat16_bits(0xFFC00000U) == 0xFFC0);
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto b = static_cast<std::uint16_t>(h);
        if ((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0) continue;
        REQUIRE(float32_to_bfloat16_bits(bfloat16_to_float32_bits(b)) == b);
    }
}

TEST_CASE("both writers execute convert operations through their buffers") {
    test_support::temp_folder dir;
    // 3 MiB of float32 (several buffers of a 4 KiB ring), values that include overflow.
    const std::size_t count = 3U << 18;
    std::string bytes(count * 4, '\0');
    std::uint64_t expected_saturated = 0;
    std::string expected_half(count * 2, '\0'), expected_bf16(count * 2, '\0');
    for (std::size_t i = 0; i < count; ++i) {
        const auto bits = static_cast<std::uint32_t>(i * 2654435761U);
        for (int k = 0; k < 4; ++k) bytes[4 * i + static_cast<std::size_t>(k)] = static_cast<char>((bits >> (8 * k)) & 0xFF);
        bool saturated = false;
        const auto h = float32_to_float16_bits(bits, saturated);
        expected_saturated += saturated ? 1 : 0;
        const auto b = float32_to_bfloat16_bits(bits);
        expected_half[2 * i] = static_cast<char>(h & 0xFF);
        expected_half[2 * i + 1] = static_cast<char>(h >> 8);
        expected_bf16[2 * i] = static_cast<char>(b & 0xFF);
        expected_bf16[2 * i + 1] = static_cast<char>(b >> 8);
    }
    const auto path = dir.write("weights", "abcd" + bytes);
    auto source = io::source_file::open(path, false);
    REQUIRE(source);
    const io::source_file* table[] = {&*source};
    std::vector<std::unique_ptr<io::plan_writer>> writers;
    writers.push_back(io::make_portable_writer());
    if (auto uring = io::make_uring_writer()) writers.push_back(std::move(uring));
    for (auto& writer : writers) {
        for (const std::size_t buffer : {std::size_t{4096}, std::size_t{1} << 20}) {
            CAPTURE(writer->name());
            CAPTURE(buffer);
            io::write_operation half_op{io::operation_kind::convert, 0, io::no_check, 0, count * 2, 4};
            half_op.conversion = onnx::float_conversion::float32_to_float16;
            io::write_operation bf16_op{io::operation_kind::convert, 0, io::no_check, count * 2 + 8, count * 2, 4};
            bf16_op.conversion = onnx::float_conversion::float32_to_bfloat16;
            bf16_op.check = 0;  // hashes the float32 input
            const io::stream_check checks[] = {{.tensor = "w", .expected_sha1 = std::nullopt, .compute_sha1 = true}};
            const io::write_operation ops[] = {half_op, bf16_op};
            const auto out_path = dir.path() / "out";
            const int fd = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            REQUIRE(fd >= 0);
            REQUIRE(::ftruncate(fd, static_cast<off_t>(count * 4 + 8)) == 0);
            io::write_job job;
            job.operations = ops;
            job.checks = checks;
            job.sources = table;
            job.output_descriptor = fd;
            io::writer_options options;
            options.buffer_size = buffer;
            options.buffer_count = 2;
            const auto report = writer->run(job, options);
            ::close(fd);
            REQUIRE(report);
            CHECK(report->saturated == expected_saturated);
            REQUIRE(report->checks[0].sha1);
            CHECK(*report->checks[0].sha1 == io::sha1_of(std::as_bytes(std::span(bytes.data(), bytes.size()))));
            CHECK(report->bytes_written == count * 4);
            const auto got = test_support::read_file(out_path);
            CHECK(got.substr(0, count * 2) == expected_half);
            CHECK(got.substr(count * 2, 8) == std::string(8, '\0'));
            CHECK(got.substr(count * 2 + 8) == expected_bf16);
        }
    }
}

TEST_CASE("a convert operation past the end of its source fails instead of reading beyond it") {
    test_support::temp_folder dir;
    const auto path = dir.write("short", std::string(16, '\x01'));
    auto source = io::source_file::open(path, false);
    REQUIRE(source);
    const io::source_file* table[] = {&*source};
    io::write_operation op{io::operation_kind::convert, 0, io::no_check, 0, 16, 0};  // needs 32 bytes
    op.conversion = onnx::float_conversion::float32_to_float16;
    const io::write_operation ops[] = {op};
    const auto out_path = dir.path() / "out";
    const int fd = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    io::write_job job;
    job.operations = ops;
    job.sources = table;
    job.output_descriptor = fd;
    std::vector<std::unique_ptr<io::plan_writer>> writers;
    writers.push_back(io::make_portable_writer());
    if (auto uring = io::make_uring_writer()) writers.push_back(std::move(uring));
    for (auto& writer : writers) {
        const auto report = writer->run(job, {});
        REQUIRE_FALSE(report);
        CHECK(report.error().code == error_code::truncated_data);
    }
    ::close(fd);
}

TEST_CASE("the branch-free bulk conversion agrees with the reference one") {
    auto check = [](std::uint32_t bits) {
        bool saturated = false;
        const auto expected = float32_to_float16_bits(bits, saturated);
        std::uint32_t clamped = 0;
        const auto fast = onnx::float32_to_float16_fast(bits, clamped);
        REQUIRE(fast == expected);
        REQUIRE((clamped == 1) == saturated);
    };
    for (std::uint64_t b = 0; b < (1ULL << 32); b += 997) check(static_cast<std::uint32_t>(b));
    // Every pattern around the region boundaries: zero, subnormal/normal, overflow, inf/NaN.
    for (const std::uint32_t edge : {0x00000000U, 0x33000000U, 0x38800000U, 0x477FF000U, 0x7F800000U})
        for (std::uint32_t d = 0; d < (1U << 16); ++d) {
            check(edge + d);
            check(edge - d);
            check((edge + d) | 0x80000000U);
        }
    // And the bulk routine over bytes, both types, against the per-value functions.
    std::vector<std::byte> in(4 * 5000), out(2 * 5000);
    for (std::size_t i = 0; i < 5000; ++i) {
        const auto bits = static_cast<std::uint32_t>(i * 2654435761U);
        for (int k = 0; k < 4; ++k) in[4 * i + static_cast<std::size_t>(k)] = static_cast<std::byte>((bits >> (8 * k)) & 0xFFU);
    }
    std::uint64_t expected_saturated = 0;
    const auto got_saturated = onnx::convert_float32_bytes(onnx::float_conversion::float32_to_float16, in, out);
    for (std::size_t i = 0; i < 5000; ++i) {
        bool saturated = false;
        const auto h = float32_to_float16_bits(static_cast<std::uint32_t>(i * 2654435761U), saturated);
        expected_saturated += saturated ? 1 : 0;
        REQUIRE(static_cast<std::uint16_t>(std::to_integer<unsigned>(out[2 * i]) |
                                           (std::to_integer<unsigned>(out[2 * i + 1]) << 8)) == h);
    }
    CHECK(got_saturated == expected_saturated);
    // What convert reads first to keep such tensors float32: the same values, found
    // without converting (NaN and infinities are not among them: they convert as they are).
    onnx::float16_overflow found;
    onnx::count_float16_overflow(in, found);
    CHECK(found.values == expected_saturated);
    CHECK(found.largest >= 65520.0F);
}
