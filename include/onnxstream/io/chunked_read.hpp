// Reading a byte range of a file in pieces through one fixed buffer: the loop behind every
// reader that streams a range it must not hold whole (hashing a checksummed tensor,
// comparing two files, copying a slice into a spill file, reading a large external
// tensor for a pass); and many small ranges read in order through one window read ahead
// (read_ahead_window). Short reads and EINTR are handled by source_file::read_at.
#pragma once

#include <onnxstream/io/source_file.hpp>
#include <onnxstream/result.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace onnxstream::io {

/// The piece size readers use when they have no reason to pick another.
inline constexpr std::size_t read_chunk_size = std::size_t{1} << 20;

/// Reads [offset, offset + length) of `file` in order, through `buffer` (pieces of at most
/// its size), and calls `visit(piece)` with each piece (a view into `buffer`, valid until
/// the next call). `visit` returns void; or bool, false to stop early (the call then
/// succeeds); or result<void> / result<bool>, whose failure stops the loop and is returned.
/// Errors: what read_at reports (`truncated_data` past the end of the file, I/O errors).
template <class Visit>
[[nodiscard]] result<void> for_each_chunk(const source_file& file, std::uint64_t offset, std::uint64_t length, Visit&& visit,
                                          std::span<std::byte> buffer) {
    using returned = std::invoke_result_t<Visit&, std::span<const std::byte>>;
    if (length > 0 && buffer.empty()) return failure(error_code::invalid_argument, "a chunked read needs a buffer");
    for (std::uint64_t done = 0; done < length;) {
        const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(length - done, buffer.size()));
        const auto piece = buffer.first(size);
        ONNXSTREAM_TRY(file.read_at(offset + done, piece));
        const std::span<const std::byte> view(piece);
        if constexpr (std::is_void_v<returned>) {
            visit(view);
        } else if constexpr (std::is_same_v<returned, bool>) {
            if (!visit(view)) return {};
        } else if constexpr (std::is_same_v<returned, result<void>>) {
            ONNXSTREAM_TRY(visit(view));
        } else {
            static_assert(std::is_same_v<returned, result<bool>>, "visit returns void, bool, result<void> or result<bool>");
            ONNXSTREAM_ASSIGN(const bool more, visit(view));
            if (!more) return {};
        }
        done += size;
    }
    return {};
}

/// The same through a buffer of min(length, `chunk`) bytes made for the call.
template <class Visit>
[[nodiscard]] result<void> for_each_chunk(const source_file& file, std::uint64_t offset, std::uint64_t length, Visit&& visit,
                                          std::size_t chunk = read_chunk_size) {
    std::vector<std::byte> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(length, std::max<std::size_t>(chunk, 1))));
    return for_each_chunk(file, offset, length, std::forward<Visit>(visit), std::span<std::byte>(buffer));
}

/// Many small reads in order, served from one window read ahead: a model of a million
/// 16-byte external tensors made a million 16-byte reads (a system call each), nearly all
/// of merge's system time and a fifth of convert's. A window holds what read_at would have
/// read; it is refilled when a read falls outside it (another source, or past its end).
class read_ahead_window {
public:
    static constexpr std::size_t window_bytes = 256 * 1024;

    /// The `length` bytes at `offset` of `source` (whose caller-chosen number is `id`),
    /// `length` <= window_bytes; valid until the next call. Errors: read_at's.
    [[nodiscard]] result<std::span<const std::byte>> read(const source_file& source, std::uint32_t id, std::uint64_t offset,
                                                          std::size_t length) {
        if (id != source_ || offset < start_ || offset - start_ > filled_ || length > filled_ - (offset - start_)) {
            buffer_.resize(window_bytes);
            source_ = none_source;  // until the read succeeds
            ONNXSTREAM_ASSIGN(filled_, source.read_ahead(offset, buffer_, length));
            source_ = id;
            start_ = offset;
        }
        return std::span<const std::byte>(buffer_).subspan(static_cast<std::size_t>(offset - start_), length);
    }

private:
    static constexpr std::uint32_t none_source = ~std::uint32_t{0};
    std::vector<std::byte> buffer_;
    std::uint32_t source_ = none_source;
    std::uint64_t start_ = 0;
    std::size_t filled_ = 0;
};

}  // namespace onnxstream::io
