#include <onnxstream/io/mapped_file.hpp>

#include <boost/iostreams/device/mapped_file.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace onnxstream::io {

struct mapped_file::impl {
    boost::iostreams::mapped_file_source source;
};

mapped_file::mapped_file() = default;
mapped_file::mapped_file(mapped_file&&) noexcept = default;
mapped_file& mapped_file::operator=(mapped_file&&) noexcept = default;
mapped_file::~mapped_file() = default;

result<mapped_file> mapped_file::map(int fd, std::uint64_t size, const std::filesystem::path& display) {
    mapped_file file;
    if (size == 0) return file;
    if (size > static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max()))
        return failure(error_code::unsupported, "cannot map " + display.string() + ": too large for this machine");
    auto state = std::make_unique<impl>();
    const std::string proc_path = "/proc/self/fd/" + std::to_string(fd);
    try {
        boost::iostreams::mapped_file_params params;
        params.path = std::filesystem::exists(proc_path) ? proc_path : display.string();
        params.length = static_cast<std::size_t>(size);
        state->source.open(params);
    } catch (const std::exception& e) {
        return failure(error_code::io, "cannot map " + display.string() + " into memory: " + e.what(),
                       "check that the file is readable and not being changed");
    }
    if (!state->source.is_open() || state->source.size() != size)
        return failure(error_code::io, "cannot map " + display.string() + " into memory",
                       "the file changed size while it was opened");
    file.bytes_ = std::span(reinterpret_cast<const std::byte*>(state->source.data()), state->source.size());
    file.impl_ = std::move(state);
    return file;
}

void mapped_file::release(std::uint64_t offset, std::uint64_t length) const noexcept {
    if (bytes_.empty() || offset >= bytes_.size()) return;
    static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // Only whole pages inside the range may be dropped.
    const std::uint64_t first = (offset + page - 1) / page * page;
    const std::uint64_t last = std::min<std::uint64_t>(offset + length, bytes_.size()) / page * page;
    if (last <= first) return;
    auto* base = const_cast<std::byte*>(bytes_.data());
    ::madvise(base + first, static_cast<std::size_t>(last - first), MADV_DONTNEED);
}

}  // namespace onnxstream::io
