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
// One wchar_t per call, as libstdc++'s codecvt expects: characters beyond the Basic
// Multilingual Plane (they would need a surrogate pair) are refused as EILSEQ, so such a
// name fails with a conversion error rather than naming another file.
#include <cerrno>
#include <cstddef>
#include <cwchar>

extern "C" {

std::size_t mbrtowc(wchar_t* out, const char* in, std::size_t length, std::mbstate_t* state) {
    (void)state;  // every call converts whole characters: no state is carried
    if (in == nullptr) return 0;
    if (length == 0) return static_cast<std::size_t>(-2);
    const auto* bytes = reinterpret_cast<const unsigned char*>(in);
    const unsigned char lead = bytes[0];
    std::size_t size = 0;
    char32_t code = 0;
    if (lead < 0x80) size = 1, code = lead;
    else if (lead >= 0xC2 && lead <= 0xDF) size = 2, code = lead & 0x1F;
    else if (lead >= 0xE0 && lead <= 0xEF) size = 3, code = lead & 0x0F;
    else {
        errno = EILSEQ;  // a stray continuation byte, an overlong lead, or beyond the BMP
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
    if ((size == 3 && code < 0x800) || (code >= 0xD800 && code <= 0xDFFF)) {
        errno = EILSEQ;  // overlong, or a surrogate encoded on its own
        return static_cast<std::size_t>(-1);
    }
    if (out != nullptr) *out = static_cast<wchar_t>(code);
    return code == 0 ? 0 : size;
}

std::size_t wcrtomb(char* out, wchar_t wide, std::mbstate_t* state) {
    (void)state;
    char scratch[4];
    if (out == nullptr) out = scratch, wide = L'\0';
    const auto code = static_cast<char32_t>(wide);
    if (code >= 0xD800 && code <= 0xDFFF) {
        errno = EILSEQ;  // half of a surrogate pair: not a character on its own
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
