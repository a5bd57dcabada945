// An output written safely: bytes go to a temporary file in the destination's folder,
// sized up front (so a full disk is found before the first byte), then fsync'd and moved
// over the destination. Until `commit` succeeds the destination is untouched.
//
// The temporary has no name where the file system allows it (O_TMPFILE): whatever kills
// the process, even SIGKILL, leaves nothing behind. Elsewhere it is a hidden file
// (.onnxstream-XXXXXXXX.tmp) that a destroyed, uncommitted output removes, and that
// `abandon_all_outputs` removes for a program leaving on a signal.
//
// Several outputs are committed as one transaction (`commit_outputs`): either every one
// is in place, or none is and every file they replaced is back as it was. A replaced
// file is swapped out (RENAME_EXCHANGE, or a hard link kept as a backup) rather than
// deleted, until the last output is in place. Only regular files are ever replaced (a
// FIFO, a device, a symbolic link, a folder at the destination is refused, also when it
// appears while writing), and the new file keeps the replaced one's mode and owner.
#pragma once

#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <span>

namespace onnxstream::io {

struct output_options {
    bool overwrite = false;   // replace an existing destination (--force)
    bool preallocate = true;  // reserve the blocks up front (posix_fallocate)
    bool anonymous = true;    // a temporary without a name where the file system allows it
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
    /// `output_exists` (without overwrite), `invalid_argument` (a folder, or anything but
    /// a regular file, at the destination), `no_space` (saying how much was needed), `io`,
    /// `interrupted` (after `abandon_all_outputs`).
    [[nodiscard]] static result<output_file> create(const std::filesystem::path& destination, std::uint64_t size,
                                                    const output_options& options);

    [[nodiscard]] int descriptor() const noexcept { return fd_; }
    [[nodiscard]] const std::filesystem::path& destination() const noexcept { return destination_; }
    /// The temporary's name, or empty when it has none (O_TMPFILE).
    [[nodiscard]] const std::filesystem::path& temporary_path() const noexcept { return temporary_; }
    /// A name another library can open the written bytes by before the commit (OpenCV
    /// reading an export to check it): the temporary's name, or for an anonymous
    /// temporary its descriptor under /proc/self/fd. Valid while this object owns it.
    [[nodiscard]] std::filesystem::path readable_path() const;
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

    /// Writes the bytes through to the disk (fsync, FlushFileBuffers on Windows).
    [[nodiscard]] result<void> flush_to_disk() const;

    /// fsync, move over the destination, fsync the folder: `commit_outputs` of this one.
    [[nodiscard]] result<void> commit();

    /// Removes the temporary file now (also done by the destructor).
    void discard() noexcept;

private:
    friend result<void> commit_outputs(std::span<output_file* const> outputs);
    // Not open yet: `create` opens the temporary.
    output_file(std::filesystem::path destination, std::uint64_t size, bool overwrite);

    int fd_ = -1;
    std::uint64_t size_ = 0;
    bool overwrite_ = false;
    std::filesystem::path destination_;
    std::filesystem::path temporary_;  // empty for an anonymous temporary
};

/// Commits `outputs` in order as one transaction: all are in place, or, on any failure,
/// none is and the files they replaced are restored. Afterwards no output owns a
/// temporary any more (a failed one is discarded).
[[nodiscard]] result<void> commit_outputs(std::span<output_file* const> outputs);

/// For a program about to exit on a signal: waits for a commit in progress to finish (so
/// a transaction is never cut in half), removes every named temporary file of this
/// process, and makes every later `create` and commit fail as `interrupted`. Not for a
/// signal handler: call it from an ordinary thread (one that waits with sigwait).
void abandon_all_outputs() noexcept;

}  // namespace onnxstream::io
