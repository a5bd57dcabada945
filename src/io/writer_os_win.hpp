// The Windows calls of the writers (see writer_support.hpp): positioned WriteFile with
// OVERLAPPED offsets in a loop that handles short transfers. Windows has no
// copy_file_range between arbitrary handles, so every copy goes through a buffer; the
// system's write-behind takes the place of sync_file_range. Included by
// writer_support.hpp only.
#pragma once

#include "handle_win.hpp"

#include <atomic>
#include <cerrno>
#include <optional>

namespace onnxstream::io::detail {

[[nodiscard]] inline std::optional<std::uint64_t> size_now(int fd) noexcept {
    std::uint64_t size = 0;
    if (!win::size_of(win::to_handle(fd), size)) return std::nullopt;
    return size;
}

/// WriteFile until every byte is written (short writes handled; 1 GiB per call at most).
[[nodiscard]] inline result<void> write_all(int fd, std::span<const std::byte> bytes, std::uint64_t offset) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        DWORD wrote = 0;
        if (!win::transfer_at(win::to_handle(fd), true, const_cast<std::byte*>(bytes.data() + done), bytes.size() - done,
                              offset + done, wrote))
            return failure(os_failure("cannot write the output", win::last_error()));
        if (wrote == 0) return failure(error_code::io, "cannot write the output: the device accepted no bytes");
        done += wrote;
    }
    return {};
}

inline void start_writeback(int, std::uint64_t, std::uint64_t) noexcept {}

[[nodiscard]] inline bool kernel_copy_unsupported(int) noexcept { return true; }

/// No kernel copy here: reports ENOTSUP at once, and the writer reads and writes instead.
[[nodiscard]] inline kernel_copy_result copy_in_kernel(int, std::uint64_t, int, std::uint64_t, std::uint64_t,
                                                       const std::atomic<bool>*) {
    kernel_copy_result outcome;
    outcome.os_error = ENOTSUP;
    return outcome;
}

}  // namespace onnxstream::io::detail
