// Protobuf base-128 varints and field tags.
//
// A varint stores 7 bits per byte, least significant group first; the top bit of a byte
// says another byte follows. A 64-bit value takes 1 to 10 bytes. A tag is the varint
// `(field_number << 3) | wire_type`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace onnxstream::proto {

enum class wire_type : std::uint8_t {
    varint = 0,
    fixed64 = 1,
    length_delimited = 2,
    start_group = 3,  // deprecated; ONNX never uses groups
    end_group = 4,
    fixed32 = 5,
};

inline constexpr std::size_t max_varint_size = 10;
inline constexpr std::uint32_t max_field_number = (1U << 29) - 1;

/// Number of bytes the varint encoding of `value` takes (1..10).
[[nodiscard]] constexpr std::size_t varint_size(std::uint64_t value) noexcept {
    std::size_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        ++size;
    }
    return size;
}

/// A fixed-capacity buffer holding one encoded varint or tag.
struct encoded_varint {
    std::array<std::byte, max_varint_size> bytes{};
    std::size_t size = 0;
    [[nodiscard]] std::span<const std::byte> view() const noexcept { return {bytes.data(), size}; }
};

[[nodiscard]] constexpr encoded_varint encode_varint(std::uint64_t value) noexcept {
    encoded_varint out;
    while (value >= 0x80) {
        out.bytes[out.size++] = static_cast<std::byte>((value & 0x7F) | 0x80);
        value >>= 7;
    }
    out.bytes[out.size++] = static_cast<std::byte>(value);
    return out;
}

[[nodiscard]] constexpr std::uint64_t make_tag(std::uint32_t field_number, wire_type type) noexcept {
    return (static_cast<std::uint64_t>(field_number) << 3) | static_cast<std::uint64_t>(type);
}

[[nodiscard]] constexpr std::size_t tag_size(std::uint32_t field_number) noexcept {
    return varint_size(make_tag(field_number, wire_type::varint));
}

/// Size of a whole length-delimited field (tag, length prefix and payload).
[[nodiscard]] constexpr std::uint64_t length_delimited_field_size(std::uint32_t field_number, std::uint64_t payload) noexcept {
    return tag_size(field_number) + varint_size(payload) + payload;
}

struct decoded_varint {
    std::uint64_t value = 0;
    std::size_t size = 0;  // bytes consumed
};

/// Decodes the varint at the start of `bytes`. Empty when the bytes end inside the varint
/// or when it runs past 10 bytes or past 64 bits.
[[nodiscard]] constexpr std::optional<decoded_varint> decode_varint(std::span<const std::byte> bytes) noexcept {
    std::uint64_t value = 0;
    const std::size_t limit = bytes.size() < max_varint_size ? bytes.size() : max_varint_size;
    for (std::size_t i = 0; i < limit; ++i) {
        const auto byte = static_cast<std::uint8_t>(bytes[i]);
        const std::uint64_t group = byte & 0x7FU;
        // The tenth byte may only carry the one bit left of 64.
        if (i == max_varint_size - 1 && group > 1) return std::nullopt;
        value |= group << (7 * i);
        if ((byte & 0x80U) == 0) return decoded_varint{value, i + 1};
    }
    return std::nullopt;
}

}  // namespace onnxstream::proto
