#include <onnxstream/onnx/typed_data.hpp>

#include <onnxstream/onnx/data_type.hpp>

#include <algorithm>
#include <string>

namespace onnxstream::onnx {
namespace {

void put_little_endian(std::vector<std::byte>& out, std::uint64_t value, std::uint32_t bytes) {
    for (std::uint32_t i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFFU));
}

}  // namespace

result<std::vector<std::byte>> typed_to_raw(const message_tree& tree, const tensor_info& tensor) {
    const auto info = describe(tensor.data_type);
    if (!info || info->encoding == typed_encoding::none)
        return failure(error_code::unsupported,
                       "tensor '" + std::string(tensor.name) + "' of type " + data_type_name(tensor.data_type) +
                           " has no raw form");
    if (!tensor.expected_bytes) return failure(error_code::unsupported, "tensor '" + std::string(tensor.name) + "' has no size");
    const std::uint64_t expected = *tensor.expected_bytes;
    // The typed fields live in the model, which is under 2 GB: the size is bounded.
    std::vector<std::byte> out;
    out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(expected, tree.bytes().size() * 8)));
    const bool fixed = fixed_width(info->encoding);
    const std::uint32_t width = raw_entry_width(*info);
    for (const auto index : tensor.typed_fields) {
        const auto& f = tree.field(index);
        if (f.token.number != number(info->typed_field)) continue;  // another type's field: ignored, as by ONNX
        const auto payload = tree.payload(f);
        if (fixed) {
            // Packed or single, fixed-width values are little-endian on the wire already.
            if (payload.size() % width != 0)
                return failure(error_code::malformed, "tensor '" + std::string(tensor.name) + "' has a partial value");
            out.insert(out.end(), payload.begin(), payload.end());
            continue;
        }
        if (f.token.type == proto::wire_type::varint) {
            put_little_endian(out, f.token.value, width);
            continue;
        }
        auto rest = payload;
        while (!rest.empty()) {
            const auto v = proto::decode_varint(rest);
            if (!v) return failure(error_code::malformed, "tensor '" + std::string(tensor.name) + "' has a value that does not decode");
            put_little_endian(out, v->value, width);
            rest = rest.subspan(v->size);
        }
        if (out.size() > expected) break;
    }
    if (out.size() != expected)
        return failure(error_code::size_mismatch,
                       "tensor '" + std::string(tensor.name) + "' holds " + std::to_string(out.size()) +
                           " bytes of typed values but its dims need " + std::to_string(expected),
                       "the model is damaged; pass --allow-size-mismatch to keep it as it is");
    return out;
}

std::optional<std::uint64_t> typed_raw_size(const message_tree& tree, const tensor_info& tensor) {
    const auto info = describe(tensor.data_type);
    if (!info || info->encoding == typed_encoding::none) return std::nullopt;
    const std::uint64_t width = raw_entry_width(*info);
    std::uint64_t bytes = 0;
    for (const auto index : tensor.typed_fields) {
        const auto& f = tree.field(index);
        if (f.token.number != number(info->typed_field)) continue;  // another type's field: ignored
        const auto payload = tree.payload(f);
        if (fixed_width(info->encoding)) {
            bytes += payload.size();
        } else if (f.token.type == proto::wire_type::varint) {
            bytes += width;
        } else {
            if (!payload.empty() && (std::to_integer<unsigned>(payload.back()) & 0x80U) != 0) return std::nullopt;
            const auto values = static_cast<std::uint64_t>(std::count_if(
                payload.begin(), payload.end(), [](std::byte b) { return (std::to_integer<unsigned>(b) & 0x80U) == 0; }));
            bytes += values * width;
        }
    }
    return bytes;
}

}  // namespace onnxstream::onnx
