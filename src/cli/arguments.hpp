// Command-line parsing for onnxstream's subcommands: a small declarative table of
// options per command, `--name value`, `--name=value`, `-o value`, `--` to end options.
// Errors are usage errors (exit status 2).
#pragma once

#include <onnxstream/result.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::cli {

struct option_spec {
    std::string_view name;        // "--threshold"
    std::string_view short_name;  // "-o" or empty
    bool takes_value = false;
    bool repeatable = false;
};

/// An option without a value (`--force`).
constexpr option_spec flag_option(std::string_view name, std::string_view short_name = {}) {
    return {.name = name, .short_name = short_name};
}
/// An option with one value (`--threshold 1M`); given twice, the last one counts.
constexpr option_spec value_option(std::string_view name, std::string_view short_name = {}) {
    return {.name = name, .short_name = short_name, .takes_value = true};
}
/// An option with a value that may be given several times (`--data A --data B`).
constexpr option_spec repeated_option(std::string_view name, std::string_view short_name = {}) {
    return {.name = name, .short_name = short_name, .takes_value = true, .repeatable = true};
}

class parsed_arguments {
public:
    std::vector<std::string> positionals;

    [[nodiscard]] bool flag(std::string_view name) const { return values_.contains(std::string(name)); }
    [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
    [[nodiscard]] std::vector<std::string> values(std::string_view name) const;
    void add(std::string_view name, std::string value) { values_[std::string(name)].push_back(std::move(value)); }

private:
    std::map<std::string, std::vector<std::string>> values_;
};

/// The candidate closest to `word` when it is near enough to be a typo (a few letters
/// changed, added, dropped or swapped, or a unique prefix): what "did you mean" offers.
[[nodiscard]] std::optional<std::string_view> closest_word(std::string_view word, std::span<const std::string_view> candidates);

/// Parses `args` (the words after the command name). Errors are usage errors; an unknown
/// option names the one it is probably a typo of.
[[nodiscard]] result<parsed_arguments> parse_arguments(std::span<const std::string> args, std::span<const option_spec> options);

/// Parses a size: `4096`, `64K`, `1M`, `2G` (also `KiB`/`MB`-style suffixes; powers of 1024).
[[nodiscard]] result<std::uint64_t> parse_size(std::string_view text, std::string_view option);

/// Parses a decimal number from `least` to `most` (each numeric option has its own range:
/// --port 0-65535, --threads 1-1024). Errors are usage errors that name the option and range.
[[nodiscard]] result<std::uint64_t> parse_number(std::string_view text, std::string_view option, std::uint64_t least,
                                                 std::uint64_t most);

/// Parses a count of threads (--threads): 1 to 1024.
[[nodiscard]] result<unsigned> parse_count(std::string_view text, std::string_view option);

}  // namespace onnxstream::cli
