// Writers execute a list of write operations against an open output file. They know
// files, offsets and hashes, nothing of ONNX. Two backends sit behind this interface:
//
//   portable  pread/pwrite through a small set of reusable buffers, with copy_file_range
//             where no byte needs to be seen (no hash), so those bytes never enter user
//             space. Works on every POSIX system.
//   io_uring    the same work with several reads and writes in flight (Linux, liburing).
//   overlapped  the same on Windows: ReadFile/WriteFile with OVERLAPPED, a ring of
//               buffers, several requests in flight (overlapped_writer_win.cpp).
#pragma once

#include <onnxstream/io/source_file.hpp>
#include <onnxstream/io/write_operation.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace onnxstream::io {

enum class writer_backend : std::uint8_t { automatic, io_uring, portable, overlapped };

/// The next window of a plan that comes in windows: replaces `operations` and `pool`
/// (the bytes its emits refer to) and returns true, or returns false at the plan's end.
using next_window = std::function<result<bool>(std::span<const write_operation>& operations, std::span<const std::byte>& pool)>;

struct write_job {
    std::span<const write_operation> operations;
    std::span<const std::byte> pool;  // the bytes emit operations refer to
    std::span<const stream_check> checks;
    std::span<const source_file* const> sources;  // indexed by write_operation::source
    int output_descriptor = -1;
    /// When set, `operations` and `pool` are the first window of a longer plan and this
    /// gives the next ones, so that the plan is never in memory whole (1M tensors: 3M
    /// operations). A writer asks for the next window only once every operation of the
    /// current one is started and every emit's bytes are copied out of the pool: the
    /// previous window's views may then be invalid.
    next_window more;
};

struct writer_options {
    const std::atomic<bool>* cancel = nullptr;             // set to stop; the run fails with `interrupted`
    std::function<void(std::uint64_t bytes)> on_progress;  // bytes written since the last call
    unsigned threads = 1;                                  // hashing workers and in-flight request bound
    std::size_t buffer_size = 1U << 20;                    // bytes per buffer
    std::size_t buffer_count = 8;                          // buffers in the ring
    bool allow_copy_file_range = true;                     // false forces the read/write path (tests)
};

struct check_outcome {
    bool sha1_matches = true;  // false when an expected SHA-1 did not match
    std::optional<sha1_digest> sha1;
    std::optional<std::uint64_t> xxh3;
};

struct write_report {
    std::vector<check_outcome> checks;  // parallel to write_job::checks
    std::uint64_t bytes_written = 0;
    std::uint64_t saturated = 0;  // convert operations: float16 values clamped to +-65504
    const char* backend = "";
};

class plan_writer {
public:
    virtual ~plan_writer() = default;
    /// Executes every operation. Errors: `io`, `no_space`, `truncated_data` (a source
    /// shorter than planned: it changed while being read), `interrupted`. A checksum
    /// mismatch is not an error here: it is reported in the outcome for the caller to judge.
    [[nodiscard]] virtual result<write_report> run(const write_job& job, const writer_options& options) = 0;
    [[nodiscard]] virtual const char* name() const noexcept = 0;
};

/// The writer for `backend`: `automatic` picks io_uring when the kernel allows it, or
/// overlapped on Windows, else portable. A backend this build or system lacks falls back
/// to portable. (No environment variable counts: a front end turns one into `backend`.)
[[nodiscard]] std::unique_ptr<plan_writer> make_writer(writer_backend backend = writer_backend::automatic);

/// The portable backend, always available.
[[nodiscard]] std::unique_ptr<plan_writer> make_portable_writer();
/// The io_uring backend, or null when it is not compiled in or the kernel refuses it.
[[nodiscard]] std::unique_ptr<plan_writer> make_uring_writer();
/// The overlapped-I/O backend, or null except on Windows.
[[nodiscard]] std::unique_ptr<plan_writer> make_overlapped_writer();

}  // namespace onnxstream::io
