#include "terminal_text.hpp"

#include <cstdarg>

namespace onnxstream::cli {

void print_text(std::FILE* out, const char* format, ...) {
    std::va_list args;
    va_start(args, format);
    const auto safe = report::safe_vformat(format, args);
    va_end(args);
    std::fwrite(safe.data(), 1, safe.size(), out);
}

}  // namespace onnxstream::cli
