#include <onnxstream/proto/tokenizer.hpp>

#include "proto_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::proto_builder;

TEST_CASE("tokenize records offsets without touching payloads") {
    proto_builder b;
    b.varint_field(1, 300).string_field(2, "hello").fixed32_field(3, 7);
    std::vector<proto::field_token> tokens;
    REQUIRE(proto::tokenize(b.bytes(), 0, b.bytes().size(), tokens));
    REQUIRE(tokens.size() == 3);
    CHECK(tokens[0].number == 1);
    CHECK(tokens[0].type == proto::wire_type::varint);
    CHECK(tokens[0].value == 300);
    CHECK(tokens[0].header_offset == 0);
    CHECK(tokens[0].payload_offset == 1);
    CHECK(tokens[0].payload_length == 2);
    CHECK(tokens[1].number == 2);
    CHECK(tokens[1].header_offset == 3);
    CHECK(tokens[1].payload_offset == 5);
    CHECK(tokens[1].payload_length == 5);
    CHECK(tokens[2].type == proto::wire_type::fixed32);
    CHECK(tokens[2].end_offset() == b.bytes().size());
}

TEST_CASE("a length past the end is malformed, with its offset") {
    proto_builder b;
    b.varint_field(1, 1).raw_varint((2 << 3) | 2).raw_varint(1000).string_field(3, "x");
    std::vector<proto::field_token> tokens;
    const auto status = proto::tokenize(b.bytes(), 0, b.bytes().size(), tokens);
    REQUIRE_FALSE(status);
    CHECK(status.error().code == error_code::malformed);
    CHECK(status.error().offset == 2);
    CHECK(tokens.size() == 1);
}

TEST_CASE("groups, reserved wire types and field number 0 are refused") {
    for (const std::uint64_t tag : {std::uint64_t{(1 << 3) | 3}, std::uint64_t{(1 << 3) | 4}, std::uint64_t{(1 << 3) | 6},
                                    std::uint64_t{(1 << 3) | 7}, std::uint64_t{0}}) {
        proto_builder b;
        b.raw_varint(tag).raw_varint(0);
        std::vector<proto::field_token> tokens;
        CHECK_FALSE(proto::tokenize(b.bytes(), 0, b.bytes().size(), tokens));
    }
}

TEST_CASE("truncation at every byte of a valid message never reads past the end") {
    proto_builder inner;
    inner.string_field(8, "weight").varint_field(2, 1);
    proto_builder b;
    b.varint_field(1, 8).message_field(7, inner).fixed32_field(5, 3);
    const auto full = b.bytes();
    for (std::size_t cut = 0; cut < full.size(); ++cut) {
        std::vector<proto::field_token> tokens;
        const auto status = proto::tokenize(full.first(cut), 0, cut, tokens);
        if (status) {
            // A clean cut between fields is a shorter valid message.
            for (const auto& t : tokens) CHECK(t.end_offset() <= cut);
        } else {
            CHECK(status.error().code == error_code::malformed);
        }
    }
}

TEST_CASE("the field limit is enforced") {
    proto_builder b;
    for (int i = 0; i < 10; ++i) b.varint_field(1, 1);
    std::vector<proto::field_token> tokens;
    proto::tokenize_options options;
    options.max_fields = 5;
    const auto status = proto::tokenize(b.bytes(), 0, b.bytes().size(), tokens, options);
    REQUIRE_FALSE(status);
    CHECK(status.error().code == error_code::limit_exceeded);
}

TEST_CASE("count_packed_varints") {
    proto_builder b;
    b.raw_varint(1).raw_varint(300).raw_varint(1ULL << 40);
    const auto count = proto::count_packed_varints(b.bytes());
    REQUIRE(count);
    CHECK(*count == 3);
    const std::vector<std::byte> broken{std::byte{0x80}};
    CHECK_FALSE(proto::count_packed_varints(broken));
}

namespace {

// Every field of the two tokens, the varint's value included.
bool same_token(const proto::field_token& a, const proto::field_token& b) {
    return a.header_offset == b.header_offset && a.payload_offset == b.payload_offset && a.payload_length == b.payload_length &&
           a.value == b.value && a.number == b.number && a.type == b.type;
}

// read_field_fast either declines or gives exactly read_field's token; counts the fields
// it read itself.
struct fast_path_check {
    std::uint64_t fast = 0;
    std::uint64_t mismatches = 0;

