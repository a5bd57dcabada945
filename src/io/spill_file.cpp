#include <onnxstream/io/spill_file.hpp>

#include <onnxstream/io/chunked_read.hpp>
#include "writer_support.hpp"

#include <string>
#include <utility>

#if !defined(_WIN32)  // Windows: spill_file_win.cpp
#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#endif

namespace onnxstream::io {

#if !defined(_WIN32)

spill_file::spill_file(spill_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), folder_(std::move(other.folder_)) {}

spill_file& spill_file::operator=(spill_file&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        size_ = other.size_;
        folder_ = std::move(other.folder_);
    }
    return *this;
}

spill_file::~spill_file() {
    if (fd_ >= 0) ::close(fd_);
}

result<spill_file> spill_file::create(const std::filesystem::path& folder) {
    spill_file spill;
    spill.folder_ = folder.empty() ? std::filesystem::path(".") : folder;
    spill.fd_ = ::open(spill.folder_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (spill.fd_ < 0) {
        // Some file systems have no O_TMPFILE: a named file, unlinked while open.
        std::string pattern = (spill.folder_ / ".onnxstream-spill-XXXXXX").string();
        spill.fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
        if (spill.fd_ < 0)
            return failure(os_failure("cannot create a scratch file in " + spill.folder_.string(),
                                      {errno, std::generic_category()}, "check that the output's folder is writable"));
        ::unlink(pattern.c_str());
    }
    return spill;
}

result<source_file> spill_file::open_source() const { return source_file::open("/proc/self/fd/" + std::to_string(fd_), false); }

#endif

// Appends go through the writers' write loop (pwrite, or WriteFile on Windows); only the
// message says which file failed.
result<void> spill_file::write_all(std::span<const std::byte> bytes) {
    if (auto wrote = detail::write_all(fd_, bytes, size_); !wrote)
        return failure(os_failure("cannot write a scratch file in " + folder_.string(), wrote.error().os_error,
                                  "free some space in the output's folder"));
    size_ += bytes.size();
    return {};
}

result<std::uint64_t> spill_file::append(std::span<const std::byte> bytes) {
    const auto offset = size_;
    ONNXSTREAM_TRY(write_all(bytes));
    return offset;
}

result<std::uint64_t> spill_file::append_range(const source_file& source, std::uint64_t offset, std::uint64_t length) {
    const auto start = size_;
    ONNXSTREAM_TRY(for_each_chunk(source, offset, length, [this](std::span<const std::byte> piece) { return write_all(piece); }));
    return start;
}

}  // namespace onnxstream::io
