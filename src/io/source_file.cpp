#include <onnxstream/io/source_file.hpp>

#include "source_file_shared.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>

#include <optional>
#include <string>
#include <utility>

namespace onnxstream::io {

void source_detail::close_descriptor(int& fd) noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

namespace {

error open_failure(const std::filesystem::path& path, std::error_code os) {
    const char* hint = "check that the file is readable";
    if (os == std::errc::no_such_file_or_directory || os == std::errc::not_a_directory)
        hint = "check the path: no file has that name";
    else if (os == std::errc::too_many_files_open)
        hint =
            "the model has more files than this process may keep open: raise the limit (for example "
            "'ulimit -n 65536') and run again";
    auto e = os_failure("cannot open " + path.string(), os, hint);
    if (os == std::errc::no_such_file_or_directory || os == std::errc::not_a_directory) e.code = error_code::missing_data;
    return e;
}

std::string proc_fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

file_identity identity_from(const struct stat& info) {
    return {static_cast<std::uint64_t>(info.st_dev), static_cast<std::uint64_t>(info.st_ino)};
}

}  // namespace

result<source_file> source_file::open(const std::filesystem::path& path, bool map_bytes) {
    // O_NONBLOCK: opening a FIFO must not hang waiting for a writer; it is refused below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return failure(open_failure(path, {errno, std::generic_category()}));
    return adopt(fd, path, map_bytes);
}

result<source_file> source_file::adopt(int fd, const std::filesystem::path& path, bool map_bytes) {
    source_file file;
    file.path_ = path;
    file.fd_ = fd;
    struct stat info {};
    if (::fstat(file.fd_, &info) != 0)
        return failure(os_failure("cannot read the attributes of " + path.string(), {errno, std::generic_category()}));
    if (S_ISDIR(info.st_mode)) return failure(source_detail::is_a_directory(path));
    if (!S_ISREG(info.st_mode)) return failure(source_detail::not_a_regular_file(path, "a device, FIFO or socket"));
    // Back to blocking reads now that it is known to be a regular file.
    const int flags = ::fcntl(file.fd_, F_GETFL);
    if (flags >= 0) ::fcntl(file.fd_, F_SETFL, flags & ~O_NONBLOCK);
    file.size_ = static_cast<std::uint64_t>(info.st_size);
    file.identity_ = identity_from(info);
    if (map_bytes) {
        ONNXSTREAM_ASSIGN(file.mapping_, mapped_file::map(file.fd_, file.size_, path));
    }
    return file;
}

source_detail::read_outcome source_detail::read_some(int fd, std::uint64_t offset, std::span<std::byte> out) noexcept {
    for (;;) {
        const ssize_t got = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
        if (got >= 0) return {static_cast<std::size_t>(got), {}};
        if (errno != EINTR) return {0, {errno, std::generic_category()}};
    }
}

result<void> source_file::check_unchanged() const {
    struct stat info {};
    const bool stat_ok = fd_ >= 0 && ::fstat(fd_, &info) == 0;
    const bool same_size = stat_ok && static_cast<std::uint64_t>(info.st_size) == size_;
    if (mapping_.intact() && (same_size || fd_ < 0)) return {};
    return failure(source_detail::changed_size(path_, size_,
                                               stat_ok ? std::optional(static_cast<std::uint64_t>(info.st_size)) : std::nullopt));
}

result<located_file> located_file::locate(const std::filesystem::path& path) {
    located_file located;
    located.path_ = path;
    // O_PATH resolves the name and pins the file it leads to without opening it: no
    // read permission needed, no device driver or FIFO woken up.
    located.fd_ = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (located.fd_ < 0) return failure(open_failure(path, {errno, std::generic_category()}));
    struct stat info {};
    if (::fstat(located.fd_, &info) != 0)
        return failure(os_failure("cannot read the attributes of " + path.string(), {errno, std::generic_category()}));
    located.identity_ = identity_from(info);
    located.regular_ = S_ISREG(info.st_mode);
    located.directory_ = S_ISDIR(info.st_mode);
    // The real path of the pinned file, not of what the name leads to a moment later:
    // /proc knows it. Without /proc, the name is resolved again and must lead to the
    // same file, or the path cannot be trusted.
    std::error_code ec;
    std::filesystem::path real = std::filesystem::read_symlink(proc_fd_path(located.fd_), ec);
    if (ec || !real.is_absolute()) {
        real = std::filesystem::canonical(path, ec);
        struct stat again {};
        if (ec || ::stat(real.c_str(), &again) != 0 || identity_from(again) != located.identity_)
            return failure(error_code::io, "cannot tell where " + path.string() + " really is: it changed while being opened",
                           "another program is changing the folder: run again once it is done");
    }
    located.real_path_ = std::move(real);
    return located;
}

result<source_file> located_file::open(bool map_bytes) const {
    // Reopening the pinned file through /proc opens that very inode; without /proc, its
    // real path is opened without following a last link, and must still be that file.
    int fd = ::open(proc_fd_path(fd_).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) fd = ::open(real_path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) return failure(open_failure(path_, {errno, std::generic_category()}));
    ONNXSTREAM_ASSIGN(auto file, source_file::adopt(fd, path_, map_bytes));
    if (file.identity() != identity_) return failure(source_detail::replaced_while_opening(path_));
    return file;
}

std::optional<file_identity> identity_of(const std::filesystem::path& path) noexcept {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return std::nullopt;
    return file_identity{static_cast<std::uint64_t>(info.st_dev), static_cast<std::uint64_t>(info.st_ino)};
}

}  // namespace onnxstream::io
