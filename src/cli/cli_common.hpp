// Helpers every subcommand shares: printing errors, warnings and reports (the library
// renders them: report/text.hpp, report/json.hpp), the flags the CLI words remedies as,
// common options, and turning a parse into arguments or an exit status.
#pragma once

#include "arguments.hpp"
#include "commands.hpp"
#include "progress.hpp"
#include "terminal_text.hpp"

#include <onnxstream/api/commands.hpp>
#include <onnxstream/error.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/text.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace onnxstream::cli {

using report::human_bytes;
using report::json_writer;
using report::plural;

/// Remedies worded as this command line's flags and commands ("--force", "'onnxstream repack'"),
/// and how a data file was found as the flag that found it ("--data-dir DIR").
[[nodiscard]] const report::hint_wording& flag_wording() noexcept;

/// `text` as one word of a command line the user may copy: as it is when it holds only
/// characters no shell treats specially, else quoted (POSIX: '...'; Windows: "...").
[[nodiscard]] std::string shell_word(std::string_view text);

void print_error(const error& e);
void print_warning(const error& e);
void print_warnings(std::span<const error> warnings);
/// Text the library rendered, on stdout as it is (it is already terminal-safe).
void print_out(std::string_view text);
/// A JSON document on stdout, with its newline.
void print_json(const std::string& document);
/// The same for a document `write` writes, handed to stdout piece by piece as it grows
/// (a large report is never held whole).
void print_json(const std::function<void(json_writer&)>& write);
/// The exit status for an error: 2 for usage errors, 130 when interrupted, else 1.
[[nodiscard]] int exit_for(const error& e);
/// Prints an error (and, with --json, an error document on stdout) and returns its status.
[[nodiscard]] int fail(const error& e, bool json);
/// Prints a usage error pointing at the command's --help and returns 2.
[[nodiscard]] int usage_error(std::string_view command, const std::string& message);

inline constexpr option_spec opt_help = flag_option("--help", "-h");
inline constexpr option_spec opt_quiet = flag_option("--quiet", "-q");
inline constexpr option_spec opt_json = flag_option("--json");
// export's --to, which picks the command of the table the words after it go to.
inline constexpr option_spec opt_to = value_option("--to");

struct common_flags {
    bool quiet = false;
    bool json = false;
};

/// `chosen`, or for `automatic` the writer ONNXSTREAM_WRITER names (only `portable` counts):
/// the library reads no environment, so the command line reads it for the test suites.
[[nodiscard]] io::writer_backend writer_from_environment(io::writer_backend chosen);

struct prepared {
    std::optional<parsed_arguments> args;  // empty: return `status`
    int status = exit_ok;
    common_flags flags;
};

/// Parses the arguments and handles --help; without args, the caller returns `status`.
[[nodiscard]] prepared prepare(std::string_view name, std::string_view help, std::span<const std::string> argv,
                               std::span<const option_spec> options);

/// A command of the library's table (api/commands.hpp) on the command line: its options
/// and --help are made from the table's parameters.
struct table_command {
    const api::command_spec& spec;
    std::string_view words;     // as typed: "split", "export" (its --to picks the spec)
    std::string_view usage;     // after "onnxstream WORDS ": "MODEL [options]"
    std::string_view epilog{};  // what only the command line says (exit statuses)
};

/// `api::find_command(name)`, which the table must have.
[[nodiscard]] const api::command_spec& table_spec(std::string_view name);

/// The --help text of a table command.
[[nodiscard]] std::string help_text(const table_command& command);

/// A table command's arguments: parsed, --help handled, the values by parameter (the
/// positionals in the table's order). Without `values`, the caller returns `status`.
struct prepared_values {
    std::optional<api::parameter_values> values;
    int status = exit_ok;
    common_flags flags;
    const api::command_spec* spec = nullptr;

    /// The values read through the command's table, errors worded as flags.
    [[nodiscard]] api::parameter_reader reader() const {
        return api::parameter_reader(spec->parameters, *values, api::front_end::cli);
    }
};
/// `extra` options the command line alone takes (export's --to).
[[nodiscard]] prepared_values prepare(const table_command& command, std::span<const std::string> argv,
                                      std::span<const option_spec> extra = {});

/// A usage error for an invalid_argument error (a value the table refuses), else the
/// error as it is (a path that cannot be located).
[[nodiscard]] int option_error(std::string_view command, const error& e, bool json);

/// A table command's arguments read into its operation's options.
template <class Options>
struct started {
    prepared_values p;
    std::optional<Options> options;  // empty: return `status`
    int status = exit_ok;
    std::string model;  // the MODEL argument

    [[nodiscard]] const common_flags& flags() const noexcept { return p.flags; }
};

/// prepare(), then `read` (api::X_options_from) over the values; the writer the
/// environment picks for the test suites (writer_from_environment).
template <class Read>
auto start(const table_command& command, std::span<const std::string> argv, Read&& read,
           std::span<const option_spec> extra = {}) {
    using options_type = std::remove_cvref_t<decltype(*read(std::declval<const api::parameter_reader&>()))>;
    started<options_type> s{prepare(command, argv, extra), std::nullopt, exit_ok, {}};
    if (!s.p.values) {
        s.status = s.p.status;
        return s;
    }
    const auto in = s.p.reader();
    auto options = read(in);
    if (!options) {
        s.status = option_error(command.words, options.error(), s.p.flags.json);
        return s;
    }
    if constexpr (requires { options->backend; }) options->backend = writer_from_environment(options->backend);
    s.options = std::move(*options);
    s.model = std::string(in.text("model"));
    return s;
}

/// Runs `run()` with `options` cancelled by the context and reporting to a progress bar on
/// stderr (none with --quiet or --json); the bar is gone when it returns.
template <class Options, class Run>
auto run_with_progress(Options& options, const command_context& context, const common_flags& flags, Run&& run) {
    options.cancel = context.cancel;
    progress_bar bar(!flags.quiet && !flags.json);
    options.on_progress = [&bar](const ops::progress_event& event) { bar.update(event); };
    auto outcome = run();
    bar.finish();
    options.on_progress = nullptr;
    return outcome;
}

/// What every command does with its outcome: the error and its status, or the warnings,
/// then the report as JSON (`json(report)`) or as text (`text(report)`, not with --quiet).
template <class Report, class Json, class Text>
int show(const result<Report>& outcome, const common_flags& flags, Json&& json, Text&& text) {
    if (!outcome) return fail(outcome.error(), flags.json);
    print_warnings(outcome->warnings);
    if (flags.json) print_json(json(*outcome));
    else if (!flags.quiet) print_out(text(*outcome));
    return exit_ok;
}

}  // namespace onnxstream::cli
