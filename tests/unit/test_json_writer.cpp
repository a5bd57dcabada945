// json_writer and json_quote against RFC 8259: the escapes it requires (quote, backslash,
// U+0000-U+001F), commas between members and elements. Expected strings were checked with
// Python's json.loads, which reads each back to the original text; invalid UTF-8 becomes
// U+FFFD so the document stays valid.
#include <onnxstream/report/json_writer.hpp>
#include <onnxstream/report/safe_text.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using onnxstream::report::json_quote;
using onnxstream::report::json_writer;
namespace report = onnxstream::report;

TEST_CASE("json_quote: the escapes RFC 8259 requires, short forms where JSON has them") {
    CHECK(json_quote("") == R"("")");
    CHECK(json_quote(R"(a"b\c)") == R"("a\"b\\c")");
    CHECK(json_quote("\n\r\t") == R"("\n\r\t")");
    CHECK(json_quote(std::string_view("\0\x01\x1b\x1f", 4)) == R"("\u0000\u0001\u001b\u001f")");
    CHECK(json_quote("/ stays") == R"("/ stays")");
}

TEST_CASE("json_quote: UTF-8 passes through, unsafe code points are escaped, invalid bytes become U+FFFD") {
    CHECK(json_quote("caf\xC3\xA9 \xF0\x9F\x98\x80") == "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"");
    // Valid JSON raw, but shown by a terminal when the document is printed: escaped.
    CHECK(json_quote("\x7f\xC2\x9B\xE2\x80\xAE\xE2\x81\xA6\xEF\xBB\xBF") == R"("\u007f\u009b\u202e\u2066\ufeff")");
    CHECK(json_quote("a\xFF"
                     "b") ==
          "\"a\xEF\xBF\xBD"
          "b\"");
    CHECK(json_quote("\xC0\x80") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");                  // each byte of an overlong form
    CHECK(json_quote("\xED\xA0\x80") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // a surrogate
}

TEST_CASE("exact_json_quote: the same literal for UTF-8, nothing for bytes no JSON string holds") {
    // For documents that name files and tensors (safetensors headers, index.json): a U+FFFD
    // there would name something else, so the caller refuses the name instead.
    CHECK(report::exact_json_quote("caf\xC3\xA9 \xE2\x80\xAE\"") == json_quote("caf\xC3\xA9 \xE2\x80\xAE\""));
    CHECK(report::exact_json_quote("") == std::optional<std::string>(R"("")"));
    CHECK_FALSE(report::exact_json_quote("caf\xE9.onnx"));
    CHECK_FALSE(report::exact_json_quote("\xC0\x80"));      // an overlong form
    CHECK_FALSE(report::exact_json_quote("\xED\xA0\x80"));  // a surrogate
    CHECK_FALSE(report::exact_json_quote("ok\xF0\x9F"));    // cut short
    CHECK(report::valid_utf8("\xF0\x9F\x98\x80"));
    CHECK_FALSE(report::valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
}

TEST_CASE("json_writer: commas between members and elements, nested containers, scalars") {
    json_writer w;
    w.begin_object();
    w.key("a").begin_array().value(1).value(-2).value(true).null().value("x").end_array();
    w.key("b").begin_object().end_object();
    w.field("c", std::uint64_t{18446744073709551615ULL});
    w.field("d", std::int64_t{-9223372036854775807LL - 1});
    w.field("e", std::optional<int>{});
    w.field("f", std::optional<int>{7});
    w.key("g").begin_array().begin_array().end_array().begin_object().end_object().end_array();
    w.end_object();
    CHECK(w.text() == R"({"a":[1,-2,true,null,"x"],"b":{},"c":18446744073709551615,)"
                      R"("d":-9223372036854775808,"e":null,"f":7,"g":[[],{}]})");
}

TEST_CASE("json_writer: doubles in %.6g, and null for what JSON cannot hold (NaN, infinities)") {
    json_writer w;
    w.begin_array().value(0.1).value(1e-7).value(123456789.0).value(-0.5);
    w.value(std::nan("")).value(std::numeric_limits<double>::infinity()).value(-std::numeric_limits<double>::infinity());
    w.end_array();
    CHECK(w.text() == "[0.1,1e-07,1.23457e+08,-0.5,null,null,null]");
}

TEST_CASE("json_writer: keys are quoted like values") {
    json_writer w;
    w.begin_object().field("k\"\x1b", "v").end_object();
    CHECK(w.text() == R"({"k\"\u001b":"v"})");
}

TEST_CASE("json_writer: object() writes its key, value pairs as one object, commas and all") {
    json_writer w;
    w.begin_array().object("name", "a", "size", std::uint64_t{3}, "outside", false).object().end_array();
    CHECK(w.text() == R"([{"name":"a","size":3,"outside":false},{}])");
}

TEST_CASE("json_writer with a sink: the same document, in pieces of about the size asked, in order") {
    const auto write = [](json_writer& json) {
        json.begin_object().key("names").begin_array();
        for (int i = 0; i < 1000; ++i) json.value("name " + std::to_string(i) + " \x1b[2J\xe2\x80\xae");
        json.end_array().field("n", 1000).end_object();
    };
    json_writer whole;
    write(whole);
    std::vector<std::string> pieces;
    json_writer streamed([&pieces](std::string_view piece) { pieces.emplace_back(piece); }, 256);
    write(streamed);
    CHECK(pieces.size() > 10);
    streamed.flush();
    std::string joined;
    for (const auto& p : pieces) {
        CHECK(p.size() < 256 + 64);
        joined += p;
    }
    CHECK(joined == whole.text());
    CHECK(streamed.text().empty());
    // What the CLI prints as it is: a document is already terminal-safe.
    CHECK(report::terminal_safe(joined, true) == joined);
}
