#include <onnxstream/onnx/tree_edits.hpp>

#include <algorithm>
#include <cstring>
#include <tuple>

namespace onnxstream::onnx {

std::uint64_t new_field::encoded_size() const noexcept {
    if (kind == payload_kind::varint) return proto::tag_size(number) + proto::varint_size(value);
    return proto::length_delimited_field_size(number, length);
}

void tree_edits::drop(std::uint32_t field_index) {
    if (field_index >= dropped_.size()) dropped_.resize(field_index + 1U, false);
    if (dropped_[field_index]) return;
    dropped_[field_index] = true;
    drop_list_.push_back(field_index);
}

void tree_edits::insert(std::uint32_t message_index, std::uint32_t position, new_field field) {
    const auto order = static_cast<std::uint32_t>(insertions_.size());
    if (!insertions_.empty()) {
        const auto& last = insertions_.back();
        if (std::tie(last.message, last.position) > std::tie(message_index, position)) sorted_ = false;
    }
    insertions_.push_back({message_index, position, order, field});
}

new_field tree_edits::converted_slice(std::uint32_t number, std::uint32_t source, std::uint64_t offset, std::uint64_t length,
                                      float_conversion conversion, std::uint32_t check) const {
    auto f = slice(number, source, offset, length, check);
    f.conversion = conversion;
    return f;
}

new_field tree_edits::varint(std::uint32_t number, std::uint64_t value) const {
    new_field f;
    f.number = number;
    f.kind = new_field::payload_kind::varint;
    f.value = value;
    return f;
}

new_field tree_edits::bytes(std::uint32_t number, std::span<const std::byte> payload) {
    new_field f;
    f.number = number;
    f.kind = new_field::payload_kind::bytes;
    f.offset = pool_.size();
    f.length = payload.size();
    pool_.insert(pool_.end(), payload.begin(), payload.end());
    return f;
}

new_field tree_edits::text(std::uint32_t number, std::string_view payload) {
    return bytes(number, std::as_bytes(std::span(payload.data(), payload.size())));
}

new_field tree_edits::slice(std::uint32_t number, std::uint32_t source, std::uint64_t offset, std::uint64_t length,
                            std::uint32_t check) const {
    new_field f;
    f.number = number;
    f.kind = new_field::payload_kind::slice;
    f.source = source;
    f.offset = offset;
    f.length = length;
    f.check = check;
    return f;
}

std::uint32_t tree_edits::add_label(std::string name) {
    labels_.push_back(std::move(name));
    return static_cast<std::uint32_t>(labels_.size() - 1);
}

std::uint32_t tree_edits::add_check(io::stream_check value) {
    checks_.push_back(std::move(value));
    return static_cast<std::uint32_t>(checks_.size() - 1);
}

std::span<const tree_edits::insertion> tree_edits::insertions() const {
    if (!sorted_) {
        std::sort(insertions_.begin(), insertions_.end(), [](const insertion& a, const insertion& b) {
            return std::tie(a.message, a.position, a.order) < std::tie(b.message, b.position, b.order);
        });
        sorted_ = true;
    }
    return insertions_;
}

}  // namespace onnxstream::onnx
