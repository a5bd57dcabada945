// onnxstream's entry point: dispatch to a subcommand, turn terminating signals into a
// clean exit, never let an exception escape as a crash, and fail when stdout could not
// be written.
//
// Signals: every catchable signal whose default is to terminate the process is blocked
// in all threads and taken by one thread with sigwait, so what it does need not be
// async-signal-safe. On the first one (Ctrl-C included, whatever phase the command is
// in: parsing, planning, hashing, writing) it waits for a commit in progress to finish,
// removes every temporary output and exits with 128 + the signal (130 for SIGINT).
// Temporaries have no name where the file system allows it (O_TMPFILE), so even SIGKILL
// leaves none; a transaction is never cut in half by a signal. SIGXFSZ (a file-size
// limit) and SIGPIPE are ignored: the write then fails with EFBIG or EPIPE and the
// command reports it like any failed write.
//
// stdout: a write error (a full disk, a closed pipe: `| head -c1` included) is an error,
// exit 1 with a message on stderr, like any other output that could not be written.
#include "commands.hpp"
#include "terminal_text.hpp"

#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <pthread.h>
#include <string>
#include <sys/resource.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

#ifndef ONNXSTREAM_VERSION
#define ONNXSTREAM_VERSION "unknown"
#endif

namespace {

std::atomic<bool> cancel_requested{false};

sigset_t terminating_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGIO,
                        SIGPWR, SIGSTKFLT})
        sigaddset(&set, s);
    for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) sigaddset(&set, s);
    return set;
}

// No allocation here: out of memory must not turn a clean exit into std::terminate.
[[noreturn]] void leave_on(int signal_number) noexcept {
    cancel_requested.store(true);
    onnxstream::io::abandon_all_outputs();
    const char* name = sigabbrev_np(signal_number);
    char message[256];
    const int length = std::snprintf(message, sizeof message,
                                     "onnxstream: error: interrupted by SIG%s\n  no incomplete output was left behind; "
                                     "run the command again to finish it\n",
                                     name != nullptr ? name : "?");
    if (length > 0 && ::write(STDERR_FILENO, message, std::min(sizeof message - 1, static_cast<std::size_t>(length))) < 0) {
        // Nothing more to do: the exit status says it.
    }
    ::_exit(128 + signal_number);
}

void install_signal_handlers() {
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGXFSZ, SIG_IGN);
    const sigset_t set = terminating_signals();
    // Blocked before any other thread exists, so that every thread inherits the mask.
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    try {
        std::thread([set] {
            int signal_number = 0;
            while (::sigwait(&set, &signal_number) != 0) {
            }
            leave_on(signal_number);
        }).detach();
    } catch (const std::system_error&) {
        ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);  // no thread to take them: the defaults
    }
}

// Everything printed must have reached stdout.
int check_stdout(int status) {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    if (flushed && std::ferror(stdout) == 0) return status;
    const int code = errno;
    std::fprintf(stderr, "onnxstream: error: cannot write to standard output%s%s\n  %s\n", code != 0 ? ": " : "",
                 code != 0 ? std::strerror(code) : "",
                 code == EPIPE ? "the program reading it stopped early; its output is incomplete"
                               : "check where it goes (a full disk?) and run the command again");
    return status != onnxstream::cli::exit_ok ? status : onnxstream::cli::exit_failed;
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
    onnxstream::io::install_sigbus_guard();  // before any thread: the guard for mapped inputs (mapped_file.hpp)
    install_signal_handlers();
    raise_open_file_limit();
    try {
        return check_stdout(run(argc, argv));
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "onnxstream: error: out of memory\n  the model's metadata is too large for this machine\n");
    } catch (const std::exception& e) {
        onnxstream::cli::print_text(stderr, "onnxstream: error: internal error: %s\n  please report this with the model that caused it\n",
                                    onnxstream::cli::terminal_safe(e.what()).c_str());
    }
    onnxstream::io::abandon_all_outputs();
    return onnxstream::cli::exit_failed;
}
