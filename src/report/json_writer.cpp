#include <onnxstream/report/json_writer.hpp>

#include <cmath>
#include <cstdio>

namespace onnxstream::report {

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0.
std::size_t utf8_length(std::string_view text, std::size_t i) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t minimum = 0;
    std::uint32_t code = 0;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) length = 2, minimum = 0x80, code = c & 0x1FU;
    else if ((c & 0xF0) == 0xE0) length = 3, minimum = 0x800, code = c & 0x0FU;
    else if ((c & 0xF8) == 0xF0) length = 4, minimum = 0x10000, code = c & 0x07U;
    else return 0;
    if (i + length > text.size()) return 0;
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[i + k]);
        if ((next & 0xC0) != 0x80) return 0;
        code = (code << 6) | (next & 0x3FU);
    }
    if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return length;
}

}  // namespace

std::string json_quote(std::string_view text) {
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            out += escaped;
        } else {
            const auto length = utf8_length(text, i);
            if (length == 0) {
                out += "\xEF\xBF\xBD";
                ++i;
                continue;
            }
            out.append(text.substr(i, length));
            i += length;
            continue;
        }
        ++i;
    }
    out += '"';
    return out;
}

void json_writer::separate() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back()) out_ += ',';
        first_.back() = false;
    }
}

json_writer& json_writer::begin_object() {
    separate();
    out_ += '{';
    first_.push_back(true);
    return *this;
}
json_writer& json_writer::end_object() {
    out_ += '}';
    first_.pop_back();
    return *this;
}
json_writer& json_writer::begin_array() {
    separate();
    out_ += '[';
    first_.push_back(true);
    return *this;
}
json_writer& json_writer::end_array() {
    out_ += ']';
    first_.pop_back();
    return *this;
}
json_writer& json_writer::key(std::string_view name) {
    separate();
    out_ += json_quote(name);
    out_ += ':';
    after_key_ = true;
    return *this;
}
json_writer& json_writer::value(std::string_view text) {
    separate();
    out_ += json_quote(text);
    return *this;
}
json_writer& json_writer::value(std::uint64_t number) {
    separate();
    out_ += std::to_string(number);
    return *this;
}
json_writer& json_writer::value(std::int64_t number) {
    separate();
    out_ += std::to_string(number);
    return *this;
}
json_writer& json_writer::value(double number) {
    separate();
    if (!std::isfinite(number)) {
        out_ += "null";
        return *this;
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", number);
    out_ += text;
    return *this;
}
json_writer& json_writer::value(bool flag) {
    separate();
    out_ += flag ? "true" : "false";
    return *this;
}
json_writer& json_writer::null() {
    separate();
    out_ += "null";
    return *this;
}

}  // namespace onnxstream::report
