#include <onnxstream/proto/varint.hpp>

#include <doctest/doctest.h>

#include <limits>
#include <vector>

using namespace onnxstream::proto;

TEST_CASE("varint sizes match the encoding at every 7-bit boundary") {
    for (int bits = 0; bits <= 64; ++bits) {
        const std::uint64_t value = bits == 64 ? std::numeric_limits<std::uint64_t>::max() : (bits == 0 ? 0 : (1ULL << bits) - 1);
        const auto encoded = encode_varint(value);
        CHECK(encoded.size == varint_size(value));
        const auto decoded = decode_varint(encoded.view());
        REQUIRE(decoded);
        CHECK(decoded->value == value);
        CHECK(decoded->size == encoded.size);
    }
    CHECK(varint_size(127) == 1);
    CHECK(varint_size(128) == 2);
    CHECK(varint_size(std::numeric_limits<std::uint64_t>::max()) == 10);
}

TEST_CASE("decode_varint refuses what does not end or overflows 64 bits") {
    const std::vector<std::byte> unterminated{std::byte{0x80}, std::byte{0x80}};
    CHECK_FALSE(decode_varint(unterminated));
    std::vector<std::byte> eleven(10, std::byte{0x80});
    eleven.push_back(std::byte{0x01});
    CHECK_FALSE(decode_varint(eleven));
    std::vector<std::byte> overflow(9, std::byte{0xFF});
    overflow.push_back(std::byte{0x02});  // the tenth byte may carry only one bit
    CHECK_FALSE(decode_varint(overflow));
    CHECK_FALSE(decode_varint({}));
}

TEST_CASE("non-minimal varints still decode") {
    const std::vector<std::byte> padded{std::byte{0x81}, std::byte{0x80}, std::byte{0x00}};
    const auto decoded = decode_varint(padded);
    REQUIRE(decoded);
    CHECK(decoded->value == 1);
    CHECK(decoded->size == 3);
}

TEST_CASE("tags and field sizes") {
    CHECK(make_tag(1, wire_type::varint) == 8);
    CHECK(make_tag(9, wire_type::length_delimited) == 74);
    CHECK(tag_size(15) == 1);
    CHECK(tag_size(16) == 2);
    CHECK(length_delimited_field_size(9, 300) == 1 + 2 + 300);
}
