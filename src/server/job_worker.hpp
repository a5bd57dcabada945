// A job's worker: the action runs in a process of its own (`onnxstream gui-worker`,
// spawned from /proc/self/exe; the multithreaded server never forks), so that a job that
// crashes fails alone and the server goes on serving. On Windows (job_worker_win.cpp) the
// same executable is started with CreateProcessW, inside a job object that ends it when
// the server's handle closes (the server ending in any way), and it inherits nothing but
// its two pipes and stderr.
//
// The two talk over the worker's stdin and stdout in frames: a frame is a list of
// strings, each sent as a netstring (`<length>:<bytes>,`), and ends with ';'. Lengths
// are checked before anything is kept, and nothing needs escaping or a JSON parser.
//   server -> worker: {"job", root, action, model, writer}, {"field", name, value}..., {"go"};
//                     then closing stdin asks the worker to cancel (as the server's exit does).
//   worker -> server: {"progress", stage, tensor, done, total}..., {"finish", state, body}
//                     where body is the finished job's JSON members (job::event_json).
#pragma once

#include "jobs.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::server {

using frame = std::vector<std::string>;

/// One frame's bytes.
[[nodiscard]] std::string encode_frame(const frame& items);

/// Frames out of a byte stream that arrives in pieces.
class frame_reader {
public:
    void feed(std::string_view bytes) { buffer_.append(bytes); }
    /// The next whole frame, nothing while it is incomplete. Errors: `malformed`.
    [[nodiscard]] result<std::optional<frame>> next();

private:
    std::string buffer_;
    std::size_t parsed_ = 0;  // bytes of buffer_ already taken
};

/// How a worker ended: crashed (a signal; on Windows an exception status or a kill), or
/// its exit status.
struct worker_end {
    bool crashed = false;
    int exit_status = -1;
    std::string cause;  // a crash's, for the page: "signal 11, SIGSEGV", "exception 0xc0000005"
};

/// The server's handle on a running worker (job_worker_posix.cpp, job_worker_win.cpp).
class worker_process {
public:
    /// Starts a worker and sends it the request. Errors: `io` (it could not start).
    [[nodiscard]] static result<worker_process> spawn(const std::filesystem::path& root, const job_request& request);

    worker_process(worker_process&& other) noexcept;
    worker_process& operator=(worker_process&&) = delete;
    worker_process(const worker_process&) = delete;
    worker_process& operator=(const worker_process&) = delete;
    /// Kills and reaps a worker still running.
    ~worker_process();

    static constexpr long long nothing_yet = -2;
    /// Reads what the worker wrote on its stdout, waiting up to `wait`: the bytes read,
    /// 0 at its end, `nothing_yet`, or -1 on an error.
    [[nodiscard]] long long read_output(char* buffer, std::size_t size, std::chrono::milliseconds wait);
    /// Asks it to stop (closes its stdin); it answers with an interrupted result.
    void cancel() noexcept;
    /// SIGKILL (Windows: TerminateProcess), for a worker that did not stop when asked.
    void kill() noexcept;
    /// Waits for it to end.
    [[nodiscard]] worker_end wait();

private:
    worker_process() = default;
#ifdef _WIN32
    void* process_ = nullptr;  // HANDLEs
    void* job_ = nullptr;      // its job object, closed: the worker ends
    bool killed_ = false;
#else
    pid_t pid_ = -1;
#endif
    unique_fd input_;
    unique_fd output_;
};

/// Writes every byte to a C runtime descriptor (POSIX: any descriptor); false on a failure.
[[nodiscard]] bool write_all(int fd, std::string_view bytes);

/// What the worker's side sets up first (job_worker_posix.cpp: the server's death ends
/// it; job_worker_win.cpp: binary stdin and stdout).
void prepare_worker_side();

/// How a path field is pinned: data-dir names a folder, output a destination, data a
/// file held open; other (a second model) a file in its pinned folder.
[[nodiscard]] pin_kind pin_kind_of(std::string_view field);

/// A finished job's error as the JSON members of its event ("error":{...}), page-worded.
[[nodiscard]] std::string error_members(const error& e);

/// The worker's side, run by `onnxstream gui-worker`: reads one job on stdin, runs it,
/// writes its frames on stdout. Returns the exit status.
[[nodiscard]] int run_job_worker();

}  // namespace onnxstream::server
