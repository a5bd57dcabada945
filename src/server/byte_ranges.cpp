#include "byte_ranges.hpp"

#include <optional>

namespace onnxstream::server {

namespace {

// A decimal number of at most 19 digits (below 2^63: no overflow), or nothing.
std::optional<std::uint64_t> decimal(std::string_view text) {
    if (text.empty() || text.size() > 19) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

}  // namespace

byte_range resolve_byte_range(std::string_view header, std::uint64_t size) {
    const byte_range whole{range_answer::whole, 0, size};
    header = trimmed(header);
    constexpr std::string_view unit = "bytes=";
    if (header.size() <= unit.size() || header.substr(0, unit.size()) != unit) return whole;
    const auto spec = trimmed(header.substr(unit.size()));
    if (spec.find(',') != std::string_view::npos) return whole;
    const auto dash = spec.find('-');
    if (dash == std::string_view::npos) return whole;
    const auto first_text = trimmed(spec.substr(0, dash));
    const auto last_text = trimmed(spec.substr(dash + 1));
    if (first_text.empty()) {
        // "-N": the last N bytes.
        const auto suffix = decimal(last_text);
        if (!suffix) return whole;
        if (*suffix == 0 || size == 0) return {range_answer::unsatisfiable, 0, 0};
        if (*suffix >= size) return whole;
        return {range_answer::slice, size - *suffix, *suffix};
    }
    const auto first = decimal(first_text);
    if (!first) return whole;
    std::uint64_t last = size == 0 ? 0 : size - 1;
    if (!last_text.empty()) {
        const auto given = decimal(last_text);
        if (!given || *given < *first) return whole;  // invalid: ignored, as the RFC allows
        last = *given < last ? *given : last;
    }
    if (*first >= size) return {range_answer::unsatisfiable, 0, 0};
    return {range_answer::slice, *first, last - *first + 1};
}

}  // namespace onnxstream::server
