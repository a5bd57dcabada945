// Windows: files opened with CreateFileW (wide names), shared for reading, writing and
// deletion so that onnxstream never locks a user's file, and with FILE_FLAG_OVERLAPPED so
// that the overlapped writer can keep several reads in flight on them. A located file is
// a handle opened with no access rights (the counterpart of O_PATH): its final path and
// identity are read from the handle, and `open` reopens that very handle (ReOpenFile),
// never the name again.
#include <onnxstream/io/source_file.hpp>

#include "handle_win.hpp"
#include "source_file_shared.hpp"

#include <optional>
#include <string>
#include <utility>

namespace onnxstream::io {
namespace {

constexpr DWORD share_all = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

error open_failure(const std::filesystem::path& path, std::error_code os) {
    const char* hint = "check that the file is readable";
    const bool missing = os == std::errc::no_such_file_or_directory || os == std::errc::not_a_directory;
    if (missing) hint = "check the path: no file has that name";
    else if (os == std::errc::device_or_resource_busy)
        hint = "another program holds the file open without sharing it: close it and run again";
    auto e = os_failure("cannot open " + path.string(), os, hint);
    if (missing) e.code = error_code::missing_data;
    return e;
}

}  // namespace

void source_detail::close_descriptor(int& fd) noexcept {
    if (fd >= 0) ::CloseHandle(win::to_handle(fd));
    fd = -1;
}

result<source_file> source_file::open(const std::filesystem::path& path, bool map_bytes) {
    const HANDLE handle = ::CreateFileW(path.c_str(), GENERIC_READ, share_all, nullptr, OPEN_EXISTING,
                                        FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OVERLAPPED, nullptr);
    if (handle == INVALID_HANDLE_VALUE) return failure(open_failure(path, win::last_error()));
    return adopt(win::to_descriptor(handle), path, map_bytes);
}

result<source_file> source_file::adopt(int fd, const std::filesystem::path& path, bool map_bytes) {
    source_file file;
    file.path_ = path;
    file.fd_ = fd;
    const HANDLE handle = win::to_handle(fd);
    BY_HANDLE_FILE_INFORMATION info{};
    if (::GetFileType(handle) != FILE_TYPE_DISK)
        return failure(source_detail::not_a_regular_file(path, "a device, pipe or console"));
    if (!win::identity_of_handle(handle, file.identity_, info))
        return failure(os_failure("cannot read the attributes of " + path.string(), win::last_error()));
    if ((info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0) return failure(source_detail::is_a_directory(path));
    file.size_ = (static_cast<std::uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
    if (map_bytes) {
        ONNXSTREAM_ASSIGN(file.mapping_, mapped_file::map(file.fd_, file.size_, path));
    }
    return file;
}

source_detail::read_outcome source_detail::read_some(int fd, std::uint64_t offset, std::span<std::byte> out) noexcept {
    DWORD got = 0;
    if (!win::transfer_at(win::to_handle(fd), false, out.data(), out.size(), offset, got)) return {0, win::last_error()};
    return {got, {}};
}

result<void> source_file::check_unchanged() const {
    std::uint64_t now = 0;
    const bool known = fd_ >= 0 && win::size_of(win::to_handle(fd_), now);
    if (fd_ < 0 || (known && now == size_)) return {};
    return failure(source_detail::changed_size(path_, size_, known ? std::optional(now) : std::nullopt));
}

result<located_file> located_file::locate(const std::filesystem::path& path) {
    located_file located;
    located.path_ = path;
    // No access rights: nothing is read, no device is woken; BACKUP_SEMANTICS lets the
    // handle be a folder's. Symbolic links and junctions are followed.
    const HANDLE handle = ::CreateFileW(path.c_str(), 0, share_all, nullptr, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
    if (handle == INVALID_HANDLE_VALUE) return failure(open_failure(path, win::last_error()));
    located.fd_ = win::to_descriptor(handle);
    BY_HANDLE_FILE_INFORMATION info{};
    if (!win::identity_of_handle(handle, located.identity_, info))
        return failure(os_failure("cannot read the attributes of " + path.string(), win::last_error()));
    located.directory_ = (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
    located.regular_ = !located.directory_ && ::GetFileType(handle) == FILE_TYPE_DISK;
    if (!win::final_path_of(handle, located.real_path_))
        return failure(error_code::io, "cannot tell where " + path.string() + " really is",
                       "the file must be on a local or network drive");
    return located;
}

result<source_file> located_file::open(bool map_bytes) const {
    // The pinned file itself; where ReOpenFile is refused, its real path, which must
    // still be that file.
    HANDLE handle = ::ReOpenFile(win::to_handle(fd_), GENERIC_READ, share_all, FILE_FLAG_OVERLAPPED);
    if (handle == INVALID_HANDLE_VALUE)
        handle = ::CreateFileW(real_path_.c_str(), GENERIC_READ, share_all, nullptr, OPEN_EXISTING,
                               FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OVERLAPPED, nullptr);
    if (handle == INVALID_HANDLE_VALUE) return failure(open_failure(path_, win::last_error()));
    ONNXSTREAM_ASSIGN(auto file, source_file::adopt(win::to_descriptor(handle), path_, map_bytes));
    if (file.identity() != identity_) return failure(source_detail::replaced_while_opening(path_));
    return file;
}

std::optional<file_identity> identity_of(const std::filesystem::path& path) noexcept {
    const HANDLE handle = ::CreateFileW(path.c_str(), 0, share_all, nullptr, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
    if (handle == INVALID_HANDLE_VALUE) return std::nullopt;
    file_identity identity;
    BY_HANDLE_FILE_INFORMATION info{};
    const bool known = win::identity_of_handle(handle, identity, info);
    ::CloseHandle(handle);
    if (!known) return std::nullopt;
    return identity;
}

}  // namespace onnxstream::io
