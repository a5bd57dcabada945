#include <onnxstream/report/safe_text.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace onnxstream::report {

std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t& code) noexcept {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    char32_t minimum = 0;
    if (c < 0x80) return code = c, 1;
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

bool valid_utf8(std::string_view text) noexcept {
    char32_t code = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto length = utf8_sequence(text, i, code);
        if (length == 0) return false;
        i += length;
    }
    return true;
}

bool is_unsafe_code_point(char32_t code) noexcept {
    if (code < 0x20 || (code >= 0x7F && code <= 0x9F)) return true;
    if (code >= 0x200B && code <= 0x200F) return true;  // zero-width space/joiners, LRM, RLM
    if (code >= 0x2028 && code <= 0x202E) return true;  // line/paragraph separators, embeddings, overrides
    if (code >= 0x2060 && code <= 0x2069) return true;  // word joiner, invisible operators, isolates
    return code == 0xFEFF;                              // zero-width no-break space
}

std::string terminal_safe(std::string_view text, bool keep_lines) {
    std::string out;
    out.reserve(text.size());
    char escaped[16];
    for (std::size_t i = 0; i < text.size();) {
        char32_t code = 0;
        const auto length = utf8_sequence(text, i, code);
        if (length == 0) {
            std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(text[i]));
            out += escaped;
            ++i;
            continue;
        }
        if (keep_lines && (code == '\n' || code == '\t')) out += static_cast<char>(code);
        else if (code == '\n') out += "\\n";
        else if (code == '\t') out += "\\t";
        else if (code == '\r') out += "\\r";
        else if (is_unsafe_code_point(code)) {
            if (code < 0x80) std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(code));
            else std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(code));
            out += escaped;
        } else {
            out.append(text.substr(i, length));
        }
        i += length;
    }
    return out;
}

std::string terminal_safe_prefix(std::string_view text, std::size_t max_characters) {
    auto safe = terminal_safe(text);
    std::size_t characters = 0;
    for (std::size_t i = 0; i < safe.size(); ++characters) {
        if (characters == max_characters) {
            safe.resize(i);
            return safe + "...";
        }
        char32_t code = 0;
        i += std::max<std::size_t>(utf8_sequence(safe, i, code), 1);  // terminal_safe leaves only valid UTF-8
    }
    return safe;
}

std::string safe_vformat(const char* format, std::va_list args) {
    std::va_list again;
    va_copy(again, args);
    const int needed = std::vsnprintf(nullptr, 0, format, args);
    std::string text;
    if (needed > 0) {
        std::vector<char> buffer(static_cast<std::size_t>(needed) + 1);
        std::vsnprintf(buffer.data(), buffer.size(), format, again);
        text = terminal_safe(std::string_view(buffer.data(), static_cast<std::size_t>(needed)), true);
    }
    va_end(again);
    return text;
}

}  // namespace onnxstream::report
