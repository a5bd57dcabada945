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

/// Counts the varints in a packed repeated field's payload; malformed if one does not end.
[[nodiscard]] result<std::uint64_t> count_packed_varints(std::span<const std::byte> payload);

}  // namespace onnxstream::proto
