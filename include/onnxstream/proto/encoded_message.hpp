// A protobuf message being encoded from pieces: bytes built in memory (tags, lengths,
// names, small fields copied from the model) and slices of source files (large payloads:
// raw_data, whole untouched sub-messages) that are never read into memory. Children are
// encoded first, so every length prefix is known when the parent writes it.
//
// A message with no slices is plain bytes; one with slices is streamed into a spill file
// (see spill_file.hpp) and referenced from there.
#pragma once

#include <onnxstream/io/source_file.hpp>
#include <onnxstream/io/spill_file.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

namespace onnxstream::proto {

class encoded_message {
public:
    static constexpr std::uint32_t pool_source = std::numeric_limits<std::uint32_t>::max();

    struct piece {
        std::uint32_t source = pool_source;  // pool_source: `offset` is in pool()
        std::uint64_t offset = 0;
        std::uint64_t length = 0;
    };

    void append_bytes(std::span<const std::byte> bytes);
    void append_slice(std::uint32_t source, std::uint64_t offset, std::uint64_t length);
    void varint_field(std::uint32_t number, std::uint64_t value);
    void bytes_field(std::uint32_t number, std::span<const std::byte> payload);
    void text_field(std::uint32_t number, std::string_view text);
    void slice_field(std::uint32_t number, std::uint32_t source, std::uint64_t offset, std::uint64_t length);
    void message_field(std::uint32_t number, const encoded_message& child);

    /// Empties it for the next message, keeping its memory (one message reused for a
    /// million small ones allocates once).
    void clear() noexcept {
        pool_.clear();
        pieces_.clear();
        size_ = 0;
        slices_ = 0;
    }

    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool has_slices() const noexcept { return slices_ > 0; }
    [[nodiscard]] std::span<const std::byte> pool() const noexcept { return pool_; }
    [[nodiscard]] std::span<const piece> pieces() const noexcept { return pieces_; }

private:
    void put_varint(std::uint64_t value);

    std::vector<std::byte> pool_;
    std::vector<piece> pieces_;
    std::uint64_t size_ = 0;
    std::uint64_t slices_ = 0;
};

/// Appends `message` to `spill`, its slices copied from `sources` (indexed by a piece's
/// `source`) in bounded pieces; returns the offset it starts at. Errors: I/O errors, and
/// `invalid_argument` for a slice of a source not in `sources`.
[[nodiscard]] result<std::uint64_t> append_to_spill(const encoded_message& message, io::spill_file& spill,
                                                    std::span<const io::source_file* const> sources);

}  // namespace onnxstream::proto
