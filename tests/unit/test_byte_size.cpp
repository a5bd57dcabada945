// Byte sizes as text both ways (report/byte_size.hpp).
#include <onnxstream/report/byte_size.hpp>

#include <doctest/doctest.h>

using onnxstream::report::human_bytes;
using onnxstream::report::parse_size;

TEST_CASE("sizes as people type them, in powers of 1024") {
    CHECK(parse_size("4096") == 4096U);
    CHECK(parse_size("64K") == 65536U);
    CHECK(parse_size("64kib") == 65536U);
    CHECK(parse_size("1M") == 1048576U);
    CHECK(parse_size("2GB") == 2147483648ULL);
    CHECK(parse_size("1T") == 1ULL << 40);
    CHECK(parse_size("0") == 0U);
    CHECK(parse_size("7b") == 7U);
}

TEST_CASE("what is not a size, or does not fit in 64 bits, is refused") {
    for (const char* bad : {"", "K", "-1", "1.5M", "1 M", "1X", "1KK", "99999999999999999999", "17179869184G"})
        CHECK_FALSE(parse_size(bad).has_value());
    CHECK(parse_size("16777215T") == 16777215ULL << 40);  // the largest T that fits
}

TEST_CASE("byte counts for people") {
    CHECK(human_bytes(0) == "0 B");
    CHECK(human_bytes(1023) == "1023 B");
    CHECK(human_bytes(1536) == "1.5 KiB");
    CHECK(human_bytes(5U << 20) == "5.0 MiB");
    CHECK(human_bytes(3ULL << 30) == "3.00 GiB");
}
