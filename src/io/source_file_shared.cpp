#include "source_file_shared.hpp"

#include <onnxstream/io/source_file.hpp>

#include <string>
#include <utility>

namespace onnxstream::io {
namespace source_detail {

error is_a_directory(const std::filesystem::path& path) {
    return {error_code::io, path.string() + " is a directory, not a file", "give the path of the file itself"};
}

error not_a_regular_file(const std::filesystem::path& path, std::string_view what) {
    return {error_code::io, path.string() + " is not a regular file (" + std::string(what) + ")",
            "point onnxstream at the model and data files themselves"};
}

error changed_size(const std::filesystem::path& path, std::uint64_t was, std::optional<std::uint64_t> now) {
    const std::string is_now = now ? "; it is now " + std::to_string(*now) + " bytes" : "";
    return {error_code::truncated_data,
            path.string() + " changed size while being read (it was " + std::to_string(was) + " bytes" + is_now + ")",
            "another program is writing to it: wait until it is done (or the download is complete), then run again"};
}

error ended_while_reading(const std::filesystem::path& path, std::uint64_t offset) {
    return {error_code::truncated_data, path.string() + " ended at byte " + std::to_string(offset) + " while reading",
            "the file changed size while onnxstream was reading it"};
}

error replaced_while_opening(const std::filesystem::path& path) {
    return {error_code::io, path.string() + " was replaced while being opened",
            "another program is changing the folder: run again once it is done"};
}

}  // namespace source_detail

using source_detail::close_descriptor;

result<void> source_file::read_at(std::uint64_t offset, std::span<std::byte> out) const {
    std::size_t done = 0;
    while (done < out.size()) {
        const auto got = source_detail::read_some(fd_, offset + done, out.subspan(done));
        if (got.os) return failure(os_failure("cannot read " + path_.string(), got.os));
        if (got.bytes == 0) return failure(source_detail::ended_while_reading(path_, offset + done));
        done += got.bytes;
    }
    return {};
}

result<std::size_t> source_file::read_ahead(std::uint64_t offset, std::span<std::byte> out, std::size_t at_least) const {
    std::size_t done = 0;
    while (done < out.size()) {
        const auto got = source_detail::read_some(fd_, offset + done, out.subspan(done));
        if (got.os) return failure(os_failure("cannot read " + path_.string(), got.os));
        if (got.bytes == 0) break;
        done += got.bytes;
    }
    if (done < at_least) return failure(source_detail::ended_while_reading(path_, offset + done));
    return done;
}

// The moves and destructors are the same on every platform: the mapping goes before the
// file it maps.
source_file::source_file(source_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      identity_(other.identity_),
      path_(std::move(other.path_)),
      mapping_(std::move(other.mapping_)) {}

source_file& source_file::operator=(source_file&& other) noexcept {
    if (this != &other) {
        mapping_ = mapped_file{};
        close_descriptor(fd_);
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
    close_descriptor(fd_);
}

located_file::located_file(located_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      real_path_(std::move(other.real_path_)),
      identity_(other.identity_),
      regular_(other.regular_),
      directory_(other.directory_) {}

located_file& located_file::operator=(located_file&& other) noexcept {
    if (this != &other) {
        close_descriptor(fd_);
        fd_ = std::exchange(other.fd_, -1);
        path_ = std::move(other.path_);
        real_path_ = std::move(other.real_path_);
        identity_ = other.identity_;
        regular_ = other.regular_;
        directory_ = other.directory_;
    }
    return *this;
}

located_file::~located_file() { close_descriptor(fd_); }

}  // namespace onnxstream::io
