// Untrusted text made safe to show. Strings from a model (names, producer, doc strings,
// locations) are untrusted bytes: printed raw, ESC and OSC sequences could clear the
// screen, set the window title or hide text, and U+202E could reverse what a line seems to
// say. `terminal_safe` shows such bytes as escapes instead: `\x1b`, `\x9b` for a byte that
// is not UTF-8, `\u202e`. The JSON writer escapes with the same rule
// (`is_unsafe_code_point`), so every front end shows the same text.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <string>
#include <string_view>

namespace onnxstream::report {

/// The length of the valid UTF-8 sequence at text[i] (storing its code point), or 0.
[[nodiscard]] std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t& code) noexcept;
/// Whether all of `text` is valid UTF-8 (what utf8_sequence takes, from start to end).
[[nodiscard]] bool valid_utf8(std::string_view text) noexcept;

/// Control characters (C0, DEL, C1) and the invisible ones that reorder or hide text
/// (bidirectional overrides and isolates, zero-width marks, line/paragraph separators).
[[nodiscard]] bool is_unsafe_code_point(char32_t code) noexcept;

/// `text` with every unsafe code point and invalid UTF-8 byte escaped. With `keep_lines`,
/// newlines and tabs stay (for whole messages); without, they are escaped too (one value).
[[nodiscard]] std::string terminal_safe(std::string_view text, bool keep_lines = false);

/// terminal_safe(text) on one line, cut to its first `max_characters` characters (code
/// points, escapes counted as they show) with "..." at the end when it was longer: a name
/// in a line of fixed width, such as a progress bar's.
[[nodiscard]] std::string terminal_safe_prefix(std::string_view text, std::size_t max_characters);

/// vprintf into a string, the result passed through terminal_safe(..., keep_lines = true):
/// how every text for people is made, a piece at a time.
[[nodiscard]] std::string safe_vformat(const char* format, std::va_list args) __attribute__((format(printf, 1, 0)));

}  // namespace onnxstream::report
