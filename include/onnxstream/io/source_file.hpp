// An input file opened read-only: its descriptor (for pread and copy_file_range), its
// size, its identity (device and inode, to tell that an output would overwrite it) and,
// when asked for, a read-only mapping of its bytes. Move-only.
#pragma once

#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <span>

namespace onnxstream::io {

struct file_identity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    friend bool operator==(const file_identity&, const file_identity&) = default;
};

class source_file {
public:
    source_file() = default;
    source_file(source_file&&) noexcept;
    source_file& operator=(source_file&&) noexcept;
    source_file(const source_file&) = delete;
    source_file& operator=(const source_file&) = delete;
    ~source_file();

    /// Opens a regular file read-only (never blocking on a FIFO, never making it the
    /// controlling terminal). Directories, devices, sockets and FIFOs are refused.
    [[nodiscard]] static result<source_file> open(const std::filesystem::path& path, bool map_bytes);

    [[nodiscard]] int descriptor() const noexcept { return fd_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] file_identity identity() const noexcept { return identity_; }
    /// The mapped bytes; empty unless opened with `map_bytes`.
    [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return mapping_.bytes(); }
    [[nodiscard]] const mapped_file& mapping() const noexcept { return mapping_; }
    /// See mapped_file::copy_in_except: the mapping's pages outside `bulk` become private
    /// copies, so that reading them never maps the file's page cache.
    [[nodiscard]] result<void> copy_in_except(std::span<const byte_range> bulk) { return mapping_.copy_in_except(fd_, bulk); }

    /// Reads exactly `out.size()` bytes at `offset` (handles short reads and EINTR).
    [[nodiscard]] result<void> read_at(std::uint64_t offset, std::span<std::byte> out) const;
    /// Reads at least `at_least` bytes at `offset` (failing as read_at does when the file
    /// ends first) and as many more as fit in `out` before the end of the file; returns how
    /// many. For reading ahead of many small reads.
    [[nodiscard]] result<std::size_t> read_ahead(std::uint64_t offset, std::span<std::byte> out, std::size_t at_least) const;

    /// Fails with `truncated_data` when the file no longer has the size it was opened
    /// with, or when a read through the mapping found it shorter (see mapped_file.hpp):
    /// what was read from it may then be wrong. Call it before trusting or committing
    /// anything made from the file.
    [[nodiscard]] result<void> check_unchanged() const;

private:
    friend class located_file;
    // Takes `fd` (open for reading) and checks that it is a regular file.
    [[nodiscard]] static result<source_file> adopt(int fd, const std::filesystem::path& path, bool map_bytes);

    int fd_ = -1;
    std::uint64_t size_ = 0;
    file_identity identity_;
    std::filesystem::path path_;
    mapped_file mapping_;
};

/// A name resolved once, every link followed, without opening the file for reading: its
/// real path and kind can be checked before a byte is read (and before a device or FIFO
/// is opened at all), and `open` then opens exactly the file that was checked, whatever
/// the name leads to by then. This is how a path that must stay inside some folder is
/// opened: check `real_path()`, then `open()`; never check a name and open it again.
/// Move-only; holds an O_PATH descriptor.
class located_file {
public:
    located_file() = default;
    located_file(located_file&&) noexcept;
    located_file& operator=(located_file&&) noexcept;
    located_file(const located_file&) = delete;
    located_file& operator=(const located_file&) = delete;
    ~located_file();

    /// Errors: `missing_data` when nothing has that name (or a link dangles), `io` else.
    [[nodiscard]] static result<located_file> locate(const std::filesystem::path& path);

    /// Where the file really is: no links, no `.` or `..`.
    [[nodiscard]] const std::filesystem::path& real_path() const noexcept { return real_path_; }
    [[nodiscard]] bool is_regular() const noexcept { return regular_; }
    [[nodiscard]] bool is_directory() const noexcept { return directory_; }

    /// Opens the located file itself for reading (see source_file::open). Fails when it
    /// is no longer the same file (it was replaced between locate and open).
    [[nodiscard]] result<source_file> open(bool map_bytes) const;

private:
    int fd_ = -1;  // O_PATH
    std::filesystem::path path_;
    std::filesystem::path real_path_;
    file_identity identity_;
    bool regular_ = false;
    bool directory_ = false;
};

/// The identity of an existing path (following links), if it exists.
[[nodiscard]] std::optional<file_identity> identity_of(const std::filesystem::path& path) noexcept;

}  // namespace onnxstream::io
