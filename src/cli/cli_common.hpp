// Helpers every subcommand shares: printing errors and warnings, --json documents,
// common options, and turning a parse into arguments or an exit status.
#pragma once

#include "arguments.hpp"
#include "commands.hpp"
#include "progress.hpp"
#include "terminal_text.hpp"

#include <onnxstream/error.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/report/json.hpp>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace onnxstream::cli {

using report::json_writer;

void print_error(const error& e);
void print_warning(const error& e);
void write_error_json(json_writer& json, const error& e);
/// The exit status for an error: 2 for usage errors, 130 when interrupted, else 1.
[[nodiscard]] int exit_for(const error& e);
/// Prints an error (and, with --json, an error document on stdout) and returns its status.
[[nodiscard]] int fail(const error& e, bool json);
/// Prints a usage error pointing at the command's --help and returns 2.
[[nodiscard]] int usage_error(std::string_view command, const std::string& message);
/// "1 tensor", "3 tensors".
[[nodiscard]] std::string plural(std::uint64_t n, std::string_view word);

inline constexpr option_spec opt_help{"--help", "-h", false, false};
inline constexpr option_spec opt_quiet{"--quiet", "-q", false, false};
inline constexpr option_spec opt_json{"--json", "", false, false};
inline constexpr option_spec opt_output{"--output", "-o", true, false};
inline constexpr option_spec opt_data{"--data", "", true, true};
inline constexpr option_spec opt_data_dir{"--data-dir", "", true, true};
inline constexpr option_spec opt_threads{"--threads", "-j", true, false};
inline constexpr option_spec opt_force{"--force", "-f", false, false};
inline constexpr option_spec opt_writer{"--writer", "", true, false};  // auto | io_uring | overlapped | portable (testing)
inline constexpr option_spec opt_allow_size_mismatch{"--allow-size-mismatch", "", false, false};
inline constexpr option_spec opt_strict{"--strict", "", false, false};

struct common_flags {
    bool quiet = false;
    bool json = false;
};

/// Fills --data, --data-dir, --force, --allow-size-mismatch, --strict, --threads, --writer.
[[nodiscard]] result<void> fill_rewrite_options(const parsed_arguments& args, ops::rewrite_options& options);

struct prepared {
    std::optional<parsed_arguments> args;  // empty: return `status`
    int status = exit_ok;
    common_flags flags;
};

/// Parses the arguments and handles --help; without args, the caller returns `status`.
[[nodiscard]] prepared prepare(std::string_view name, std::string_view help, std::span<const std::string> argv,
                               std::span<const option_spec> options);

[[nodiscard]] std::function<void(const ops::progress_event&)> progress_to(progress_bar& bar);

/// --data and --data-dir as resolve options.
[[nodiscard]] onnx::resolve_options data_options(const parsed_arguments& args);

}  // namespace onnxstream::cli
