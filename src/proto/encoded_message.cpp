#include <onnxstream/proto/encoded_message.hpp>

#include <onnxstream/proto/varint.hpp>

namespace onnxstream::proto {

void encoded_message::append_bytes(std::span<const std::byte> bytes) {
    if (bytes.empty()) return;
    if (!pieces_.empty() && pieces_.back().source == pool_source &&
        pieces_.back().offset + pieces_.back().length == pool_.size()) {
        pieces_.back().length += bytes.size();
    } else {
        pieces_.push_back({pool_source, pool_.size(), bytes.size()});
    }
    pool_.insert(pool_.end(), bytes.begin(), bytes.end());
    size_ += bytes.size();
}

void encoded_message::append_slice(std::uint32_t source, std::uint64_t offset, std::uint64_t length) {
    if (length == 0) return;
    pieces_.push_back({source, offset, length});
    size_ += length;
    ++slices_;
}

void encoded_message::put_varint(std::uint64_t value) { append_bytes(proto::encode_varint(value).view()); }

void encoded_message::varint_field(std::uint32_t number, std::uint64_t value) {
    put_varint(proto::make_tag(number, proto::wire_type::varint));
    put_varint(value);
}

void encoded_message::bytes_field(std::uint32_t number, std::span<const std::byte> payload) {
    put_varint(proto::make_tag(number, proto::wire_type::length_delimited));
    put_varint(payload.size());
    append_bytes(payload);
}

void encoded_message::text_field(std::uint32_t number, std::string_view text) {
    bytes_field(number, std::as_bytes(std::span(text.data(), text.size())));
}

void encoded_message::slice_field(std::uint32_t number, std::uint32_t source, std::uint64_t offset, std::uint64_t length) {
    put_varint(proto::make_tag(number, proto::wire_type::length_delimited));
    put_varint(length);
    append_slice(source, offset, length);
}

void encoded_message::message_field(std::uint32_t number, const encoded_message& child) {
    put_varint(proto::make_tag(number, proto::wire_type::length_delimited));
    put_varint(child.size());
    for (const auto& p : child.pieces_) {
        if (p.source == pool_source) append_bytes(std::span(child.pool_).subspan(p.offset, p.length));
        else append_slice(p.source, p.offset, p.length);
    }
}

result<std::uint64_t> append_to_spill(const encoded_message& message, io::spill_file& spill,
                                      std::span<const io::source_file* const> sources) {
    const auto offset = spill.size();
    for (const auto& p : message.pieces()) {
        if (p.source == encoded_message::pool_source) {
            ONNXSTREAM_TRY(spill.append(message.pool().subspan(p.offset, p.length)));
            continue;
        }
        if (p.source >= sources.size() || sources[p.source] == nullptr)
            return failure(error_code::invalid_argument, "an encoded message refers to an unknown source");
        ONNXSTREAM_TRY(spill.append_range(*sources[p.source], p.offset, p.length));
    }
    return offset;
}

}  // namespace onnxstream::proto
