// Helpers every subcommand shares: printing errors, warnings and reports (the library
// renders them: report/text.hpp, report/json.hpp), the flags the CLI words remedies as,
// common options, and turning a parse into arguments or an exit status.
#pragma once

#include "arguments.hpp"
#include "commands.hpp"
#include "progress.hpp"
#include "terminal_text.hpp"

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
inline constexpr option_spec opt_output = value_option("--output", "-o");
inline constexpr option_spec opt_data = repeated_option("--data");
inline constexpr option_spec opt_data_dir = repeated_option("--data-dir");
inline constexpr option_spec opt_threads = value_option("--threads", "-j");
inline constexpr option_spec opt_force = flag_option("--force", "-f");
inline constexpr option_spec opt_writer = value_option("--writer");  // auto | io_uring | overlapped | portable (testing)
inline constexpr option_spec opt_allow_size_mismatch = flag_option("--allow-size-mismatch");
inline constexpr option_spec opt_strict = flag_option("--strict");
// The data layout options of the commands that write data files (split, repack, convert,
// export --to safetensors), and export's target.
inline constexpr option_spec opt_data_name = value_option("--data-name");
inline constexpr option_spec opt_threshold = value_option("--threshold");
inline constexpr option_spec opt_align = value_option("--align");
inline constexpr option_spec opt_align_threshold = value_option("--align-threshold");
inline constexpr option_spec opt_shard_size = value_option("--shard-size");
inline constexpr option_spec opt_to = value_option("--to");

/// `base` followed by `extra`: a command's option table from a shared one.
template <std::size_t base_size, class... Extra>
constexpr auto with_options(const std::array<option_spec, base_size>& base, Extra... extra) {
    std::array<option_spec, base_size + sizeof...(Extra)> all{};
    std::size_t i = 0;
    for (const auto& o : base) all[i++] = o;
    ((all[i++] = option_spec(extra)), ...);
    return all;
}

/// The options of every command that reads a model, what `open_options_from` reads:
/// each command's table starts with these (a command that lacked one refused it).
inline constexpr std::array model_command_options{
    opt_help, opt_quiet, opt_json, opt_data, opt_data_dir, opt_strict, opt_allow_size_mismatch};

/// The options of every command that rewrites a model: the above, --output, and what
/// `fill_rewrite_options` reads besides.
inline constexpr auto rewrite_command_options = with_options(model_command_options, opt_output, opt_force, opt_threads,
                                                             opt_writer);

struct common_flags {
    bool quiet = false;
    bool json = false;
};

/// Fills how the model is opened (open_options_from), --force, --threads, --writer
/// (without --writer, or with --writer auto, the environment variable ONNXSTREAM_WRITER=portable
/// picks the portable writer: the test suites run every command that way).
[[nodiscard]] result<void> fill_rewrite_options(const parsed_arguments& args, ops::rewrite_options& options);

/// `chosen`, or for `automatic` the writer ONNXSTREAM_WRITER names (only `portable` counts):
/// the library reads no environment, so the command line reads it for the test suites.
[[nodiscard]] io::writer_backend writer_from_environment(io::writer_backend chosen);

/// Sets `target` from the size option `name` when it is given (errors: usage).
[[nodiscard]] result<void> read_size(const parsed_arguments& args, std::string_view name, std::uint64_t& target);
[[nodiscard]] result<void> read_size(const parsed_arguments& args, std::string_view name, std::optional<std::uint64_t>& target);
/// --shard-size: as read_size, and more than 0.
[[nodiscard]] result<void> read_shard_size(const parsed_arguments& args, std::uint64_t& target);
/// --threads when it is given (errors: usage).
[[nodiscard]] result<void> read_threads(const parsed_arguments& args, unsigned& target);

struct prepared {
    std::optional<parsed_arguments> args;  // empty: return `status`
    int status = exit_ok;
    common_flags flags;
};

/// Parses the arguments and handles --help; without args, the caller returns `status`.
[[nodiscard]] prepared prepare(std::string_view name, std::string_view help, std::span<const std::string> argv,
                               std::span<const option_spec> options);

/// How the model is opened: --data, --data-dir, --strict, --allow-size-mismatch. Every
/// command hands these to its operation, which opens the model with them
/// (onnx::bound_model::open).
[[nodiscard]] onnx::open_options open_options_from(const parsed_arguments& args);

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
