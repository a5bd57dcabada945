#include <onnxstream/io/output_file.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace onnxstream::io {
namespace {

// A registry of live temporary files that a signal handler may read: fixed storage,
// slots claimed and released with atomics, no allocation. The states live apart from the
// paths so that scanning them touches one page, not one per slot.
constexpr std::size_t max_registered = 1024;  // a sharded repack may hold many outputs at once
constexpr std::size_t max_path = 4096;
enum slot_state : int { slot_free = 0, slot_writing = 1, slot_ready = 2 };
std::array<std::atomic<int>, max_registered> slot_states{};
char slot_paths[max_registered][max_path];

void register_temporary(const std::filesystem::path& path) noexcept {
    const auto& text = path.native();
    if (text.size() >= max_path) return;
    for (std::size_t i = 0; i < max_registered; ++i) {
        int expected = slot_free;
        if (!slot_states[i].compare_exchange_strong(expected, slot_writing)) continue;
        std::memcpy(slot_paths[i], text.c_str(), text.size() + 1);
        slot_states[i].store(slot_ready, std::memory_order_release);
        return;
    }
}

void unregister_temporary(const std::filesystem::path& path) noexcept {
    for (std::size_t i = 0; i < max_registered; ++i) {
        if (slot_states[i].load(std::memory_order_acquire) == slot_ready && path.native() == slot_paths[i]) {
            slot_states[i].store(slot_free, std::memory_order_release);
            return;
        }
    }
}

std::string random_suffix() {
    static thread_local std::mt19937_64 generator{std::random_device{}()};
    static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::string suffix(8, 'x');
    for (auto& c : suffix) c = alphabet[generator() % (sizeof(alphabet) - 1)];
    return suffix;
}

std::string human_bytes(std::uint64_t bytes) {
    char text[64];
    if (bytes >= (1ULL << 30)) std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ULL << 30));
    else if (bytes >= (1ULL << 20)) std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1ULL << 20));
    else std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
    return text;
}

}  // namespace

void remove_all_temporaries_signal_safe() noexcept {
    for (std::size_t i = 0; i < max_registered; ++i)
        if (slot_states[i].load(std::memory_order_acquire) == slot_ready) ::unlink(slot_paths[i]);
}

output_file::output_file(output_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      overwrite_(other.overwrite_),
      destination_(std::move(other.destination_)),
      temporary_(std::exchange(other.temporary_, {})) {}

output_file& output_file::operator=(output_file&& other) noexcept {
    if (this != &other) {
        discard();
        fd_ = std::exchange(other.fd_, -1);
        size_ = other.size_;
        overwrite_ = other.overwrite_;
        destination_ = std::move(other.destination_);
        temporary_ = std::exchange(other.temporary_, {});
    }
    return *this;
}

output_file::~output_file() { discard(); }

void output_file::discard() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temporary_.empty()) {
        ::unlink(temporary_.c_str());
        unregister_temporary(temporary_);
        temporary_.clear();
    }
}

result<output_file> output_file::create(const std::filesystem::path& destination, std::uint64_t size,
                                        const output_options& options) {
    output_file file;
    file.destination_ = destination;
    file.size_ = size;
    file.overwrite_ = options.overwrite;
    std::error_code status_error;
    const auto status = std::filesystem::status(destination, status_error);
    if (std::filesystem::is_directory(status))
        return failure(error_code::invalid_argument, "the output " + destination.string() + " is a directory",
                       "give a file name with -o");
    if (std::filesystem::exists(status) && !options.overwrite)
        return failure(error_code::output_exists, "the output " + destination.string() + " already exists",
                       "pass --force to replace it, or choose another name with -o");
    auto folder = destination.parent_path();
    if (folder.empty()) folder = ".";
    if (!std::filesystem::is_directory(folder, status_error))
        return failure(error_code::io, "the output folder " + folder.string() + " does not exist",
                       "create it first, or choose another output with -o");
    for (int attempt = 0; attempt < 16 && file.fd_ < 0; ++attempt) {
        file.temporary_ = folder / ("." + destination.filename().string() + ".onnxstream-" + random_suffix() + ".tmp");
        file.fd_ = ::open(file.temporary_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (file.fd_ < 0 && errno != EEXIST) {
            const std::error_code os(errno, std::generic_category());
            file.temporary_.clear();
            return failure(os_failure("cannot create a file in " + folder.string(), os,
                                      "check that the output folder exists and is writable"));
        }
    }
    if (file.fd_ < 0) {
        file.temporary_.clear();
        return failure(error_code::io, "cannot create a temporary file in " + folder.string());
    }
    register_temporary(file.temporary_);
    if (size > 0) {
        int rc = options.preallocate ? ::posix_fallocate(file.fd_, 0, static_cast<off_t>(size)) : EOPNOTSUPP;
        if (rc == EOPNOTSUPP || rc == EINVAL) rc = ::ftruncate(file.fd_, static_cast<off_t>(size)) == 0 ? 0 : errno;
        if (rc != 0) {
            const std::error_code os(rc, std::generic_category());
            auto e = os_failure("cannot reserve " + human_bytes(size) + " for " + destination.string(), os,
                                os == std::errc::no_space_on_device
                                    ? "free at least " + human_bytes(size) + " on that file system, or write elsewhere with -o"
                                    : std::string{});
            return failure(std::move(e));
        }
    }
    return file;
}

result<void> output_file::commit() {
    if (fd_ < 0 || temporary_.empty()) return failure(error_code::io, "the output was already committed or discarded");
    if (::fsync(fd_) != 0)
        return failure(os_failure("cannot flush " + temporary_.string() + " to disk", {errno, std::generic_category()}));
    if (::close(std::exchange(fd_, -1)) != 0)
        return failure(os_failure("cannot close " + temporary_.string(), {errno, std::generic_category()}));
    if (overwrite_) {
        if (::rename(temporary_.c_str(), destination_.c_str()) != 0)
            return failure(os_failure("cannot rename the output into place as " + destination_.string(),
                                      {errno, std::generic_category()}));
    } else {
        // link + unlink refuses to replace a destination that appeared while we worked.
        if (::link(temporary_.c_str(), destination_.c_str()) != 0) {
            const int code = errno;
            if (code == EEXIST)
                return failure(error_code::output_exists, "the output " + destination_.string() + " appeared while writing",
                               "pass --force to replace it");
            if (::rename(temporary_.c_str(), destination_.c_str()) != 0)
                return failure(os_failure("cannot move the output into place as " + destination_.string(),
                                          {errno, std::generic_category()}));
        } else {
            ::unlink(temporary_.c_str());
        }
    }
    unregister_temporary(temporary_);
    temporary_.clear();
    auto folder = destination_.parent_path();
    if (folder.empty()) folder = ".";
    const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder_fd >= 0) {
        ::fsync(folder_fd);
        ::close(folder_fd);
    }
    return {};
}

}  // namespace onnxstream::io
