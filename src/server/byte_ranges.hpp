// What to send for a download's Range header (RFC 9110 section 14): the whole file, one
// slice of it, or "416 Range Not Satisfiable". cpp-httplib applies a Range itself without
// bounding it by the size (a range past the end became a 206 with a Content-Length near
// 2^64) and answers every range of a list (200 overlapping ranges sent the file 200
// times), so the page server decides here and serves the slice itself.
#pragma once

#include <cstdint>
#include <string_view>

namespace onnxstream::server {

enum class range_answer {
    whole,          // 200: no Range, one the server may ignore (malformed, several ranges), or one covering it all
    slice,          // 206: bytes [first, first + length) of the file
    unsatisfiable,  // 416: no range starts inside the file
};

struct byte_range {
    range_answer answer = range_answer::whole;
    std::uint64_t first = 0;
    std::uint64_t length = 0;  // for `whole`: the file's size
};

/// The answer to `header` (the Range header's value, empty when none) for a file of `size`
/// bytes. Several ranges are answered with the whole file (a server may ignore a Range,
/// and no browser asks for several); a malformed header is ignored the same way.
[[nodiscard]] byte_range resolve_byte_range(std::string_view header, std::uint64_t size);

}  // namespace onnxstream::server
