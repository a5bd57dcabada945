// terminal_safe and the UTF-8 rules under it. The valid and invalid sequences are RFC 3629's
// (section 3: overlong forms, surrogates and code points past U+10FFFF are not UTF-8); the
// code points are those Unicode assigns (U+202E RIGHT-TO-LEFT OVERRIDE, U+1F600 ...).
#include <onnxstream/report/safe_text.hpp>

#include <doctest/doctest.h>

#include <string>

using onnxstream::report::is_unsafe_code_point;
using onnxstream::report::terminal_safe;
using onnxstream::report::utf8_sequence;

namespace {

// The sequence length utf8_sequence finds at the start of `bytes`, and its code point.
std::pair<std::size_t, char32_t> decode(std::string_view bytes) {
    char32_t code = 0;
    const auto length = utf8_sequence(bytes, 0, code);
    return {length, length == 0 ? 0 : code};
}

}  // namespace

TEST_CASE("utf8_sequence: lengths and code points of RFC 3629's well-formed sequences") {
    CHECK(decode("A") == std::pair<std::size_t, char32_t>{1, U'A'});
    CHECK(decode("\xC3\xA9") == std::pair<std::size_t, char32_t>{2, 0xE9});              // é
    CHECK(decode("\xE2\x82\xAC") == std::pair<std::size_t, char32_t>{3, 0x20AC});        // €
    CHECK(decode("\xF0\x9F\x98\x80") == std::pair<std::size_t, char32_t>{4, 0x1F600});   // 😀
    CHECK(decode("\xF4\x8F\xBF\xBF") == std::pair<std::size_t, char32_t>{4, 0x10FFFF});  // the last code point
    CHECK(decode("\xEF\xBF\xBD") == std::pair<std::size_t, char32_t>{3, 0xFFFD});
}

TEST_CASE("utf8_sequence: overlong forms, surrogates, past U+10FFFF, stray and cut sequences are refused") {
    for (const std::string_view bad : {"\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xF0\x80\x80\x80",  // overlong
                                       "\xED\xA0\x80", "\xED\xBF\xBF",                              // surrogates
                                       "\xF4\x90\x80\x80", "\xF8\x88\x80\x80\x80",                  // past U+10FFFF
                                       "\x80", "\xBF", "\xFE", "\xFF",                              // not a lead byte
                                       "\xC3", "\xE2\x82", "\xF0\x9F\x98", "\xC3\x41"}) {           // cut short
        CAPTURE(std::string(bad));
        CHECK(decode(bad).first == 0);
    }
    char32_t code = 0;
    CHECK(utf8_sequence("ab\xE2\x82\xAC", 2, code) == 3);  // at an offset, bounded by the text's end
    CHECK(code == 0x20AC);
}

TEST_CASE("unsafe code points: C0, DEL, C1, and the invisible ones that reorder or hide text") {
    for (const char32_t c : {0x00U, 0x07U, 0x1BU, 0x1FU, 0x7FU, 0x80U, 0x9BU, 0x9FU, 0x200BU, 0x200EU, 0x200FU, 0x2028U, 0x2029U,
                             0x202AU, 0x202EU, 0x2060U, 0x2066U, 0x2069U, 0xFEFFU}) {
        CAPTURE(static_cast<unsigned>(c));
        CHECK(is_unsafe_code_point(c));
    }
    for (const char32_t c :
         {0x20U, 0x41U, 0x7EU, 0xA0U, 0xE9U, 0x200AU, 0x2010U, 0x2027U, 0x202FU, 0x206AU, 0x20ACU, 0xFFFDU, 0x1F600U}) {
        CAPTURE(static_cast<unsigned>(c));
        CHECK_FALSE(is_unsafe_code_point(c));
    }
}

TEST_CASE("terminal_safe escapes what a terminal would act on and keeps readable text as it is") {
    CHECK(terminal_safe("conv1.weight") == "conv1.weight");
    CHECK(terminal_safe("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    CHECK(terminal_safe("\x1b[2J\x1b]0;t\x07") == "\\x1b[2J\\x1b]0;t\\x07");  // CSI, OSC, BEL
    CHECK(terminal_safe("a\x7f"
                        "b") == "a\\x7fb");
    CHECK(terminal_safe("\xC2\x9B"
                        "31m") == "\\u009b31m");  // C1 CSI, as UTF-8
    CHECK(terminal_safe("\x9B"
                        "31m") == "\\x9b31m");                        // the same byte, not UTF-8
    CHECK(terminal_safe("exe\xE2\x80\xAEtxt.") == "exe\\u202etxt.");  // U+202E RLO
    CHECK(terminal_safe("\xEF\xBB\xBFname") == "\\ufeffname");
    CHECK(terminal_safe("\xC0\x80") == "\\xc0\\x80");  // overlong NUL: two bytes
    CHECK(terminal_safe(std::string_view("nul\0byte", 8)) == "nul\\x00byte");
    CHECK(terminal_safe("cut \xE2\x82") == "cut \\xe2\\x82");
}

TEST_CASE("terminal_safe: newlines and tabs stay only with keep_lines; a carriage return never") {
    CHECK(terminal_safe("a\nb\tc\rd") == "a\\nb\\tc\\rd");
    CHECK(terminal_safe("a\nb\tc\rd", true) == "a\nb\tc\\rd");
}

TEST_CASE("terminal_safe_prefix: escaped first, then cut at a whole character") {
    using onnxstream::report::terminal_safe_prefix;
    CHECK(terminal_safe_prefix("conv1.weight", 40) == "conv1.weight");
    CHECK(terminal_safe_prefix("abcdef", 3) == "abc...");
    CHECK(terminal_safe_prefix("abc", 3) == "abc");
    CHECK(terminal_safe_prefix("\x1b[2Jx", 4) == "\\x1b...");            // the escape shows as 4 characters
    CHECK(terminal_safe_prefix("caf\xC3\xA9s", 4) == "caf\xC3\xA9...");  // é is one character, never split
    CHECK(terminal_safe_prefix("a\nb", 10) == "a\\nb");                  // one line
}
