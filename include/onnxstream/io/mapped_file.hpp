// A read-only memory mapping of a whole file. Move-only; the spans it hands out live as
// long as it does. An empty file maps to an empty span (mmap refuses length 0).
//
// Another process may truncate a mapped file; touching a page past its new end raises
// SIGBUS, which would kill the process. Mappings are therefore guarded, every one of
// them however many are open, on whatever thread reads them: a SIGBUS handler (installed
// with the first mapping, chaining to whatever handler was there before) puts zero pages
// in place of the rest of a guarded mapping that faults, and marks it. Reads
// then see zeros instead of crashing; `intact()` tells the owner, who must check it
// before trusting what it read (source_file::check_unchanged does).
#pragma once

#include <onnxstream/result.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace onnxstream::io {

/// A range of bytes of a file.
struct byte_range {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

class mapped_file {
public:
    mapped_file();
    mapped_file(mapped_file&&) noexcept;
    mapped_file& operator=(mapped_file&&) noexcept;
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
    ~mapped_file();

    /// Maps the file open at `fd` (whose size is `size`), through /proc/self/fd so that
    /// the mapping is of exactly the file that was opened and checked, not whatever the
    /// path names by now. `display` names the file in errors. Errors: `io` when the file
    /// cannot be mapped, or no memory is left to guard the mapping.
    [[nodiscard]] static result<mapped_file> map(int fd, std::uint64_t size, const std::filesystem::path& display);

    [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }

    /// False once a read found the file shorter than the mapping: every byte read from
    /// it since may be a zero that was not in the file.
    [[nodiscard]] bool intact() const noexcept;

    /// Tells the kernel the pages of [offset, offset + length) will not be needed again,
    /// so reading a model's metadata does not keep its weights resident. Pages made
    /// private by copy_in_except are kept (dropping them would lose their bytes).
    void release(std::uint64_t offset, std::uint64_t length) const noexcept;

    /// Replaces every page of the mapping that holds a byte outside `bulk` (sorted,
    /// disjoint ranges of the file) with a private copy read from `fd` (the mapped file),
    /// so that the bytes read stay the same but reading them never faults in the file's
    /// page cache. Why: on Linux 6.18 a fault on a mapped file maps the whole large folio
    /// that holds the byte (up to 2 MiB once the cache is warm), so touching the header of
    /// every tensor of a model would map megabytes of its weights into the process, and
    /// peak RSS would grow with weight bytes and with the state of the page cache. After
    /// this, the bulk pages are mapped only when their bytes are read, and `release` drops
    /// them again. Costs the size of the non-bulk bytes in anonymous memory.
    /// Errors: `io` when a read fails or the file ended early (the mapping must then not
    /// be trusted: `intact()` is false). Elsewhere than Linux, does nothing.
    [[nodiscard]] result<void> copy_in_except(int fd, std::span<const byte_range> bulk);

private:
    struct impl;
    std::unique_ptr<impl> impl_;
    std::span<const std::byte> bytes_;
    std::vector<byte_range> private_pages_;  // sorted page ranges copied in by copy_in_except
};

/// Releases a mapping's pages behind a walk that moves forward through it (a parse, a pass
/// over the tensors in file order), in windows: on Linux a fault maps the whole large
/// folio that holds a byte, so pages are dropped in runs of several MiB, not one by one.
/// A walk may also move back (a second round, reads in another order than the file's):
/// once what it read since the last release spans a window, that goes, with the whole
/// folios around it, so that reads in any order leave about two windows mapped.
/// A page released is read again when something touches it. Not thread-safe.
class release_behind {
public:
    static constexpr std::uint64_t window = 8ULL << 20;
    /// The largest folio a fault maps (x86-64's PMD size).
    static constexpr std::uint64_t folio = 2ULL << 20;

    explicit release_behind(const mapped_file& mapping) noexcept : mapping_(&mapping) {}

    /// The walk reads [offset, end) now (`end` may be `offset` when not known), and nothing
    /// before `offset` again unless it moves back, as it may.
    void reached(std::uint64_t offset, std::uint64_t end = 0) noexcept {
        if (offset < released_) {
            // Back, within a window of what it read since the last release: those pages
            // stay until the walk has spread over a window (a walk backwards through small
            // tensors makes one call a window, not one a tensor).
            if (std::max(read_end_, end) - offset < window) {
                released_ = offset;
                read_end_ = std::max(read_end_, end);
                return;
            }
            // Further back: what was read since the last release is done with.
            const auto from = released_ / folio * folio;
            const auto to = (std::max(read_end_, released_) / folio + 1) * folio;
            mapping_->release(from, to - from);
            released_ = offset;
            read_end_ = std::max(offset, end);
            return;
        }
        read_end_ = std::max({read_end_, offset, end});
        if (offset - released_ < window) return;
        mapping_->release(released_, offset - released_);
        released_ = offset;
    }
    /// The walk is over, up to `end`.
    void finish(std::uint64_t end) noexcept {
        const auto from = released_ / folio * folio;
        const auto last = std::max(end, read_end_);
        if (last > from) mapping_->release(from, last - from);
        released_ = end;
        read_end_ = end;
    }

private:
    const mapped_file* mapping_;
    std::uint64_t released_ = 0;  // everything before it is released
    std::uint64_t read_end_ = 0;  // the furthest byte read since
};

/// Installs the SIGBUS guard now; idempotent. The guard is process-wide and stays for the
/// life of the process; without this call the first mapping installs it. A front end calls
/// it at start-up, before it starts threads, so that the handler is in place whatever maps
/// first; a front end that wants a SIGBUS handler of its own installs it before this call
/// (the guard chains to it for faults outside guarded mappings), never after.
void install_sigbus_guard() noexcept;

}  // namespace onnxstream::io
