// Fuzz target: the protobuf tokenizer and the varint codec on arbitrary bytes.
//
// Checked on every input: tokens tile the buffer (each starts where the previous ended),
// stay inside it, carry a valid field number, and decode to what the varint codec says;
// a successful tokenization covers every byte; a failure is `malformed` or
// `limit_exceeded` with an offset inside the input. The same holds for every
// length-delimited payload tokenized as a sub-range, one level down.
#include "fuzz_support.hpp"

#include <onnxstream/proto/tokenizer.hpp>
#include <onnxstream/proto/varint.hpp>

#include <vector>

namespace {

using namespace onnxstream;
using proto::field_token;
using proto::wire_type;

void check_tokens(std::span<const std::byte> bytes, std::uint64_t begin, std::uint64_t end,
                  const std::vector<field_token>& tokens, const result<void>& outcome) {
    std::uint64_t expected = begin;
    for (const auto& t : tokens) {
        ONNXSTREAM_REQUIRE(t.header_offset == expected);
        ONNXSTREAM_REQUIRE(t.payload_offset > t.header_offset);
        ONNXSTREAM_REQUIRE(t.payload_offset <= end && t.payload_length <= end - t.payload_offset);
        ONNXSTREAM_REQUIRE(t.number >= 1 && t.number <= proto::max_field_number);
        const auto tag = proto::decode_varint(bytes.subspan(t.header_offset, end - t.header_offset));
        ONNXSTREAM_REQUIRE(tag.has_value());
        ONNXSTREAM_REQUIRE((tag->value >> 3) == t.number);
        ONNXSTREAM_REQUIRE(static_cast<wire_type>(tag->value & 7U) == t.type);
        switch (t.type) {
            case wire_type::varint: {
                const auto value = proto::decode_varint(bytes.subspan(t.payload_offset, t.payload_length));
                ONNXSTREAM_REQUIRE(value && value->size == t.payload_length && value->value == t.value);
                break;
            }
            case wire_type::fixed32: ONNXSTREAM_REQUIRE(t.payload_length == 4); break;
            case wire_type::fixed64: ONNXSTREAM_REQUIRE(t.payload_length == 8); break;
            case wire_type::length_delimited: {
                const auto header = t.header_offset + tag->size;
                const auto length = proto::decode_varint(bytes.subspan(header, end - header));
                ONNXSTREAM_REQUIRE(length && length->value == t.payload_length);
                ONNXSTREAM_REQUIRE(header + length->size == t.payload_offset);
                break;
            }
            default: ONNXSTREAM_FAIL("groups and reserved wire types must be refused");
        }
        expected = t.end_offset();
    }
    if (outcome) {
        ONNXSTREAM_REQUIRE(expected == end);
    } else {
        const auto& e = outcome.error();
        ONNXSTREAM_REQUIRE(e.code == error_code::malformed || e.code == error_code::limit_exceeded);
        ONNXSTREAM_REQUIRE(e.offset == error::no_offset || e.offset <= end);
        ONNXSTREAM_REQUIRE(!e.message.empty());
    }
}

void check_varints(std::span<const std::byte> bytes) {
    const auto decoded = proto::decode_varint(bytes);
    if (!decoded) return;
    ONNXSTREAM_REQUIRE(decoded->size >= 1 && decoded->size <= proto::max_varint_size && decoded->size <= bytes.size());
    const auto encoded = proto::encode_varint(decoded->value);
    ONNXSTREAM_REQUIRE(encoded.size == proto::varint_size(decoded->value));
    ONNXSTREAM_REQUIRE(encoded.size <= decoded->size);  // the input may be a non-minimal encoding
    const auto again = proto::decode_varint(encoded.view());
    ONNXSTREAM_REQUIRE(again && again->value == decoded->value && again->size == encoded.size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto bytes = fuzz::as_bytes(data, size);
    check_varints(bytes);

    std::vector<field_token> tokens;
    proto::tokenize_options options;
    options.max_fields = 1U << 14;
    const auto outcome = proto::tokenize(bytes, 0, size, tokens, options);
    check_tokens(bytes, 0, size, tokens, outcome);

    // One level down, as the message tree reads nested messages.
    std::size_t nested = 0;
    for (const auto& t : tokens) {
        if (t.type != wire_type::length_delimited || ++nested > 64) continue;
        std::vector<field_token> inner;
        const auto inner_outcome = proto::tokenize(bytes, t.payload_offset, t.end_offset(), inner, options);
        check_tokens(bytes, t.payload_offset, t.end_offset(), inner, inner_outcome);
        const auto packed = proto::count_packed_varints(bytes.subspan(t.payload_offset, t.payload_length));
        if (packed) ONNXSTREAM_REQUIRE(*packed <= t.payload_length);
    }

    // A range outside the buffer is refused, never read.
    std::vector<field_token> none;
    ONNXSTREAM_REQUIRE(!proto::tokenize(bytes, 0, size + 1, none, options));
    ONNXSTREAM_REQUIRE(none.empty());
    return 0;
}
