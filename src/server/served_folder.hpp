// The folder `onnxstream gui` serves, held by a descriptor opened once. Every file the
// server (or a job's worker) opens or creates is reached from that descriptor, one path
// component at a time, with no symbolic link followed at any step: openat2 with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (Linux 5.6), or where the kernel lacks it
// (ENOSYS) a walk of openat(O_NOFOLLOW) calls. A folder swapped for a link while a
// request runs then fails that request; it never leads outside. Nothing here checks a
// name and uses it again.
//
// The library opens files by name. To hand it a name that cannot leave the served folder,
// `pin` opens the folder a file lives in and names the file through that descriptor
// (/proc/self/fd/N/file): the kernel resolves that name from the open folder, whatever
// happens to the path it was reached by. The pin must outlive the library's use of the
// name. Linux only (the server is not built for Windows).
#pragma once

#include <onnxstream/result.hpp>

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace onnxstream::server {

/// A descriptor that closes itself; move-only.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& other) noexcept;
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    ~unique_fd();

    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }

private:
    int fd_ = -1;
};

/// A file or folder beneath the served folder under a name the library may open: the
/// descriptor `folder` holds it or its folder open, and `path` is /proc/self/fd/N (a
/// pinned folder or file) or /proc/self/fd/N/NAME (a file in a pinned folder). `shown`
/// is the same place under the served folder's path, for messages.
struct pinned_path {
    unique_fd folder;
    std::filesystem::path path;
    std::filesystem::path shown;
};

enum class pin_kind : std::uint8_t {
    folder,       // the path names a folder: pin it
    file,         // a regular file, itself held open: /proc/self/fd/N names that very file
    existing,     // a regular file in its pinned folder (a model: the library looks beside it)
    destination,  // a file that may not exist yet (an output): its folder is pinned
};

class served_folder {
public:
    /// Opens `root` (which must be a folder). Errors: `invalid_argument`, `io`.
    [[nodiscard]] static result<served_folder> open(const std::filesystem::path& root);

    /// The folder's canonical path, for messages and for names shown to the page.
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

    /// Opens `relative` ('/'-separated; empty: the folder itself) beneath the folder with
    /// `flags` (O_CLOEXEC is added; O_CREAT needs `mode`). Errors: `unsafe_location` (an
    /// absolute path, `..`, a NUL, or a symbolic link on the way or at the end),
    /// `missing_data` (nothing there), `io` (any other failure, with the OS error).
    [[nodiscard]] result<unique_fd> open_beneath(std::string_view relative, int flags, mode_t mode = 0) const;

    /// `relative` as a name the library can open without leaving the folder (see above).
    /// Errors: as `open_beneath`, and `invalid_argument` when the file is not what `kind` needs.
    [[nodiscard]] result<pinned_path> pin(std::string_view relative, pin_kind kind) const;

private:
    unique_fd descriptor_;
    std::filesystem::path path_;
};

/// Replaces every /proc/self/fd/N that `pins` hold in `text` by the place it shows. With
/// `json`, the replacement is escaped as inside a JSON string.
[[nodiscard]] std::string show_pinned(std::string text, std::span<const pinned_path* const> pins, bool json);

}  // namespace onnxstream::server
