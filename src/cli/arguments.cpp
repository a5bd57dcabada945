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

}  // namespace

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
        if (spec == options.end()) return usage("unknown option '" + name + "'");
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
