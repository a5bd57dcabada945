#include "arguments.hpp"

#include <onnxstream/report/byte_size.hpp>

#include <algorithm>

namespace onnxstream::cli {

std::optional<std::string> parsed_arguments::value(std::string_view name) const {
    const auto it = values_.find(std::string(name));
    if (it == values_.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> parsed_arguments::values(std::string_view name) const {
    const auto it = values_.find(std::string(name));
    return it == values_.end() ? std::vector<std::string>{} : it->second;
}

namespace {

failure usage(std::string message) { return failure(error_code::invalid_argument, std::move(message)); }

// Optimal string alignment distance: edits of one letter, and two letters swapped.
std::size_t typo_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string_view> closest_word(std::string_view word, std::span<const std::string_view> candidates) {
    if (word.size() > 64) return std::nullopt;  // no typo of a name we know is that long
    std::optional<std::string_view> best;
    std::size_t best_distance = 0;
    std::size_t prefixed = 0;
    std::string_view prefix_of;
    for (const auto candidate : candidates) {
        if (candidate.empty()) continue;
        if (word.size() >= 3 && candidate.starts_with(word)) {
            ++prefixed;
            prefix_of = candidate;
        }
        const auto distance = typo_distance(word, candidate);
        if (!best || distance < best_distance) {
            best = candidate;
            best_distance = distance;
        }
    }
    if (prefixed == 1) return prefix_of;
    // A third of the word may be wrong, at least one letter and at most three.
    const auto allowed = std::clamp<std::size_t>(word.size() / 3, 1, 3);
    if (best && best_distance <= allowed) return best;
    return std::nullopt;
}

result<parsed_arguments> parse_arguments(std::span<const std::string> args, std::span<const option_spec> options) {
    parsed_arguments parsed;
    bool options_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& word = args[i];
        if (options_done || word.size() < 2 || word[0] != '-') {
            parsed.positionals.push_back(word);
            continue;
        }
        if (word == "--") {
            options_done = true;
            continue;
        }
        std::string name = word;
        std::optional<std::string> inline_value;
        if (const auto equals = word.find('='); word.starts_with("--") && equals != std::string::npos) {
            name = word.substr(0, equals);
            inline_value = word.substr(equals + 1);
        }
        const auto spec = std::find_if(options.begin(), options.end(), [&](const option_spec& o) {
            return o.name == name || (!o.short_name.empty() && o.short_name == name);
        });
        if (spec == options.end()) {
            std::vector<std::string_view> known;
            for (const auto& o : options) known.push_back(o.name);
            const auto near = closest_word(name, known);
            return usage("unknown option '" + name + "'" + (near ? "; did you mean " + std::string(*near) + "?" : ""));
        }
        const std::string canonical(spec->name);
        if (!spec->repeatable && parsed.flag(canonical)) return usage("option " + canonical + " is given twice");
        if (!spec->takes_value) {
            if (inline_value) return usage("option " + canonical + " takes no value");
            parsed.add(canonical, "");
            continue;
        }
        if (!inline_value && i + 1 >= args.size()) return usage("option " + canonical + " needs a value");
        std::string value = inline_value ? *inline_value : args[++i];
        // An empty value (`-o ''`) would silently mean the default: no option takes one.
        if (value.empty()) return usage("option " + canonical + " needs a value, not an empty one");
        parsed.add(canonical, std::move(value));
    }
    return parsed;
}

result<std::uint64_t> parse_size(std::string_view text, std::string_view option) {
    if (const auto size = report::parse_size(text)) return *size;
    return usage("invalid size '" + std::string(text) + "' for " + std::string(option) +
                 " (use a number of bytes, optionally with K, M or G: 4096, 64K, 1M, 2G)");
}

result<std::uint64_t> parse_number(std::string_view text, std::string_view option, std::uint64_t least, std::uint64_t most) {
    const auto invalid = [&] { return usage("invalid number '" + std::string(text) + "' for " + std::string(option)); };
    // 19 digits stay below 2^63: the value cannot overflow before it is compared.
    if (text.empty() || text.size() > 19) return invalid();
    std::uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return invalid();
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (value < least) return usage(std::string(option) + " must be at least " + std::to_string(least));
    if (value > most) return usage(std::string(option) + " must be at most " + std::to_string(most));
    return value;
}

result<unsigned> parse_count(std::string_view text, std::string_view option) {
    // More threads than this only exhaust the process's limits (io_uring then cancels).
    constexpr unsigned most = 1024;
    ONNXSTREAM_ASSIGN(const auto value, parse_number(text, option, 1, most));
    return static_cast<unsigned>(value);
}

}  // namespace onnxstream::cli
