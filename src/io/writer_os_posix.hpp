// The POSIX calls of the writers (see writer_support.hpp): pwrite, sync_file_range,
// copy_file_range. Included by writer_support.hpp only.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>

namespace onnxstream::io::detail {

/// The size of the open file now, if the system says.
[[nodiscard]] inline std::optional<std::uint64_t> size_now(int fd) noexcept {
    struct stat info {};
    if (::fstat(fd, &info) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(info.st_size);
}

/// pwrite until every byte is written (short writes and EINTR handled).
[[nodiscard]] inline result<void> write_all(int fd, std::span<const std::byte> bytes, std::uint64_t offset) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t wrote = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
        if (wrote < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return write_failed(errno);
        }
        if (wrote == 0) return failure(error_code::io, "cannot write the output: the device accepted no bytes");
        done += static_cast<std::size_t>(wrote);
    }
    return {};
}

/// Starts writing [offset, offset + length) of the output to the device without waiting
/// (length 0: to the end). The output is fsync'd before it is renamed; starting writeback
/// while copying overlaps the device's work with ours, so that fsync finds little left.
/// Best effort: a failure here is reported by the fsync.
inline void start_writeback(int fd, std::uint64_t offset, std::uint64_t length) noexcept {
#if defined(__linux__)
    (void)::sync_file_range(fd, static_cast<off_t>(offset), static_cast<off_t>(length), SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
    (void)offset;
    (void)length;
#endif
}

/// Errors after which copy_file_range cannot work for this pair of files, so that the
/// bytes must be read and written instead (different file systems, a file system or
/// kernel without it, a seccomp filter).
[[nodiscard]] inline bool kernel_copy_unsupported(int os_error) noexcept {
    return os_error == EXDEV || os_error == ENOSYS || os_error == EINVAL || os_error == EOPNOTSUPP || os_error == ENOTSUP ||
           os_error == EPERM || os_error == EBADF || os_error == ETXTBSY;
}

/// copy_file_range of `length` bytes, in pieces so that `cancel` is seen between them;
/// the bytes never enter user space. Stops at the first failure.
[[nodiscard]] inline kernel_copy_result copy_in_kernel(int in, std::uint64_t in_offset, int out, std::uint64_t out_offset,
                                                       std::uint64_t length, const std::atomic<bool>* cancel) {
    kernel_copy_result outcome;
    while (outcome.copied < length) {
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
            outcome.cancelled = true;
            break;
        }
        auto from = static_cast<off_t>(in_offset + outcome.copied);
        auto to = static_cast<off_t>(out_offset + outcome.copied);
        const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(length - outcome.copied, 4ULL << 20));
        const ssize_t copied = ::copy_file_range(in, &from, out, &to, piece, 0);
        if (copied > 0) {
            outcome.copied += static_cast<std::uint64_t>(copied);
            continue;
        }
        if (copied == 0) {
            outcome.end_of_source = true;
            break;
        }
        if (errno == EINTR || errno == EAGAIN) continue;
        outcome.os_error = errno;
        break;
    }
    return outcome;
}

}  // namespace onnxstream::io::detail
