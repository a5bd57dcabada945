// The subcommands: each parses its options, calls the library, prints the result for
// people (or as JSON with --json) and returns the exit status.
#pragma once

#include <atomic>
#include <span>
#include <string>
#include <string_view>

namespace onnxstream::cli {

enum exit_status : int { exit_ok = 0, exit_failed = 1, exit_usage = 2, exit_interrupted = 130 };

struct command_context {
    const std::atomic<bool>* cancel = nullptr;
};

struct command {
    std::string_view name;
    std::string_view summary;
    int (*run)(std::span<const std::string> args, const command_context& context);
};

[[nodiscard]] std::span<const command> commands();

// One function per subcommand, each in its own command_<name>.cpp.
int run_inspect(std::span<const std::string> args, const command_context& context);
int run_merge(std::span<const std::string> args, const command_context& context);
int run_split(std::span<const std::string> args, const command_context& context);
int run_repack(std::span<const std::string> args, const command_context& context);
int run_analyze(std::span<const std::string> args, const command_context& context);
int run_optimize(std::span<const std::string> args, const command_context& context);
int run_verify(std::span<const std::string> args, const command_context& context);
int run_diff(std::span<const std::string> args, const command_context& context);
int run_convert(std::span<const std::string> args, const command_context& context);
int run_quantize(std::span<const std::string> args, const command_context& context);
int run_edit(std::span<const std::string> args, const command_context& context);
int run_extract(std::span<const std::string> args, const command_context& context);
int run_infer_shapes(std::span<const std::string> args, const command_context& context);
/// `export`: dispatches on --to to a format's command (command_export.cpp).
int run_export(std::span<const std::string> args, const command_context& context);
/// `export --to safetensors`; args are all the words after `export`, --to included.
int run_export_safetensors(std::span<const std::string> args, const command_context& context);
/// `export --to caffe`; args are all the words after `export`, --to included.
int run_export_caffe(std::span<const std::string> args, const command_context& context);
int run_gui(std::span<const std::string> args, const command_context& context);
/// `gui-worker`: not listed; the gui server starts it to run one page job in a process of
/// its own (src/server/job_worker.hpp).
int run_gui_worker(std::span<const std::string> args, const command_context& context);
inline constexpr std::string_view gui_worker_command = "gui-worker";

}  // namespace onnxstream::cli
