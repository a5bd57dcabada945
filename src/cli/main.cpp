// onnxstream's entry point: dispatch to a subcommand, turn SIGINT/SIGTERM into a
// cancellation the library sees between chunks (its outputs are then removed), and never
// let an exception escape as a crash.
#include "commands.hpp"
#include "terminal_text.hpp"

#include <onnxstream/io/output_file.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#ifndef ONNXSTREAM_VERSION
#define ONNXSTREAM_VERSION "unknown"
#endif

namespace {

std::atomic<bool> cancel_requested{false};
std::atomic<int> signals_seen{0};

extern "C" void on_signal(int signal_number) {
    cancel_requested.store(true);
    // A second signal means the user will not wait: clean up and leave right away.
    if (signals_seen.fetch_add(1) > 0) {
        onnxstream::io::remove_all_temporaries_signal_safe();
        ::_exit(128 + signal_number);
    }
}

void install_signal_handlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    ::sigaction(SIGHUP, &action, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

// A model stored one file per tensor keeps thousands of data files open; the usual soft
// limit (1024) is a default, not a choice: take what the hard limit allows.
void raise_open_file_limit() {
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == limit.rlim_max) return;
    const rlim_t soft = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0 || limit.rlim_max != RLIM_INFINITY) return;
    // An infinite hard limit is refused (past fs.nr_open): ask for the kernel's usual ceiling.
    limit.rlim_cur = std::max<rlim_t>(soft, 1U << 20);
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
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

int run(int argc, char** argv) {
    using namespace onnxstream::cli;
    if (argc < 2) {
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
    for (const auto& c : commands()) {
        if (c.name != first) continue;
        const std::vector<std::string> args(argv + 2, argv + argc);
        command_context context{&cancel_requested};
        return c.run(args, context);
    }
    onnxstream::cli::print_text(stderr, "onnxstream: error: unknown command '%s'\n  run 'onnxstream --help' for the list of commands\n",
                                onnxstream::cli::terminal_safe(first).c_str());
    return exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
    install_signal_handlers();
    raise_open_file_limit();
    try {
        const int status = run(argc, argv);
        std::fflush(stdout);
        return status;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "onnxstream: error: out of memory\n  the model's metadata is too large for this machine\n");
    } catch (const std::exception& e) {
        onnxstream::cli::print_text(stderr, "onnxstream: error: internal error: %s\n  please report this with the model that caused it\n",
                                    onnxstream::cli::terminal_safe(e.what()).c_str());
    }
    onnxstream::io::remove_all_temporaries_signal_safe();
    return onnxstream::cli::exit_failed;
}
