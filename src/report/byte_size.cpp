#include <onnxstream/report/byte_size.hpp>

#include <cstdio>
#include <limits>

namespace onnxstream::report {

std::string human_bytes(std::uint64_t bytes) {
    char text[32];
    const auto value = static_cast<double>(bytes);
    if (bytes < 1024) std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
    else if (bytes < (1ULL << 20)) std::snprintf(text, sizeof text, "%.1f KiB", value / 1024.0);
    else if (bytes < (1ULL << 30)) std::snprintf(text, sizeof text, "%.1f MiB", value / 1048576.0);
    else std::snprintf(text, sizeof text, "%.2f GiB", value / 1073741824.0);
    return text;
}

std::optional<std::uint64_t> parse_size(std::string_view text) noexcept {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    // 19 digits always fit in 64 bits; more never are a size anyone means.
    if (digits == 0 || digits > 19) return std::nullopt;
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < digits; ++i) value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
    std::string suffix(text.substr(digits));
    for (auto& c : suffix)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    std::uint64_t scale = 1;
    if (suffix.empty() || suffix == "B") scale = 1;
    else if (suffix == "K" || suffix == "KB" || suffix == "KIB") scale = 1ULL << 10;
    else if (suffix == "M" || suffix == "MB" || suffix == "MIB") scale = 1ULL << 20;
    else if (suffix == "G" || suffix == "GB" || suffix == "GIB") scale = 1ULL << 30;
    else if (suffix == "T" || suffix == "TB" || suffix == "TIB") scale = 1ULL << 40;
    else return std::nullopt;
    if (value > std::numeric_limits<std::uint64_t>::max() / scale) return std::nullopt;
    return value * scale;
}

}  // namespace onnxstream::report
