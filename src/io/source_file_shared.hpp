// What the POSIX and the Windows source_file share: the moves, and the messages about a
// file that changes while onnxstream reads it. Internal to io/ (source_file.cpp,
// source_file_win.cpp, source_file_shared.cpp).
#pragma once

#include <onnxstream/error.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>

namespace onnxstream::io::source_detail {

/// Closes a descriptor (a HANDLE on Windows) and sets it to -1; each platform defines it.
void close_descriptor(int& fd) noexcept;

/// The file was `was` bytes when opened and is `now` (when known) bytes now.
[[nodiscard]] error changed_size(const std::filesystem::path& path, std::uint64_t was, std::optional<std::uint64_t> now);

/// A read found the end of the file at `offset`, before the bytes it was asked for.
[[nodiscard]] error ended_while_reading(const std::filesystem::path& path, std::uint64_t offset);

/// The file that was located is not the one that opened.
[[nodiscard]] error replaced_while_opening(const std::filesystem::path& path);

}  // namespace onnxstream::io::source_detail
