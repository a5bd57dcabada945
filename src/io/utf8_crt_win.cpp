// Windows: narrow strings are UTF-8 in this program, in both directions.
//
// std::filesystem::path (libstdc++) turns a path into a narrow string as UTF-8, but turns
// a narrow string into a path through the C runtime's mbrtowc, which follows msvcrt's
// locale: the ANSI code page, which msvcrt cannot set to UTF-8. "é" typed on the command
// line, in a model's `location` or in a name made from another path would then name the
// wrong file. These two definitions replace mingw-w64's mbrtowc and wcrtomb (the only
// multibyte calls libstdc++'s codecvt<wchar_t, char> makes) with UTF-8 ones, so every
// string-to-path conversion of the program reads UTF-8, and paths reach the wide
// (UTF-16) APIs intact. Compiled into each executable that links the library (an
// INTERFACE source), since an archive member defining them would not be pulled in.
//
// One wchar_t per call, as libstdc++'s codecvt expects. A character beyond the Basic
// Multilingual Plane (an emoji) is two wchar_t, a surrogate pair: mbrtowc gives the high
// half for its first three bytes and keeps the low half in the conversion state, which
// libstdc++ carries to the next call, where the fourth byte gives it; wcrtomb keeps a high
// half in the state and writes the four bytes with the low one.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cwchar>

namespace {

// What a conversion state carries between calls: a surrogate half and a mark that it is there.
constexpr std::uint32_t pending_mark = 0x10000;

std::uint32_t pending(const std::mbstate_t* state) {
    std::uint32_t value = 0;
    if (state != nullptr) std::memcpy(&value, state, sizeof value < sizeof *state ? sizeof value : sizeof *state);
    return (value & pending_mark) != 0 ? value & 0xFFFF : 0;
}

void set_pending(std::mbstate_t* state, std::uint32_t half) {
    if (state == nullptr) return;
    const std::uint32_t value = half == 0 ? 0 : (half | pending_mark);
    std::memset(state, 0, sizeof *state);
    std::memcpy(state, &value, sizeof value < sizeof *state ? sizeof value : sizeof *state);
}

}  // namespace

static_assert(sizeof(std::mbstate_t) >= sizeof(std::uint32_t), "the state must hold a surrogate half");

extern "C" {

std::size_t mbrtowc(wchar_t* out, const char* in, std::size_t length, std::mbstate_t* state) {
    if (in == nullptr) {
        set_pending(state, 0);
        return 0;
    }
    if (length == 0) return static_cast<std::size_t>(-2);
    if (const auto low = pending(state); low != 0) {  // the last byte of a four-byte character
        set_pending(state, 0);
        if (out != nullptr) *out = static_cast<wchar_t>(low);
        return 1;
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(in);
    const unsigned char lead = bytes[0];
    std::size_t size = 0;
    char32_t code = 0;
    if (lead < 0x80) size = 1, code = lead;
    else if (lead >= 0xC2 && lead <= 0xDF) size = 2, code = lead & 0x1F;
    else if (lead >= 0xE0 && lead <= 0xEF) size = 3, code = lead & 0x0F;
    else if (lead >= 0xF0 && lead <= 0xF4) size = 4, code = lead & 0x07;
    else {
        errno = EILSEQ;  // a stray continuation byte or an overlong or out-of-range lead
        return static_cast<std::size_t>(-1);
    }
    for (std::size_t i = 1; i < size; ++i) {
        if (i >= length) return static_cast<std::size_t>(-2);
        if ((bytes[i] & 0xC0) != 0x80) {
            errno = EILSEQ;
            return static_cast<std::size_t>(-1);
        }
        code = (code << 6) | (bytes[i] & 0x3F);
    }
    if ((size == 3 && code < 0x800) || (size == 4 && (code < 0x10000 || code > 0x10FFFF)) || (code >= 0xD800 && code <= 0xDFFF)) {
        errno = EILSEQ;  // overlong, past U+10FFFF, or a surrogate encoded on its own
        return static_cast<std::size_t>(-1);
    }
    if (size == 4) {  // the high half now, the low half with the fourth byte
        const auto offset = code - 0x10000;
        set_pending(state, 0xDC00 | (offset & 0x3FF));
        if (out != nullptr) *out = static_cast<wchar_t>(0xD800 | (offset >> 10));
        return 3;
    }
    if (out != nullptr) *out = static_cast<wchar_t>(code);
    return code == 0 ? 0 : size;
}

std::size_t wcrtomb(char* out, wchar_t wide, std::mbstate_t* state) {
    char scratch[4];
    if (out == nullptr) out = scratch, wide = L'\0';
    auto code = static_cast<char32_t>(wide);
    const auto high = pending(state);
    if (high != 0) {  // the low half must follow a high half
        set_pending(state, 0);
        if (code < 0xDC00 || code > 0xDFFF) {
            errno = EILSEQ;
            return static_cast<std::size_t>(-1);
        }
        code = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
        out[0] = static_cast<char>(0xF0 | (code >> 18));
        out[1] = static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out[2] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out[3] = static_cast<char>(0x80 | (code & 0x3F));
        return 4;
    }
    if (code >= 0xD800 && code <= 0xDBFF) {  // a high half: written with the low one
        set_pending(state, code);
        return 0;
    }
    if (code >= 0xDC00 && code <= 0xDFFF) {
        errno = EILSEQ;  // a low half on its own: not a character
        return static_cast<std::size_t>(-1);
    }
    if (code < 0x80) {
        out[0] = static_cast<char>(code);
        return 1;
    }
    if (code < 0x800) {
        out[0] = static_cast<char>(0xC0 | (code >> 6));
        out[1] = static_cast<char>(0x80 | (code & 0x3F));
        return 2;
    }
    out[0] = static_cast<char>(0xE0 | (code >> 12));
    out[1] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (code & 0x3F));
    return 3;
}

}  // extern "C"
