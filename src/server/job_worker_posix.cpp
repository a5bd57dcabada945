// The server's side of a job's worker on POSIX (job_worker.hpp): posix_spawn of
// /proc/self/exe with two pipes, SIGKILL, waitpid.
#include "job_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace onnxstream::server {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- the server's side

result<worker_process> worker_process::spawn(const fs::path& root, const job_request& request) {
    int to_child[2];
    int from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0)
        return failure(os_failure("cannot start a job's worker", {errno, std::generic_category()}, "try again"));
    unique_fd child_input(to_child[0]);
    unique_fd input(to_child[1]);
    if (::pipe2(from_child, O_CLOEXEC) != 0)
        return failure(os_failure("cannot start a job's worker", {errno, std::generic_category()}, "try again"));
    unique_fd output(from_child[0]);
    unique_fd child_output(from_child[1]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, child_input.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, child_output.get(), STDOUT_FILENO);
    // Nothing else of the server's crosses over (its sockets, other jobs' pipes).
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);  // the server blocks the signals its sigwait thread takes
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
    const char* argv[] = {"onnxstream", "gui-worker", nullptr};
    worker_process worker;
    const int spawned = ::posix_spawn(&worker.pid_, "/proc/self/exe", &actions, &attributes, const_cast<char* const*>(argv),
                                      environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawned != 0) {
        worker.pid_ = -1;
        return failure(os_failure("cannot start a job's worker", {spawned, std::generic_category()}, "try again"));
    }
    worker.input_ = std::move(input);
    worker.output_ = std::move(output);

    std::string bytes = encode_frame({"job", root.string(), std::string(request.operation->name), request.model,
                                      std::to_string(static_cast<int>(request.writer))});
    for (const auto& [name, value] : request.fields) bytes += encode_frame({"field", name, value});
    bytes += encode_frame({"go"});
    // A worker that died before reading shows as its end of the stream and its status.
    (void)write_all(worker.input_.get(), bytes);
    return worker;
}

long long worker_process::read_output(char* buffer, std::size_t size, std::chrono::milliseconds wait) {
    pollfd readable{output_.get(), POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(wait.count()));
    if (ready == 0 || (ready < 0 && errno == EINTR)) return nothing_yet;
    if (ready < 0) return -1;
    const auto n = ::read(output_.get(), buffer, size);
    if (n < 0 && errno == EINTR) return nothing_yet;
    return n;
}

worker_process::worker_process(worker_process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), input_(std::move(other.input_)), output_(std::move(other.output_)) {}

worker_process::~worker_process() {
    if (pid_ > 0) {
        kill();
        (void)wait();
    }
}

void worker_process::cancel() noexcept { input_ = unique_fd(); }

void worker_process::kill() noexcept {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
}

worker_end worker_process::wait() {
    int status = 0;
    while (pid_ > 0 && ::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    worker_end end;
    if (WIFSIGNALED(status)) {
        const int signal_number = WTERMSIG(status);
        const char* name = sigabbrev_np(signal_number);
        end.crashed = true;
        end.cause = "signal " + std::to_string(signal_number) + (name != nullptr ? std::string(", SIG") + name : std::string());
    } else if (WIFEXITED(status)) {
        end.exit_status = WEXITSTATUS(status);
    }
    return end;
}

void prepare_worker_side() {
    // The server gone, even by SIGKILL: leave as on Ctrl-C (the CLI's signal thread
    // removes every temporary). Our stdin closing says the same to a worker in a long read.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
}

}  // namespace onnxstream::server
