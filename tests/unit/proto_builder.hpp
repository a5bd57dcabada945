// A tiny protobuf encoder for building test inputs by hand (independent of the code under
// test: it writes varints itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace test_support {

class proto_builder {
public:
    proto_builder& varint_field(std::uint32_t number, std::uint64_t value) {
        raw_varint((static_cast<std::uint64_t>(number) << 3) | 0);
        raw_varint(value);
        return *this;
    }
    proto_builder& bytes_field(std::uint32_t number, std::span<const std::byte> payload) {
        raw_varint((static_cast<std::uint64_t>(number) << 3) | 2);
        raw_varint(payload.size());
        bytes_.insert(bytes_.end(), payload.begin(), payload.end());
        return *this;
    }
    proto_builder& string_field(std::uint32_t number, std::string_view text) {
        return bytes_field(number, std::as_bytes(std::span(text.data(), text.size())));
    }
    proto_builder& message_field(std::uint32_t number, const proto_builder& inner) { return bytes_field(number, inner.bytes()); }
    proto_builder& fixed32_field(std::uint32_t number, std::uint32_t value) {
        raw_varint((static_cast<std::uint64_t>(number) << 3) | 5);
        for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
        return *this;
    }
    proto_builder& raw_varint(std::uint64_t value) {
        while (value >= 0x80) {
            bytes_.push_back(static_cast<std::byte>((value & 0x7F) | 0x80));
            value >>= 7;
        }
        bytes_.push_back(static_cast<std::byte>(value));
        return *this;
    }
    proto_builder& raw(std::span<const std::byte> data) {
        bytes_.insert(bytes_.end(), data.begin(), data.end());
        return *this;
    }
    [[nodiscard]] std::span<const std::byte> bytes() const { return bytes_; }
    [[nodiscard]] std::vector<std::byte> take() { return std::move(bytes_); }

private:
    std::vector<std::byte> bytes_;
};

inline std::vector<std::byte> to_bytes(std::string_view text) {
    const auto view = std::as_bytes(std::span(text.data(), text.size()));
    return {view.begin(), view.end()};
}

/// A ModelProto (ir_version 8) whose graph holds the one initializer `tensor`: message 2 of
/// its message tree.
inline std::vector<std::byte> model_with_initializer(const proto_builder& tensor) {
    proto_builder graph;
    graph.message_field(5, tensor);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    return model.take();
}

inline std::vector<std::byte> float_bytes(std::initializer_list<float> values) {
    std::vector<std::byte> out(values.size() * 4);
    std::size_t i = 0;
    for (const float v : values) std::memcpy(out.data() + 4 * i++, &v, 4);
    return out;
}

}  // namespace test_support
