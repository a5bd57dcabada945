// An output written safely: bytes go to a hidden temporary file in the destination's
// folder, sized up front (so a full disk is found before the first byte), then fsync'd
// and renamed over the destination. Until `commit` succeeds the destination is untouched;
// a destroyed, uncommitted output removes its temporary file, so a failed or interrupted
// run leaves nothing behind.
#pragma once

#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>

namespace onnxstream::io {

struct output_options {
    bool overwrite = false;   // replace an existing destination (--force)
    bool preallocate = true;  // reserve the blocks up front (posix_fallocate)
};

class output_file {
public:
    output_file() = default;
    output_file(output_file&&) noexcept;
    output_file& operator=(output_file&&) noexcept;
    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;
    ~output_file();

    /// Creates the temporary file for `destination`, `size` bytes long. Errors:
    /// `output_exists` (without overwrite), `no_space` (saying how much was needed), `io`.
    [[nodiscard]] static result<output_file> create(const std::filesystem::path& destination, std::uint64_t size,
                                                    const output_options& options);

    [[nodiscard]] int descriptor() const noexcept { return fd_; }
    [[nodiscard]] const std::filesystem::path& destination() const noexcept { return destination_; }
    [[nodiscard]] const std::filesystem::path& temporary_path() const noexcept { return temporary_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

    /// fsync, rename over the destination, fsync the folder. After success the object no
    /// longer owns a temporary file.
    [[nodiscard]] result<void> commit();

    /// Removes the temporary file now (also done by the destructor).
    void discard() noexcept;

private:
    int fd_ = -1;
    std::uint64_t size_ = 0;
    bool overwrite_ = false;
    std::filesystem::path destination_;
    std::filesystem::path temporary_;
};

/// Every temporary file path still open in this process, for a signal handler that must
/// remove them before exiting. Async-signal-safe: a fixed array of C strings.
void remove_all_temporaries_signal_safe() noexcept;

}  // namespace onnxstream::io
