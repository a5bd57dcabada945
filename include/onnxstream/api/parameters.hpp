// Each command's parameters, described once as data: name, kind, default, choices, help
// and which front ends show it. The command line's parser and --help, the page's forms,
// the C API and the Python package's keyword arguments are all made from these rows, so
// no default or choice is written twice.
//
// A parameter is named as on the command line without its dashes ("data-name"): the CLI
// takes --data-name, the page's form the field data-name, Python the keyword data_name.
#pragma once

#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::api {

enum class value_kind : std::uint8_t {
    text,    // any words
    path,    // a file or folder (the page confines it to its folder)
    model,   // an .onnx file
    size,    // bytes: 4096, 64K, 1M, 2G
    count,   // a whole number (threads)
    number,  // a positive decimal number (a tolerance)
    flag,    // on or off; given means on
    choice,  // one of `choices`
};

/// Who shows a parameter (a bit set).
enum surface : std::uint8_t {
    cli = 1,     // the command line (and its --help)
    page = 2,    // the page's forms
    python = 4,  // the C API and the Python package
    everywhere = cli | page | python,
    programs = cli | python,  // not on the page (a path the page has no field for, a test hook)
};

/// Who is asking: errors name a parameter as that front end spells it (--threshold, the
/// field 'threshold', threshold=).
enum class front_end : std::uint8_t { cli, page, python };

struct parameter {
    std::string_view name;  // "data-name"
    value_kind kind = value_kind::text;
    std::string_view default_value;             // taken when not given; "" when there is none (or the command computes it)
    std::string_view help;                      // one sentence, lower case, no final period
    std::string_view label;                     // the page's label ("Data file name")
    std::string_view placeholder;               // the CLI's word for the value ("BYTES", "FILE"); "" for flags
    std::string_view short_name;                // "-o", or empty
    std::span<const std::string_view> choices;  // for value_kind::choice
    bool repeatable = false;                    // may be given several times (--data A --data B)
    bool required = false;
    bool positional = false;  // the CLI takes it without a flag (MODEL)
    bool hidden = false;      // left out of --help (test hooks)
    std::uint8_t surfaces = everywhere;

    [[nodiscard]] bool on(surface s) const noexcept { return (surfaces & s) != 0; }
};

/// The values a front end was given, as text, by parameter name. A flag is "1" (or
/// "true", "on"; "0", "false", "off" and "" mean off); a repeatable parameter keeps every value.
class parameter_values {
public:
    void add(std::string_view name, std::string value);
    void set(std::string_view name, std::string value);
    [[nodiscard]] bool contains(std::string_view name) const { return values_.find(name) != values_.end(); }
    [[nodiscard]] std::span<const std::string> get(std::string_view name) const;
    [[nodiscard]] const std::map<std::string, std::vector<std::string>, std::less<>>& all() const noexcept { return values_; }

private:
    std::map<std::string, std::vector<std::string>, std::less<>> values_;
};

/// Turns a path value into a name to open: the page confines it beneath its folder; the
/// command line and the C API take it as it is (null).
using path_locator = std::function<result<std::filesystem::path>(std::string_view parameter, std::string_view value)>;

/// How a parameter is spelled for `who`: "--threshold", "the field 'threshold'", "threshold=".
[[nodiscard]] std::string spelled(const parameter& p, front_end who);

/// Reads one command's values through its parameter table: the default when a value is
/// not given, checked against the kind and choices, errors (invalid_argument) naming the
/// parameter as the front end spells it. Reading a name that is not in the table is a
/// programming error (it throws std::logic_error).
class parameter_reader {
public:
    parameter_reader(std::span<const parameter> table, const parameter_values& values, front_end who, path_locator locate = {});

    /// Refuses a name the table does not have (naming the closest), a parameter given
    /// twice that is not repeatable (the command line keeps the last instead), a
    /// required one missing, and a value the kind or choices refuse.
    [[nodiscard]] result<void> check() const;

    /// Whether the table has the parameter (options shared by several commands read
    /// only what a command takes).
    [[nodiscard]] bool has(std::string_view name) const noexcept { return find(name) != nullptr; }
    [[nodiscard]] bool given(std::string_view name) const;
    /// The last value given, or the default.
    [[nodiscard]] std::string_view text(std::string_view name) const;
    /// Every value given (a repeatable parameter), or the default as one value.
    [[nodiscard]] std::vector<std::string> texts(std::string_view name) const;
    [[nodiscard]] bool flag(std::string_view name) const;
    [[nodiscard]] result<std::uint64_t> size(std::string_view name) const;  // 0 when neither given nor defaulted
    [[nodiscard]] result<unsigned> count(std::string_view name) const;      // 0 when neither given nor defaulted
    [[nodiscard]] result<double> number(std::string_view name) const;
    /// One of the parameter's choices ("" when neither given nor defaulted).
    [[nodiscard]] result<std::string_view> choice(std::string_view name) const;
    /// A path, located (empty when neither given nor defaulted).
    [[nodiscard]] result<std::filesystem::path> path(std::string_view name) const;
    [[nodiscard]] result<std::vector<std::filesystem::path>> paths(std::string_view name) const;
    /// A comma-separated list ("" gives none).
    [[nodiscard]] std::vector<std::string> list(std::string_view name) const;

    [[nodiscard]] const parameter& row(std::string_view name) const;
    [[nodiscard]] std::string spelled(std::string_view name) const;
    [[nodiscard]] front_end who() const noexcept { return who_; }

private:
    [[nodiscard]] const parameter* find(std::string_view name) const noexcept;
    [[nodiscard]] result<void> check_value(const parameter& p, std::string_view value) const;

    std::span<const parameter> table_;
    const parameter_values& values_;
    front_end who_;
    path_locator locate_;
};

}  // namespace onnxstream::api
