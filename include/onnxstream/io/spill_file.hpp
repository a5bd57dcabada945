// A scratch file for bytes that must not pile up in memory: computed tensors (folded
// weights, converted blobs) and encoded messages holding large slices. It has no name
// (O_TMPFILE, or a name unlinked at once), so it disappears with the process whatever
// happens. Bytes are appended; once everything is in, `open_source` gives a source_file
// the writer copies from like any input.
#pragma once

#include <onnxstream/io/source_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <span>

namespace onnxstream::io {

class spill_file {
public:
    spill_file() = default;
    spill_file(spill_file&&) noexcept;
    spill_file& operator=(spill_file&&) noexcept;
    spill_file(const spill_file&) = delete;
    spill_file& operator=(const spill_file&) = delete;
    ~spill_file();

    /// A spill file in `folder` (the output's folder: same file system, same free space).
    [[nodiscard]] static result<spill_file> create(const std::filesystem::path& folder);

    /// Appends bytes; returns the offset they start at.
    [[nodiscard]] result<std::uint64_t> append(std::span<const std::byte> bytes);
    /// Appends bytes [offset, offset + length) of `source`, copied in bounded pieces;
    /// returns the offset they start at.
    [[nodiscard]] result<std::uint64_t> append_range(const source_file& source, std::uint64_t offset, std::uint64_t length);

    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    /// The file opened for reading, for the writer's source table.
    [[nodiscard]] result<source_file> open_source() const;

private:
    [[nodiscard]] result<void> write_all(std::span<const std::byte> bytes);

    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::filesystem::path folder_;
};

}  // namespace onnxstream::io
