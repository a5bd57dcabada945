#include <onnxstream/report/json_writer.hpp>

#include <onnxstream/report/safe_text.hpp>

#include <cmath>
#include <cstdio>
#include <utility>

namespace onnxstream::report {

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
            char32_t code = 0;
            const auto length = utf8_sequence(text, i, code);
            if (length == 0) {
                out += "\xEF\xBF\xBD";
                ++i;
                continue;
            }
            if (is_unsafe_code_point(code)) {  // DEL, C1, bidi overrides: valid JSON raw, not on a terminal
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(code));
                out += escaped;
            } else {
                out.append(text.substr(i, length));
            }
            i += length;
            continue;
        }
        ++i;
    }
    out += '"';
    return out;
}

std::optional<std::string> exact_json_quote(std::string_view text) {
    if (!valid_utf8(text)) return std::nullopt;
    return json_quote(text);  // valid UTF-8: every code point is kept, some as \u escapes
}

json_writer::json_writer(std::function<void(std::string_view)> sink, std::size_t piece) : sink_(std::move(sink)), piece_(piece) {
    out_.reserve(piece_ + 256);
}

void json_writer::flush() {
    if (!sink_ || out_.empty()) return;
    sink_(out_);
    out_.clear();
}

// Every write starts here: the place to hand a full piece on.
void json_writer::separate() {
    if (sink_ && out_.size() >= piece_) flush();
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
