// One field of a protobuf message as the tokenizer records it: where it is, not what it
// holds. Offsets are absolute in the tokenized buffer (the mapped file), so a token can
// become a file slice without knowing which message it was found in.
#pragma once

#include <onnxstream/proto/varint.hpp>

#include <cstdint>

namespace onnxstream::proto {

struct field_token {
    std::uint64_t header_offset = 0;   // first byte of the tag
    std::uint64_t payload_offset = 0;  // first byte after the tag (and the length prefix)
    std::uint64_t payload_length = 0;  // bytes of the payload (varint bytes, 4, 8, or the length)
    std::uint64_t value = 0;           // the decoded value of a varint field; 0 otherwise
    std::uint32_t number = 0;
    wire_type type = wire_type::varint;

    [[nodiscard]] constexpr std::uint64_t end_offset() const noexcept { return payload_offset + payload_length; }
    [[nodiscard]] constexpr std::uint64_t header_length() const noexcept { return payload_offset - header_offset; }
    [[nodiscard]] constexpr std::uint64_t total_length() const noexcept { return end_offset() - header_offset; }
};

}  // namespace onnxstream::proto
