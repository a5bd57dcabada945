// What the POSIX and the Windows source_file share: the moves, and the messages about a
// file that changes while onnxstream reads it. Internal to io/ (source_file.cpp,
// source_file_win.cpp, source_file_shared.cpp).
#pragma once

#include <onnxstream/error.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>

namespace onnxstream::io::source_detail {

/// Closes a descriptor (a HANDLE on Windows) and sets it to -1; each platform defines it.
void close_descriptor(int& fd) noexcept;

/// One read of up to `out.size()` bytes at `offset` (pread, retried on EINTR; a
/// synchronous ReadFile on Windows): `bytes` is 0 at the end of the file; `os` is set on a
/// failure. `read_at` (source_file_shared.cpp) loops over it; each platform defines it.
struct read_outcome {
    std::size_t bytes = 0;
    std::error_code os;
};
[[nodiscard]] read_outcome read_some(int fd, std::uint64_t offset, std::span<std::byte> out) noexcept;

/// Opening refuses a directory, and anything but a file with bytes on a disk (`what`
/// names what it may be instead: "a device, FIFO or socket").
[[nodiscard]] error is_a_directory(const std::filesystem::path& path);
[[nodiscard]] error not_a_regular_file(const std::filesystem::path& path, std::string_view what);

/// The file was `was` bytes when opened and is `now` (when known) bytes now.
[[nodiscard]] error changed_size(const std::filesystem::path& path, std::uint64_t was, std::optional<std::uint64_t> now);

/// A read found the end of the file at `offset`, before the bytes it was asked for.
[[nodiscard]] error ended_while_reading(const std::filesystem::path& path, std::uint64_t offset);

/// The file that was located is not the one that opened.
[[nodiscard]] error replaced_while_opening(const std::filesystem::path& path);

}  // namespace onnxstream::io::source_detail
