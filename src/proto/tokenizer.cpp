#include <onnxstream/proto/tokenizer.hpp>

#include <string>

namespace onnxstream::proto {
namespace {

failure malformed_at(std::uint64_t offset, std::string what) {
    error e;
    e.code = error_code::malformed;
    e.message = "not a valid protobuf message: " + std::move(what);
    e.hint = "the file is damaged or is not an ONNX model";
    e.offset = offset;
    return failure(std::move(e));
}

}  // namespace

result<field_token> read_field(std::span<const std::byte> buffer, std::uint64_t position, std::uint64_t end) {
    if (position >= end || end > buffer.size()) return malformed_at(position, "field range outside the input");
    field_token token;
    token.header_offset = position;
    const auto tag = decode_varint(buffer.subspan(position, end - position));
    if (!tag) return malformed_at(position, "a field tag does not end");
    position += tag->size;
    const std::uint64_t number = tag->value >> 3;
    const auto type = static_cast<std::uint8_t>(tag->value & 7U);
    if (number == 0 || number > max_field_number)
        return malformed_at(token.header_offset, "field number " + std::to_string(number) + " is out of range");
    token.number = static_cast<std::uint32_t>(number);
    const std::uint64_t left = end - position;
    switch (type) {
        case static_cast<std::uint8_t>(wire_type::varint): {
            const auto value = decode_varint(buffer.subspan(position, left));
            if (!value) return malformed_at(position, "a varint does not end within 10 bytes");
            token.type = wire_type::varint;
            token.payload_offset = position;
            token.payload_length = value->size;
            token.value = value->value;
            break;
        }
        case static_cast<std::uint8_t>(wire_type::fixed64):
        case static_cast<std::uint8_t>(wire_type::fixed32): {
            const std::uint64_t width = type == static_cast<std::uint8_t>(wire_type::fixed64) ? 8 : 4;
            if (left < width) return malformed_at(position, "a fixed-width field runs past the end");
            token.type = static_cast<wire_type>(type);
            token.payload_offset = position;
            token.payload_length = width;
            break;
        }
        case static_cast<std::uint8_t>(wire_type::length_delimited): {
            const auto length = decode_varint(buffer.subspan(position, left));
            if (!length) return malformed_at(position, "a length prefix does not end within 10 bytes");
            position += length->size;
            if (length->value > end - position)
                return malformed_at(token.header_offset, "field " + std::to_string(number) + " claims " +
                                                             std::to_string(length->value) + " bytes but only " +
                                                             std::to_string(end - position) + " are left");
            token.type = wire_type::length_delimited;
            token.payload_offset = position;
            token.payload_length = length->value;
            break;
        }
        default:
            return malformed_at(token.header_offset,
                                "field " + std::to_string(number) + " has wire type " + std::to_string(type) +
                                    (type == 3 || type == 4 ? " (groups are not used by ONNX)" : " (reserved)"));
    }
    return token;
}

result<void> tokenize(std::span<const std::byte> buffer, std::uint64_t begin, std::uint64_t end, std::vector<field_token>& out,
                      const tokenize_options& options) {
    if (begin > end || end > buffer.size()) return malformed_at(begin, "message range outside the input");
    std::uint64_t count = 0;
    for (std::uint64_t position = begin; position < end;) {
        field_token token;
        if (!read_field_fast_in(buffer, position, end, token)) {
            ONNXSTREAM_ASSIGN(token, read_field(buffer, position, end));
        }
        if (++count > options.max_fields) {
            error e{error_code::limit_exceeded, "a message has more than " + std::to_string(options.max_fields) + " fields",
                    "raise the field limit if the model is genuine"};
            e.offset = token.header_offset;
            return failure(std::move(e));
        }
        position = token.end_offset();
        out.push_back(token);
    }
    return {};
}

result<std::uint64_t> count_packed_varints(std::span<const std::byte> payload) {
    std::uint64_t count = 0;
    std::size_t position = 0;
    while (position < payload.size()) {
        const auto value = decode_varint(payload.subspan(position));
        if (!value) return malformed_at(position, "a packed varint does not end");
        position += value->size;
        ++count;
    }
    return count;
}

}  // namespace onnxstream::proto
