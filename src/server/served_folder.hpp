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
// name.
//
// Windows (served_folder_win.cpp) has no openat for a program to call, nor /proc/self/fd:
// each component is opened by its full path as itself (FILE_FLAG_OPEN_REPARSE_POINT: a
// symbolic link or junction is opened, seen and refused, never followed), one at a time,
// each held open without FILE_SHARE_DELETE while the next is opened, so none of them can
// be renamed or replaced during the walk. A pin holds its folder (or file) open the same
// way and names it by its real path, which then cannot change under the library. The
// descriptors are HANDLEs, as in the io layer (src/io/handle_win.hpp).
#pragma once

#include <onnxstream/result.hpp>

#include <fcntl.h>  // open_beneath's flags
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifdef _WIN32
// open_beneath's flags keep their POSIX names; Windows looks at O_DIRECTORY (open a
// folder) and at whether the open creates nothing (the others are accepted and ignored).
#ifndef O_DIRECTORY
#define O_DIRECTORY 0x200000
#endif
#ifndef O_PATH
#define O_PATH 0x400000
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0x800000
#endif
#endif

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
#ifdef _WIN32
    std::vector<unique_fd> chain;  // the folders above `folder`, held so that none is renamed or replaced
#endif
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

enum class entry_kind : std::uint8_t { file, folder, link, other };

/// One entry of a listed folder. `changed`: its last status change (POSIX ctime; Windows:
/// its last write), in seconds since 1970. A link (Windows: any reparse point) is listed as
/// such, never followed.
struct folder_entry {
    std::string name;
    entry_kind kind = entry_kind::other;
    std::uint64_t size = 0;  // a file's
    std::int64_t changed = 0;
};

/// The entries of an open folder (from open_beneath with O_DIRECTORY), without `.` and
/// `..`. Errors: `io`.
[[nodiscard]] result<std::vector<folder_entry>> list_folder(unique_fd folder);

/// The size of the open file, nothing when it is not a regular file.
[[nodiscard]] std::optional<std::uint64_t> regular_file_size(int fd);

/// Positioned reads and writes: the bytes moved, 0 at the end of the file, -1 on an error.
[[nodiscard]] long long read_at(int fd, char* buffer, std::size_t size, std::uint64_t offset);
[[nodiscard]] long long write_at(int fd, const char* buffer, std::size_t size, std::uint64_t offset);

/// Removes the file `name` of the open folder `folder` (a plain name, never a path).
void remove_in(int folder, const std::string& name);

/// The identity of a pinned existing file (device, file number, size, modification
/// time), empty when it cannot be read: a file replaced, rewritten or touched gets another.
[[nodiscard]] std::string file_identity(const pinned_path& file);

/// Replaces every /proc/self/fd/N that `pins` hold in `text` by the place it shows. With
/// `json`, the replacement is escaped as inside a JSON string.
[[nodiscard]] std::string show_pinned(std::string text, std::span<const pinned_path* const> pins, bool json);

}  // namespace onnxstream::server
