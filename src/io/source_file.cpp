#include <onnxstream/io/source_file.hpp>

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace onnxstream::io {

source_file::source_file(source_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      identity_(other.identity_),
      path_(std::move(other.path_)),
      mapping_(std::move(other.mapping_)) {}

source_file& source_file::operator=(source_file&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        size_ = other.size_;
        identity_ = other.identity_;
        path_ = std::move(other.path_);
        mapping_ = std::move(other.mapping_);
    }
    return *this;
}

source_file::~source_file() {
    mapping_ = mapped_file{};
    if (fd_ >= 0) ::close(fd_);
}

result<source_file> source_file::open(const std::filesystem::path& path, bool map_bytes) {
    source_file file;
    file.path_ = path;
    // O_NONBLOCK: opening a FIFO must not hang waiting for a writer; it is refused below.
    file.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (file.fd_ < 0) {
        const std::error_code os(errno, std::generic_category());
        auto e = os_failure("cannot open " + path.string(), os,
                            os == std::errc::no_such_file_or_directory ? "check the path: no file has that name"
                                                                       : "check that the file is readable");
        if (os == std::errc::no_such_file_or_directory) e.code = error_code::missing_data;
        return failure(std::move(e));
    }
    struct stat info {};
    if (::fstat(file.fd_, &info) != 0)
        return failure(os_failure("cannot read the attributes of " + path.string(), {errno, std::generic_category()}));
    if (S_ISDIR(info.st_mode))
        return failure(error_code::io, path.string() + " is a directory, not a file",
                       "give the path of the file itself");
    if (!S_ISREG(info.st_mode))
        return failure(error_code::io, path.string() + " is not a regular file (a device, FIFO or socket)",
                       "point onnxstream at the model and data files themselves");
    // Back to blocking reads now that it is known to be a regular file.
    const int flags = ::fcntl(file.fd_, F_GETFL);
    if (flags >= 0) ::fcntl(file.fd_, F_SETFL, flags & ~O_NONBLOCK);
    file.size_ = static_cast<std::uint64_t>(info.st_size);
    file.identity_ = {static_cast<std::uint64_t>(info.st_dev), static_cast<std::uint64_t>(info.st_ino)};
    if (map_bytes) {
        ONNXSTREAM_ASSIGN(file.mapping_, mapped_file::map(file.fd_, file.size_, path));
    }
    return file;
}

result<void> source_file::read_at(std::uint64_t offset, std::span<std::byte> out) const {
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            return failure(os_failure("cannot read " + path_.string(), {errno, std::generic_category()}));
        }
        if (got == 0)
            return failure(error_code::truncated_data,
                           path_.string() + " ended at byte " + std::to_string(offset + done) + " while reading",
                           "the file changed size while onnxstream was reading it");
        done += static_cast<std::size_t>(got);
    }
    return {};
}

result<void> source_file::check_unchanged() const {
    struct stat info {};
    const bool stat_ok = fd_ >= 0 && ::fstat(fd_, &info) == 0;
    const bool same_size = stat_ok && static_cast<std::uint64_t>(info.st_size) == size_;
    if (mapping_.intact() && (same_size || fd_ < 0)) return {};
    std::string now = stat_ok ? "; it is now " + std::to_string(info.st_size) + " bytes" : "";
    return failure(error_code::truncated_data,
                   path_.string() + " changed size while being read (it was " + std::to_string(size_) + " bytes" + now +
                       ")",
                   "another program is writing to it: wait until it is done (or the download is complete), then run "
                   "again");
}

std::optional<file_identity> identity_of(const std::filesystem::path& path) noexcept {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return std::nullopt;
    return file_identity{static_cast<std::uint64_t>(info.st_dev), static_cast<std::uint64_t>(info.st_ino)};
}

}  // namespace onnxstream::io
