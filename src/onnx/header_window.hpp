// Field headers read through a small window of the file that moves forward with the walk
// (a read_function: pread), not through the mapping. A model of a million tensors costs
// about size / window reads, one of large tensors a read a header. On a VM that shadows
// page tables, faulting the mapped pages of 122 MB in took 0.07 s where reading them took
// 0.02 s; and once released behind a walk, pages fault in again for the next one.
// find_bulk_payloads scans the whole model so, and message_tree's parse the headers of a
// message of many megabytes (tree_options::read).
#pragma once

#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/proto/tokenizer.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace onnxstream::onnx::detail {

/// 64 KiB of state: made on the heap by a recursive walk.
class header_window {
public:
    header_window(std::uint64_t size, const read_function& read) : size_(size), read_(read) {}

    // The field at `position` of a message ending at `end`, when proto::read_field_fast
    // reads it (most fields: the scan reads them all, so this is the loop to keep short).
    bool fast_field(std::uint64_t position, std::uint64_t end, proto::field_token& token) {
        constexpr std::uint64_t needed = 12;  // what read_field_fast reads of a header at most
        if (end > size_) return false;
        const bool inside = position >= start_ && position < start_ + filled_;
        if (!inside || (position + needed > start_ + filled_ && start_ + filled_ != size_)) {
            if (position >= size_ || !refill(position)) return false;
        }
        const auto at = static_cast<std::size_t>(position - start_);
        return proto::read_field_fast(std::span(buffer_).subspan(at, static_cast<std::size_t>(filled_) - at), position, end,
                                      token);
    }

    // The field at `position` of a message ending at `end`, as proto::read_field reads it
    // (tags and length prefixes of any length). False where read_field fails, or where the
    // file cannot be read: the caller asks read_field for the token or the reason.
    bool field(std::uint64_t position, std::uint64_t end, proto::field_token& token) {
        if (fast_field(position, end, token)) return true;
        const auto tag = varint(position, end);
        if (!tag) return false;
        const auto number = tag->value >> 3;
        if (number == 0 || number > proto::max_field_number) return false;
        auto at = position + tag->size;
        const auto type = static_cast<proto::wire_type>(tag->value & 7U);
        token.value = 0;
        switch (type) {
            case proto::wire_type::varint: {
                const auto value = varint(at, end);
                if (!value) return false;
                token.payload_length = value->size;
                token.value = value->value;
                break;
            }
            case proto::wire_type::fixed64:
            case proto::wire_type::fixed32: {
                const std::uint64_t width = type == proto::wire_type::fixed64 ? 8 : 4;
                if (width > end - at) return false;
                token.payload_length = width;
                break;
            }
            case proto::wire_type::length_delimited: {
                const auto length = varint(at, end);
                if (!length) return false;
                at += length->size;
                if (length->value > end - at) return false;
                token.payload_length = length->value;
                break;
            }
            default: return false;
        }
        token.header_offset = position;
        token.payload_offset = at;
        token.number = static_cast<std::uint32_t>(number);
        token.type = type;
        return true;
    }

    // The varint at `offset`, if it ends within 10 bytes and before `end`.
    std::optional<proto::decoded_varint> varint(std::uint64_t offset, std::uint64_t end) {
        if (offset >= end || end > size_) return std::nullopt;
        // Refill unless the window holds the next 10 bytes, or all that is left of the file.
        const bool inside = offset >= start_ && offset < start_ + filled_;
        const bool enough = offset + proto::max_varint_size <= start_ + filled_ || start_ + filled_ == size_;
        if (!(inside && enough) && !refill(offset)) return std::nullopt;
        const auto available = std::min<std::uint64_t>(start_ + filled_, end) - offset;
        return proto::decode_varint(
            std::span(buffer_).subspan(static_cast<std::size_t>(offset - start_), static_cast<std::size_t>(available)));
    }

private:
    bool refill(std::uint64_t offset) {
        const auto length = std::min<std::uint64_t>(buffer_.size(), size_ - offset);
        if (!read_(offset, std::span(buffer_).first(static_cast<std::size_t>(length)))) return false;
        start_ = offset;
        filled_ = length;
        return true;
    }

    std::uint64_t size_;
    const read_function& read_;
    std::array<std::byte, 64 * 1024> buffer_{};
    std::uint64_t start_ = 0;
    std::uint64_t filled_ = 0;
};

}  // namespace onnxstream::onnx::detail
