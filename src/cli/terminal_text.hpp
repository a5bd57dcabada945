// Text for a terminal: every text the CLI prints goes through `print_text` (or
// `terminal_safe` for one value), so that model strings never reach the terminal raw
// (the rule is the library's: onnxstream/report/safe_text.hpp).
#pragma once

#include <onnxstream/report/safe_text.hpp>

#include <cstdio>

namespace onnxstream::cli {

using report::is_unsafe_code_point;
using report::terminal_safe;
using report::utf8_sequence;

/// printf to `out`, the formatted text passed through terminal_safe(..., keep_lines = true).
#if defined(__MINGW32__)  // mingw's `printf` archetype is msvcrt's, which has no %zu
void print_text(std::FILE* out, const char* format, ...) __attribute__((format(gnu_printf, 2, 3)));
#else
void print_text(std::FILE* out, const char* format, ...) __attribute__((format(printf, 2, 3)));
#endif

}  // namespace onnxstream::cli
