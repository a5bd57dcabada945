#include <onnxstream/onnx/typed_data.hpp>

#include <onnxstream/onnx/data_type.hpp>

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
    const bool fixed = info->encoding == typed_encoding::fixed32 || info->encoding == typed_encoding::fixed64;
    const std::uint32_t width = info->encoding == typed_encoding::varint32_packed4 ? 1
                               : info->encoding == typed_encoding::fixed32         ? 4
                               : info->encoding == typed_encoding::fixed64         ? 8
                                                                                   : info->bits / 8;
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
                       "the model is damaged; pass {0} to keep it as it is", {{remedy::accept_size_mismatch, {}}});
    return out;
}

}  // namespace onnxstream::onnx
