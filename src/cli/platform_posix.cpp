// Signals: every catchable signal whose default is to terminate the process is blocked
// in all threads and taken by one thread with sigwait, so what it does need not be
// async-signal-safe. On the first one (Ctrl-C included, whatever phase the command is
// in: parsing, planning, hashing, writing) it waits for a commit in progress to finish,
// removes every temporary output and exits with 128 + the signal (130 for SIGINT).
// Temporaries have no name where the file system allows it (O_TMPFILE), so even SIGKILL
// leaves none; a transaction is never cut in half by a signal. SIGXFSZ (a file-size
// limit) and SIGPIPE are ignored: the write then fails with EFBIG or EPIPE and the
// command reports it like any failed write.
#include "platform.hpp"

#include <onnxstream/io/output_file.hpp>

#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>

extern char** environ;

namespace onnxstream::cli::platform {
namespace {

std::atomic<bool>* cancel_requested = nullptr;
std::atomic<bool> quiet_stop{false};

sigset_t terminating_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (const int s :
         {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGIO, SIGPWR, SIGSTKFLT})
        sigaddset(&set, s);
    for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) sigaddset(&set, s);
    return set;
}

// No allocation here: out of memory must not turn a clean exit into std::terminate.
[[noreturn]] void leave_on(int signal_number) noexcept {
    cancel_requested->store(true);
    onnxstream::io::abandon_all_outputs();
    if (quiet_stop.load()) ::_exit(128 + signal_number);
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

}  // namespace

void interrupt_is_the_normal_stop() { quiet_stop.store(true); }

void install_signal_handlers(std::atomic<bool>& cancel) {
    cancel_requested = &cancel;
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

bool stdout_reader_gone() {
    // The write end of a pipe whose read end is closed polls as POLLERR.
    struct pollfd out {
        STDOUT_FILENO, POLLOUT, 0
    };
    return ::poll(&out, 1, 0) == 1 && (out.revents & POLLERR) != 0;
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

// The passes build and drop indexes of millions of entries in turn. glibc raises its
// mmap threshold each time a mapped block is freed (up to 32 MiB), after which such arrays
// come from the heap, where freeing one leaves a hole that stays in the process's RSS: a
// fixed threshold keeps them mapped, and their memory goes back when they go.
void map_large_allocations() {
#if defined(__GLIBC__)
    (void)::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

std::vector<std::string> command_line(int argc, char** argv) { return {argv, argv + argc}; }

// Starts xdg-open; false when it cannot run. Its exit status is watched on the side (a
// browser may keep it waiting): a failure then says how to open the URL.
bool open_browser(const std::string& url) {
    const char* argv[] = {"xdg-open", url.c_str(), nullptr};
    pid_t pid = 0;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", 0, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", 0, 0);
    const int spawned = posix_spawnp(&pid, "xdg-open", &actions, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return false;
    std::thread([pid] {
        int status = 0;
        if (::waitpid(pid, &status, 0) == pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            std::fprintf(stderr, "onnxstream: no browser could be started; open the URL above in one\n");
    }).detach();
    return true;
}

}  // namespace onnxstream::cli::platform
