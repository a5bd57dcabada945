#include <onnxstream/io/spill_file.hpp>

#include <cerrno>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace onnxstream::passes {

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

result<void> spill_file::write_all(std::span<const std::byte> bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto wrote = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(size_ + done));
        if (wrote < 0) {
            if (errno == EINTR) continue;
            return failure(os_failure("cannot write a scratch file in " + folder_.string(), {errno, std::generic_category()},
                                      "free some space in the output's folder"));
        }
        done += static_cast<std::size_t>(wrote);
    }
    size_ += bytes.size();
    return {};
}

result<std::uint64_t> spill_file::append(std::span<const std::byte> bytes) {
    const auto offset = size_;
    ONNXSTREAM_TRY(write_all(bytes));
    return offset;
}

result<std::uint64_t> spill_file::append(const encoded_message& message, std::span<const io::source_file* const> sources) {
    const auto offset = size_;
    std::vector<std::byte> buffer;
    for (const auto& p : message.pieces()) {
        if (p.source == encoded_message::pool_source) {
            ONNXSTREAM_TRY(write_all(message.pool().subspan(p.offset, p.length)));
            continue;
        }
        if (p.source >= sources.size() || sources[p.source] == nullptr)
            return failure(error_code::invalid_argument, "an encoded message refers to an unknown source");
        buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(p.length, 1U << 20)));
        for (std::uint64_t done = 0; done < p.length;) {
            const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), p.length - done));
            const auto view = std::span(buffer).first(piece);
            ONNXSTREAM_TRY(sources[p.source]->read_at(p.offset + done, view));
            ONNXSTREAM_TRY(write_all(view));
            done += piece;
        }
    }
    return offset;
}

result<io::source_file> spill_file::open_source() const {
    return io::source_file::open("/proc/self/fd/" + std::to_string(fd_), false);
}

}  // namespace onnxstream::passes
