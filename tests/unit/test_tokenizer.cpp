#include <onnxstream/proto/tokenizer.hpp>

#include "proto_builder.hpp"

#include <doctest/doctest.h>

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
