#include "terminal_text.hpp"

#include <cstdarg>
#include <vector>

namespace onnxstream::cli {

void print_text(std::FILE* out, const char* format, ...) {
    std::va_list args;
    va_start(args, format);
    std::va_list again;
    va_copy(again, args);
    const int needed = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    if (needed > 0) {
        std::vector<char> buffer(static_cast<std::size_t>(needed) + 1);
        std::vsnprintf(buffer.data(), buffer.size(), format, again);
        const auto safe = terminal_safe(std::string_view(buffer.data(), static_cast<std::size_t>(needed)), true);
        std::fwrite(safe.data(), 1, safe.size(), out);
    }
    va_end(again);
}

}  // namespace onnxstream::cli
