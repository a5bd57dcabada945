#include <onnxstream/onnx/tensor_type.hpp>

#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/tokenizer.hpp>

namespace onnxstream::onnx {
namespace {

std::vector<proto::field_token> type_fields_of(std::span<const std::byte> bytes, std::uint64_t begin, std::uint64_t end) {
    std::vector<proto::field_token> out;
    if (!proto::tokenize(bytes, begin, end, out)) out.clear();
    return out;
}

std::vector<proto::field_token> type_fields_of(std::span<const std::byte> bytes, const proto::field_token& holder) {
    return type_fields_of(bytes, holder.payload_offset, holder.end_offset());
}

}  // namespace

tensor_type read_tensor_type(std::span<const std::byte> bytes, std::uint64_t begin, std::uint64_t end) {
    tensor_type v;
    for (const auto& t : type_fields_of(bytes, begin, end)) {
        if (t.number != number(type_field::tensor_type) || t.type != proto::wire_type::length_delimited) continue;
        for (const auto& tt : type_fields_of(bytes, t)) {
            if (tt.number == number(tensor_type_field::elem_type) && tt.type == proto::wire_type::varint)
                v.element_type = data_type_name(static_cast<std::int32_t>(tt.value));
            if (tt.number == number(tensor_type_field::shape) && tt.type == proto::wire_type::length_delimited) {
                v.has_shape = true;
                for (const auto& dim : type_fields_of(bytes, tt)) {
                    if (dim.number != number(shape_field::dim) || dim.type != proto::wire_type::length_delimited) continue;
                    std::string text = "?";
                    for (const auto& d : type_fields_of(bytes, dim)) {
                        if (d.number == number(dimension_field::dim_value) && d.type == proto::wire_type::varint)
                            text = std::to_string(static_cast<std::int64_t>(d.value));
                        if (d.number == number(dimension_field::dim_param) && d.type == proto::wire_type::length_delimited)
                            text.assign(reinterpret_cast<const char*>(bytes.data() + d.payload_offset),
                                        static_cast<std::size_t>(d.payload_length));
                    }
                    v.shape.push_back(std::move(text));
                }
            }
        }
    }
    return v;
}

std::string to_text(const tensor_type& type) {
    if (type.element_type.empty()) return "a non-tensor type";
    if (!type.has_shape) return type.element_type;
    std::string text = type.element_type + "[";
    for (std::size_t i = 0; i < type.shape.size(); ++i) text += (i ? ", " : "") + type.shape[i];
    return text + "]";
}

}  // namespace onnxstream::onnx