    void at_every_end(const std::vector<std::byte>& bytes, std::uint64_t position) {
        for (std::uint64_t end = 0; end <= bytes.size() + 1; ++end) check(bytes, position, end);
    }
    void check(std::span<const std::byte> bytes, std::uint64_t position, std::uint64_t end) {
        proto::field_token token;
        token.header_offset = token.payload_offset = token.payload_length = token.value = 0xDEADBEEF;  // all overwritten
        token.number = 12345;
        const bool read = proto::read_field_fast_in(bytes, position, end, token);
        // Given only the bytes it needs (as a window of a file is), it decides the same.
        if (position < end && end <= bytes.size()) {
            proto::field_token windowed;
            const auto header = bytes.subspan(position, std::min<std::uint64_t>(12, end - position));
            if (proto::read_field_fast(header, position, end, windowed) != read || (read && !same_token(windowed, token)))
                ++mismatches;
        }
        if (!read) return;
        ++fast;
        const auto slow = proto::read_field(bytes, position, end);
        if (!slow || !same_token(slow.value(), token)) ++mismatches;
    }
};

std::vector<std::byte> bytes_of(std::initializer_list<unsigned> values) {
    std::vector<std::byte> out;
    for (const auto v : values) out.push_back(static_cast<std::byte>(v));
    return out;
}

}  // namespace

TEST_CASE("read_field_fast agrees with read_field on every one-, two- and three-byte input, cut at every end") {
    fast_path_check c;
    std::vector<std::byte> bytes(3);
    for (unsigned a = 0; a < 256; ++a)
        for (unsigned b = 0; b < 256; ++b) {
            bytes = bytes_of({a, b});
            c.at_every_end(bytes, 0);
            c.at_every_end(bytes, 1);
            for (const unsigned third : {0x00U, 0x01U, 0x02U, 0x7FU, 0x80U, 0xFFU}) {
                bytes = bytes_of({a, b, third});
                c.at_every_end(bytes, 0);
            }
        }
    CHECK(c.mismatches == 0);
    CHECK(c.fast > 10000);
}

TEST_CASE("read_field_fast agrees with read_field on tags, varints and lengths of every size, truncated and overlong") {
    // Tags of one to eleven bytes (non-minimal ones included), for field numbers 0, 1, 15,
    // 16, 2047, 2048, the largest, and one past it; then a payload prefix of the same kinds.
    std::vector<std::vector<unsigned>> prefixes;
    for (const std::uint64_t value : {0ULL, 1ULL, 5ULL, 127ULL, 128ULL, 300ULL, 16383ULL, 16384ULL, 1ULL << 35, ~0ULL}) {
        std::vector<unsigned> v;
        const auto encoded = proto::encode_varint(value);  // a range-for would not keep the temporary alive
        for (const auto b : encoded.view()) v.push_back(static_cast<unsigned>(b));
        prefixes.push_back(v);
        auto overlong = v;  // the same value in one more byte
        overlong.back() |= 0x80U;
        overlong.push_back(0);
        prefixes.push_back(overlong);
    }
    prefixes.push_back({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00});  // 11 bytes
    prefixes.push_back({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02});        // past 64 bits
    prefixes.push_back({0x80});                                                              // does not end
    fast_path_check c;
    for (const std::uint32_t number : {0U, 1U, 15U, 16U, 2047U, 2048U, proto::max_field_number, proto::max_field_number + 1})
        for (std::uint32_t type = 0; type < 8; ++type) {
            const auto tag = (static_cast<std::uint64_t>(number) << 3) | type;
            for (const bool overlong_tag : {false, true}) {
                std::vector<unsigned> head;
                const auto encoded = proto::encode_varint(tag);
                for (const auto b : encoded.view()) head.push_back(static_cast<unsigned>(b));
                if (overlong_tag) {
                    head.back() |= 0x80U;
                    head.push_back(0);
                }
                for (const auto& prefix : prefixes) {
                    std::vector<std::byte> bytes;
                    for (const auto b : head) bytes.push_back(static_cast<std::byte>(b));
                    for (const auto b : prefix) bytes.push_back(static_cast<std::byte>(b));
                    for (int i = 0; i < 300; ++i) bytes.push_back(static_cast<std::byte>(i * 7));  // a payload
                    for (std::uint64_t end = 0; end <= bytes.size() + 1; ++end) {
                        c.check(bytes, 0, end);
                        c.check(std::span(bytes).first(std::min<std::size_t>(end, bytes.size())), 0, end);
                    }
                }
            }
        }
    CHECK(c.mismatches == 0);
    CHECK(c.fast > 1000);
}

TEST_CASE("read_field_fast reads the common fields itself") {
    proto_builder b;
    const std::array<std::byte, 8> fixed64{};
    b.varint_field(1, 300).string_field(2, "hello").fixed32_field(3, 7).raw_varint((2047U << 3) | 1).raw(fixed64);
    b.string_field(4, std::string(16383, 'x'));
    const auto bytes = b.bytes();
    std::uint64_t position = 0;
    int read = 0;
    while (position < bytes.size()) {
        proto::field_token token;
        REQUIRE(proto::read_field_fast_in(bytes, position, bytes.size(), token));
        const auto slow = proto::read_field(bytes, position, bytes.size());
        REQUIRE(slow);
        CHECK(same_token(slow.value(), token));
        position = token.end_offset();
        ++read;
    }
    CHECK(read == 5);
    // A length of three bytes is read_field's to read.
    proto_builder long_one;
    long_one.string_field(1, std::string(16384, 'x'));
    proto::field_token token;
    CHECK_FALSE(proto::read_field_fast_in(long_one.bytes(), 0, long_one.bytes().size(), token));
}
