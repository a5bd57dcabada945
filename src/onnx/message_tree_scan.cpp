#include <onnxstream/onnx/message_tree.hpp>

#include "schema_rows.hpp"

#include <onnxstream/proto/tokenizer.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <array>

namespace onnxstream::onnx {
namespace {

// Field headers are read through a small window that moves forward with the walk, so a
// model of a million tensors costs about size / window reads, and one of large tensors
// one read per header.
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

struct scanner {
    header_window window;
    const bulk_scan_options& options;
    std::vector<io::byte_range> found;
    const detail::schema_rows& schema = detail::schema_rows::get();

    // False when the bytes are not a well-formed message: the scan then stops, and the
    // tree's own parse says what is wrong.
    bool scan(message_kind kind, std::uint64_t begin, std::uint64_t end, std::uint32_t depth) {
        if (depth > options.max_depth) return false;
        for (std::uint64_t position = begin; position < end;) {
            proto::field_token token;
            if (window.fast_field(position, end, token)) {
                if (token.type == proto::wire_type::length_delimited &&
                    !payload(kind, token.number, token.payload_offset, token.payload_length, depth))
                    return false;
                position = token.end_offset();
                continue;
            }
            const auto tag = window.varint(position, end);
            if (!tag) return false;
            position += tag->size;
            const auto number = tag->value >> 3;
            switch (static_cast<proto::wire_type>(tag->value & 7U)) {
                case proto::wire_type::varint: {
                    const auto value = window.varint(position, end);
                    if (!value) return false;
                    position += value->size;
                    break;
                }
                case proto::wire_type::fixed64: position += 8; break;
                case proto::wire_type::fixed32: position += 4; break;
                case proto::wire_type::length_delimited: {
                    const auto length = window.varint(position, end);
                    if (!length) return false;
                    position += length->size;
                    if (length->value > end - position) return false;
                    if (!payload(kind, number, position, length->value, depth)) return false;
                    position += length->value;
                    break;
                }
                default: return false;
            }
            if (position > end) return false;
        }
        return true;
    }

    // A length-delimited field's payload: a message to scan, or a bulk payload, or neither.
    // Inlined in the loop: it runs for most fields.
    [[gnu::always_inline]] bool payload(message_kind kind, std::uint64_t number, std::uint64_t offset, std::uint64_t length,
                                        std::uint32_t depth) {
        const auto* child = number < detail::schema_rows::numbers ? schema.child(kind, static_cast<std::uint32_t>(number))
                                                                  : nullptr;
        // A message shorter than min_length holds no payload that long: the scan does not
        // descend into it (a graph of a million small nodes costs the node headers alone).
        if (length < options.min_length) return true;
        if (child != nullptr) return scan(child->child, offset, offset + length, depth + 1);
        found.push_back({offset, length});
        return true;
    }
};

}  // namespace

std::vector<io::byte_range> find_bulk_payloads(std::uint64_t size, const read_function& read, const bulk_scan_options& options) {
    scanner s{header_window(size, read), options, {}, detail::schema_rows::get()};
    if (!s.scan(message_kind::model, 0, size, 0)) return {};
    if (s.found.size() > options.max_ranges) {
        // Keep the largest (they save the most), then put them back in file order.
        std::nth_element(s.found.begin(), s.found.begin() + static_cast<std::ptrdiff_t>(options.max_ranges), s.found.end(),
                         [](const io::byte_range& a, const io::byte_range& b) { return a.length > b.length; });
        s.found.resize(options.max_ranges);
        std::sort(s.found.begin(), s.found.end(),
                  [](const io::byte_range& a, const io::byte_range& b) { return a.offset < b.offset; });
    }
    return std::move(s.found);
}

}  // namespace onnxstream::onnx
