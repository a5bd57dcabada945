// The tokenizer: walks one message's bytes and records, for each field, its number, wire
// type and offsets (a `field_token`). It copies nothing and never looks inside a
// length-delimited payload: a 1 GB `raw_data` costs the same as an empty one, and the
// pages under it are never touched.
//
// Every length is checked against the bytes left before it is used, so a hostile length
// prefix can neither read past the buffer nor make the caller allocate.
#pragma once

#include <onnxstream/proto/field_token.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace onnxstream::proto {

struct tokenize_options {
    std::uint64_t max_fields = 1ULL << 32;  // fields in one message before limit_exceeded
};

/// Tokenizes the message occupying `[begin, end)` of `buffer`, appending its fields to
/// `out`. Offsets in the tokens are offsets in `buffer`. Errors: `malformed` (a varint that
/// does not end, a length past the end, a group or reserved wire type, field number 0),
/// `limit_exceeded`. On error `out` holds the fields read before it.
[[nodiscard]] result<void> tokenize(std::span<const std::byte> buffer, std::uint64_t begin, std::uint64_t end,
                                    std::vector<field_token>& out, const tokenize_options& options = {});

/// Reads the one field that starts at `position` of a message ending at `end` (what
/// `tokenize` does for each field). Errors as `tokenize`'s.
[[nodiscard]] result<field_token> read_field(std::span<const std::byte> buffer, std::uint64_t position, std::uint64_t end);

/// read_field's common case, inline and without building a result, for a field whose
/// bytes from `position` on are `header`: all of them, or a part of at least
/// min(12, end - position) bytes (a window of a file read piecewise). It reads a tag of
/// one or two bytes and, for a length-delimited field, a length prefix of one or two
/// bytes. True when it read the field into `token` (exactly the token read_field gives);
/// false when the field is anything else (longer prefixes, errors, the end of the input),
/// and the caller then asks read_field, which gives the token or the error. Always
/// inlined: it is the body of the parse's loop over every field of a model, and a call
/// per field costs as much as the read.
[[nodiscard, gnu::always_inline]] inline bool read_field_fast(std::span<const std::byte> header, std::uint64_t position,
                                                              std::uint64_t end, field_token& token) noexcept {
    if (position >= end || header.empty()) return false;
    const std::uint64_t readable = header.size() < end - position ? header.size() : end - position;
    const std::byte* const bytes = header.data();  // read within `readable`, without a check per byte
    const auto byte_at = [bytes](std::uint64_t i) { return static_cast<std::uint32_t>(bytes[i]); };
    std::uint64_t at = 0;  // in header
    std::uint32_t tag = byte_at(at++);
    if (tag >= 0x80) {
        if (at == readable || byte_at(at) >= 0x80) return false;
        tag = (tag & 0x7FU) | byte_at(at++) << 7;
    }
    const auto type = static_cast<wire_type>(tag & 7U);
    if (type == wire_type::length_delimited) {  // the most common, first
        if (at == readable) return false;
        std::uint64_t length = byte_at(at++);
        if (length >= 0x80) {
            if (at == readable || byte_at(at) >= 0x80) return false;
            length = (length & 0x7FU) | static_cast<std::uint64_t>(byte_at(at++)) << 7;
        }
        if (length > end - position - at) return false;
        token.payload_length = length;
        token.value = 0;
    } else if (type == wire_type::varint) {
        const auto value = decode_varint(header.subspan(at, readable - at));
        if (!value) return false;
        token.payload_length = value->size;
        token.value = value->value;
    } else if (type == wire_type::fixed64 || type == wire_type::fixed32) {
        const std::uint64_t width = type == wire_type::fixed64 ? 8 : 4;
        if (width > end - position - at) return false;
        token.payload_length = width;
        token.value = 0;
    } else {
        return false;
    }
    if ((tag >> 3) == 0) return false;
    token.header_offset = position;
    token.payload_offset = position + at;
    token.number = tag >> 3;
    token.type = type;
    return true;
}

/// The same, for the field at `position` of a message ending at `end` in `buffer`.
[[nodiscard, gnu::always_inline]] inline bool read_field_fast_in(std::span<const std::byte> buffer, std::uint64_t position,
                                                                 std::uint64_t end, field_token& token) noexcept {
    if (position >= end || end > buffer.size()) return false;
    return read_field_fast(buffer.subspan(position, end - position), position, end, token);
}

/// The field at `position` of a message ending at `end` in `buffer`, as read_field reads
/// it, by read_field_fast_in when it can (a walk over a message's fields asks this for
/// each: read_field builds a result). False when the bytes there are no field; a caller
/// that reports why asks read_field.
[[nodiscard, gnu::always_inline]] inline bool next_field(std::span<const std::byte> buffer, std::uint64_t position,
                                                         std::uint64_t end, field_token& token) {
    if (read_field_fast_in(buffer, position, end, token)) return true;
    auto read = read_field(buffer, position, end);
    if (!read) return false;
    token = read.value();
    return true;
}

/// Counts the varints in a packed repeated field's payload; malformed if one does not end.
[[nodiscard]] result<std::uint64_t> count_packed_varints(std::span<const std::byte> payload);

}  // namespace onnxstream::proto
