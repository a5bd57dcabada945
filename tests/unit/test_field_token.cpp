// field_token's derived lengths, on bytes written out by hand from the protobuf encoding
// guide (protobuf.dev/programming-guides/encoding): `08 96 01` is field 1 = 150, `12 07
// 74 65 73 74 69 6e 67` is field 2 = "testing", and field 16 needs a two-byte tag.
#include <onnxstream/proto/field_token.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace onnxstream::proto;

namespace {

template <std::size_t N>
std::array<std::byte, N> bytes_of(const unsigned char (&raw)[N]) {
    std::array<std::byte, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = std::byte{raw[i]};
    return out;
}

}  // namespace

TEST_CASE("header, payload and total lengths of the encoding guide's examples") {
    // 150, "testing", field 16 = {01 02} (tag 0x82 0x01), fixed64 field 3 = 1.
    const unsigned char raw[] = {0x08, 0x96, 0x01, 0x12, 0x07, 't',  'e',  's',  't',  'i',  'n',  'g',  0x82,
                                 0x01, 0x02, 0x01, 0x02, 0x19, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    const auto bytes = bytes_of(raw);
    std::vector<field_token> tokens;
    REQUIRE(tokenize(bytes, 0, bytes.size(), tokens));
    REQUIRE(tokens.size() == 4);

    CHECK(tokens[0].number == 1);
    CHECK(tokens[0].value == 150);
    CHECK(tokens[0].header_length() == 1);
    CHECK(tokens[0].payload_length == 2);  // the varint's own bytes
    CHECK(tokens[0].total_length() == 3);
    CHECK(tokens[0].end_offset() == 3);

    CHECK(tokens[1].number == 2);
    CHECK(tokens[1].type == wire_type::length_delimited);
    CHECK(tokens[1].header_offset == 3);
    CHECK(tokens[1].header_length() == 2);  // tag and length prefix
    CHECK(tokens[1].payload_offset == 5);
    CHECK(tokens[1].payload_length == 7);
    CHECK(tokens[1].total_length() == 9);

    CHECK(tokens[2].number == 16);
    CHECK(tokens[2].header_offset == 12);
    CHECK(tokens[2].header_length() == 3);  // two tag bytes, one length byte
    CHECK(tokens[2].payload_length == 2);
    CHECK(tokens[2].end_offset() == 17);

    CHECK(tokens[3].number == 3);
    CHECK(tokens[3].type == wire_type::fixed64);
    CHECK(tokens[3].header_length() == 1);
    CHECK(tokens[3].payload_length == 8);
    CHECK(tokens[3].end_offset() == bytes.size());
}

TEST_CASE("offsets are absolute in the buffer: a token found inside a nested range keeps them") {
    // An outer field 1 holding the 3 bytes `08 96 01`: tokenize only the payload range.
    const unsigned char raw[] = {0x0A, 0x03, 0x08, 0x96, 0x01};
    const auto bytes = bytes_of(raw);
    std::vector<field_token> inner;
    REQUIRE(tokenize(bytes, 2, bytes.size(), inner));
    REQUIRE(inner.size() == 1);
    CHECK(inner[0].header_offset == 2);
    CHECK(inner[0].payload_offset == 3);
    CHECK(inner[0].end_offset() == 5);
    CHECK(inner[0].value == 150);
}

TEST_CASE("the derived lengths are compile-time arithmetic on the offsets") {
    constexpr field_token t{.header_offset = 10, .payload_offset = 13, .payload_length = 300};
    static_assert(t.header_length() == 3);
    static_assert(t.end_offset() == 313);
    static_assert(t.total_length() == 303);
    CHECK(t.total_length() == t.header_length() + t.payload_length);
}
