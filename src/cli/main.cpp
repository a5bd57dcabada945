// onnxstream's entry point: dispatch to a subcommand, turn terminating signals into a
// clean exit, never let an exception escape as a crash, and fail when stdout could not
// be written.
//
// Signals, Ctrl-C, the open-file limit and the command line's encoding are the
// platform's (platform.hpp).
//
// stdout: a write error (a full disk) is an error, exit 1 with a message on stderr, like
// any other output that could not be written. A reader that stopped early (`| head -1`)
// is not: the exit is quiet, with the status a shell shows for a program SIGPIPE ended
// (128 + 13), as coreutils' programs end, but without dying by the signal.
#include "arguments.hpp"
#include "commands.hpp"
#include "platform.hpp"
#include "terminal_text.hpp"

#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/conversion_path.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#ifndef ONNXSTREAM_VERSION
#define ONNXSTREAM_VERSION "unknown"
#endif

namespace {

std::atomic<bool> cancel_requested{false};

constexpr int exit_reader_gone = 128 + 13;  // SIGPIPE's number on every POSIX system we build for

// Everything printed must have reached stdout.
int check_stdout(int status) {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    if (flushed && std::ferror(stdout) == 0) return status;
    const int code = errno;
    if (code == EPIPE || onnxstream::cli::platform::stdout_reader_gone()) return exit_reader_gone;
    std::fprintf(stderr, "onnxstream: error: cannot write to standard output%s%s\n  %s\n", code != 0 ? ": " : "",
                 code != 0 ? std::strerror(code) : "", "check where it goes (a full disk?) and run the command again");
    return status != onnxstream::cli::exit_ok ? status : onnxstream::cli::exit_failed;
}

void print_usage(std::FILE* out) {
    std::fprintf(out,
                 "onnxstream %s: rewrite ONNX models of any size without loading their weights\n\n"
                 "usage: onnxstream COMMAND [OPTIONS]\n\ncommands:\n",
                 ONNXSTREAM_VERSION);
    for (const auto& c : onnxstream::cli::commands())
        std::fprintf(out, "  %-9.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(), static_cast<int>(c.summary.size()),
                     c.summary.data());
    std::fprintf(out, "\nRun 'onnxstream COMMAND --help' for a command's options.\n");
}

int run(const std::vector<std::string>& argv) {
    using namespace onnxstream::cli;
    if (argv.size() < 2) {
        print_usage(stderr);
        return exit_usage;
    }
    const std::string first = argv[1];
    if (first == "--help" || first == "-h" || first == "help") {
        print_usage(stdout);
        return exit_ok;
    }
    if (first == "--version" || first == "-V") {
        std::printf("onnxstream %s\n", ONNXSTREAM_VERSION);
        return exit_ok;
    }
    if (first == gui_worker_command) {
        command_context context{&cancel_requested};
        return run_gui_worker({argv.begin() + 2, argv.end()}, context);
    }
    for (const auto& c : commands()) {
        if (c.name != first) continue;
        const std::vector<std::string> args(argv.begin() + 2, argv.end());
        command_context context{&cancel_requested};
        return c.run(args, context);
    }
    std::vector<std::string_view> names;
    for (const auto& c : commands()) names.push_back(c.name);
    if (const auto near = onnxstream::cli::closest_word(first, names)) {
        onnxstream::cli::print_text(stderr, "onnxstream: error: unknown command '%s'\n  did you mean 'onnxstream %.*s'?\n",
                                    onnxstream::cli::terminal_safe(first).c_str(), static_cast<int>(near->size()), near->data());
        return exit_usage;
    }
    onnxstream::cli::print_text(stderr,
                                "onnxstream: error: unknown command '%s'\n  run 'onnxstream --help' for the list of commands\n",
                                onnxstream::cli::terminal_safe(first).c_str());
    return exit_usage;
}

// ONNXSTREAM_SIMD=off (or portable) runs float conversion and quantize's block loops on the
// portable code only, avx2 caps them there (onnx/conversion_path.hpp): for comparing the
// paths and as a way out should a CPU misreport its features. Anything else keeps the fastest path.
void limit_simd_from_environment() {
    const char* value = std::getenv("ONNXSTREAM_SIMD");
    if (value == nullptr) return;
    const std::string_view chosen(value);
    if (chosen == "off" || chosen == "portable" || chosen == "0")
        onnxstream::onnx::limit_conversion_path(onnxstream::onnx::conversion_path::portable);
    else if (chosen == "avx2") onnxstream::onnx::limit_conversion_path(onnxstream::onnx::conversion_path::avx2);
}

}  // namespace

int main(int argc, char** argv) {
    onnxstream::io::install_sigbus_guard();  // before any thread: the guard for mapped inputs (mapped_file.hpp)
    onnxstream::cli::platform::install_signal_handlers(cancel_requested);
    onnxstream::cli::platform::raise_open_file_limit();
    onnxstream::cli::platform::map_large_allocations();
    limit_simd_from_environment();
    try {
        return check_stdout(run(onnxstream::cli::platform::command_line(argc, argv)));
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "onnxstream: error: out of memory\n  the model's metadata is too large for this machine\n");
    } catch (const std::exception& e) {
        onnxstream::cli::print_text(stderr,
                                    "onnxstream: error: internal error: %s\n  please report this with the model that caused it\n",
                                    onnxstream::cli::terminal_safe(e.what()).c_str());
    }
    onnxstream::io::abandon_all_outputs();
    return onnxstream::cli::exit_failed;
}
