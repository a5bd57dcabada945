#include <onnxstream/onnx/tensor_dims.hpp>

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

namespace onnxstream::onnx {

tensor_dims::const_iterator::const_iterator(const tensor_dims& dims, std::uint64_t left) noexcept : left_(left) {
    if (left == 0) return;
    cursor_ = dims.data_;
    end_ = dims.data_ + (dims.extent_ >> 2);
    const auto how = static_cast<layout>(dims.extent_ & 3U);
    run_end_ = how == layout::packed ? end_ : cursor_;
    values_ = how == layout::values;
    value_ = next();
}

// The bytes were validated when the view was made, so nothing here should fail; if it did
// (a caller broke the contract), the dims read 0 rather than reading past the bytes.
std::int64_t tensor_dims::const_iterator::next() noexcept {
    if (values_) {
        std::int64_t value = 0;
        if (end_ - cursor_ < static_cast<std::ptrdiff_t>(sizeof value)) return 0;
        std::memcpy(&value, cursor_, sizeof value);
        cursor_ += sizeof value;
        return value;
    }
    const auto varint_at = [this](const std::byte* limit) -> std::optional<std::uint64_t> {
        const auto v = proto::decode_varint({cursor_, static_cast<std::size_t>(limit - cursor_)});
        if (!v) {
            cursor_ = run_end_ = end_;
            return std::nullopt;
        }
        cursor_ += v->size;
        return v->value;
    };
    while (cursor_ < end_) {
        if (cursor_ < run_end_) return static_cast<std::int64_t>(varint_at(run_end_).value_or(0));
        const auto tag = varint_at(end_);
        if (!tag) break;
        const bool dim = (*tag >> 3) == number(tensor_field::dims);
        std::uint64_t skip = 0;
        switch (static_cast<proto::wire_type>(*tag & 7U)) {
            case proto::wire_type::varint: {
                const auto value = varint_at(end_);
                if (!value) return 0;
                if (dim) return static_cast<std::int64_t>(*value);
                break;
            }
            case proto::wire_type::length_delimited: {
                const auto length = varint_at(end_);
                if (!length || *length > static_cast<std::uint64_t>(end_ - cursor_)) return 0;
                if (dim) run_end_ = cursor_ + *length;
                else skip = *length;
                break;
            }
            case proto::wire_type::fixed64: skip = 8; break;
            case proto::wire_type::fixed32: skip = 4; break;
            default: return 0;
        }
        if (skip > static_cast<std::uint64_t>(end_ - cursor_)) break;
        cursor_ += skip;
    }
    return 0;
}

std::vector<std::int64_t> tensor_dims::to_vector() const {
    std::vector<std::int64_t> out;
    out.reserve(size_);
    for (const auto d : *this) out.push_back(d);
    return out;
}

namespace {

template <class Other>
bool same_dims(const tensor_dims& a, const Other& b) noexcept {
    if (a.size() != b.size()) return false;
    auto it = b.begin();
    for (const auto d : a) {
        if (d != *it) return false;
        ++it;
    }
    return true;
}

}  // namespace

bool tensor_dims::same_encoding(const tensor_dims& other) const noexcept {
    return size_ == other.size_ && extent_ == other.extent_ &&
           ((extent_ >> 2) == 0 || data_ == other.data_ || std::memcmp(data_, other.data_, extent_ >> 2) == 0);
}

bool operator==(const tensor_dims& a, const tensor_dims& b) noexcept { return a.same_encoding(b) || same_dims(a, b); }
bool operator==(const tensor_dims& a, std::span<const std::int64_t> b) noexcept { return same_dims(a, b); }

bool operator<(const tensor_dims& a, const tensor_dims& b) noexcept {
    return !a.same_encoding(b) && std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

std::string to_string(const tensor_dims& dims) {
    std::string text = "[";
    bool first = true;
    for (const auto d : dims) {
        if (!first) text += ", ";
        first = false;
        text += std::to_string(d);
    }
    return text + "]";
}

}  // namespace onnxstream::onnx
