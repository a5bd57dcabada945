#include "value_type_edit.hpp"

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/encoded_message.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <string_view>

namespace onnxstream::ops::detail {

namespace {

using onnx::number;
using proto::field_token;
using proto::wire_type;

result<std::vector<field_token>> fields_of(std::span<const std::byte> bytes) {
    std::vector<field_token> fields;
    ONNXSTREAM_TRY(proto::tokenize(bytes, 0, bytes.size(), fields));
    return fields;
}

std::span<const std::byte> payload(std::span<const std::byte> bytes, const field_token& f) {
    return bytes.subspan(f.payload_offset, f.payload_length);
}

bool is(const field_token& f, std::uint32_t field_number, wire_type type) { return f.number == field_number && f.type == type; }

void copy_field(proto::encoded_message& out, std::span<const std::byte> bytes, const field_token& f) {
    out.append_bytes(bytes.subspan(f.header_offset, f.total_length()));
}

std::vector<std::byte> pool_of(const proto::encoded_message& m) { return {m.pool().begin(), m.pool().end()}; }

// A Dimension: the original's fields other than its value (denotation, unknown ones) kept.
std::vector<std::byte> encode_dimension(std::span<const std::byte> original, const dimension& d) {
    proto::encoded_message out;
    if (d.what == dimension::kind::value)
        out.varint_field(number(onnx::dimension_field::dim_value), static_cast<std::uint64_t>(d.value));
    else if (d.what == dimension::kind::symbol) out.text_field(number(onnx::dimension_field::dim_param), d.symbol);
    if (auto fields = fields_of(original)) {
        for (const auto& f : *fields)
            if (f.number != number(onnx::dimension_field::dim_value) && f.number != number(onnx::dimension_field::dim_param))
                copy_field(out, original, f);
    }
    return pool_of(out);
}

std::vector<std::byte> encode_shape(std::span<const std::byte> original, const std::vector<dimension>& dims) {
    std::vector<std::span<const std::byte>> original_dims;
    proto::encoded_message others;
    if (auto fields = fields_of(original)) {
        for (const auto& f : *fields) {
            if (is(f, number(onnx::shape_field::dim), wire_type::length_delimited)) original_dims.push_back(payload(original, f));
            else copy_field(others, original, f);
        }
    }
    proto::encoded_message out;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        const auto dim = encode_dimension(i < original_dims.size() ? original_dims[i] : std::span<const std::byte>{}, dims[i]);
        out.bytes_field(number(onnx::shape_field::dim), dim);
    }
    out.append_bytes(others.pool());
    return pool_of(out);
}

std::vector<std::byte> encode_tensor_type(std::span<const std::byte> original, const decoded_type& type) {
    proto::encoded_message out;
    bool wrote_elem = false;
    bool wrote_shape = false;
    const auto shape = [&](std::span<const std::byte> from) {
        wrote_shape = true;
        if (type.has_shape) out.bytes_field(number(onnx::tensor_type_field::shape), encode_shape(from, type.dims));
    };
    if (auto fields = fields_of(original)) {
        for (const auto& f : *fields) {
            if (f.number == number(onnx::tensor_type_field::elem_type)) {
                out.varint_field(f.number, static_cast<std::uint64_t>(type.elem_type));
                wrote_elem = true;
            } else if (is(f, number(onnx::tensor_type_field::shape), wire_type::length_delimited)) {
                if (!wrote_shape) shape(payload(original, f));
            } else {
                copy_field(out, original, f);
            }
        }
    }
    proto::encoded_message whole;
    if (!wrote_elem && type.elem_type != 0)
        whole.varint_field(number(onnx::tensor_type_field::elem_type), static_cast<std::uint64_t>(type.elem_type));
    whole.append_bytes(out.pool());
    if (!wrote_shape && type.has_shape) whole.bytes_field(number(onnx::tensor_type_field::shape), encode_shape({}, type.dims));
    return pool_of(whole);
}

}  // namespace

result<decoded_type> decode_type(std::span<const std::byte> bytes) {
    decoded_type type;
    ONNXSTREAM_ASSIGN(const auto fields, fields_of(bytes));
    for (const auto& f : fields) {
        if (!is(f, number(onnx::type_field::tensor_type), wire_type::length_delimited)) continue;
        type.is_tensor = true;
        const auto tensor_bytes = payload(bytes, f);
        ONNXSTREAM_ASSIGN(const auto tensor_fields, fields_of(tensor_bytes));
        for (const auto& t : tensor_fields) {
            if (is(t, number(onnx::tensor_type_field::elem_type), wire_type::varint))
                type.elem_type = static_cast<std::int32_t>(t.value);
            if (!is(t, number(onnx::tensor_type_field::shape), wire_type::length_delimited)) continue;
            type.has_shape = true;
            type.dims.clear();
            const auto shape_bytes = payload(tensor_bytes, t);
            ONNXSTREAM_ASSIGN(const auto dims, fields_of(shape_bytes));
            for (const auto& d : dims) {
                if (!is(d, number(onnx::shape_field::dim), wire_type::length_delimited)) continue;
                const auto dim_bytes = payload(shape_bytes, d);
                ONNXSTREAM_ASSIGN(const auto parts, fields_of(dim_bytes));
                dimension dim;
                for (const auto& p : parts) {
                    if (is(p, number(onnx::dimension_field::dim_value), wire_type::varint)) {
                        dim.what = dimension::kind::value;
                        dim.value = static_cast<std::int64_t>(p.value);
                    } else if (is(p, number(onnx::dimension_field::dim_param), wire_type::length_delimited)) {
                        const auto text = payload(dim_bytes, p);
                        dim.what = dimension::kind::symbol;
                        dim.symbol.assign(reinterpret_cast<const char*>(text.data()), text.size());
                    }
                }
                type.dims.push_back(std::move(dim));
            }
        }
    }
    return type;
}

std::vector<std::byte> encode_type(std::span<const std::byte> original, const decoded_type& type) {
    proto::encoded_message out;
    bool wrote = false;
    if (auto fields = fields_of(original)) {
        for (const auto& f : *fields) {
            if (is(f, number(onnx::type_field::tensor_type), wire_type::length_delimited) && !wrote) {
                out.bytes_field(f.number, encode_tensor_type(payload(original, f), type));
                wrote = true;
            } else {
                copy_field(out, original, f);
            }
        }
    }
    if (!wrote) out.bytes_field(number(onnx::type_field::tensor_type), encode_tensor_type({}, type));
    return pool_of(out);
}

std::string dims_text(const decoded_type& type) {
    if (!type.has_shape) return "(no shape)";
    std::string out = "[";
    for (std::size_t i = 0; i < type.dims.size(); ++i) {
        if (i > 0) out += ", ";
        const auto& d = type.dims[i];
        out += d.what == dimension::kind::value ? std::to_string(d.value) : d.what == dimension::kind::symbol ? d.symbol : "?";
    }
    return out + "]";
}

}  // namespace onnxstream::ops::detail
