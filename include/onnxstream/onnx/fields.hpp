// ONNX field numbers, checked against onnx/onnx `onnx/onnx.proto`.
//
// Wire format in one paragraph: a message is a sequence of fields, each a tag varint
// `(number << 3) | wire_type` followed by a varint (wire type 0), 8 bytes (1), a length
// varint and that many bytes (2: strings, bytes, sub-messages, packed repeated numbers),
// or 4 bytes (5). Repeated fields simply repeat; order between different fields carries
// no meaning but is preserved by onnxstream. Unknown fields are kept verbatim.
//
// Where ONNX recurses (the messages onnxstream descends into):
//   ModelProto.graph -> GraphProto; .training_info -> TrainingInfoProto (initialization,
//   algorithm: GraphProto); .functions -> FunctionProto (node -> NodeProto).
//   GraphProto.node -> NodeProto.attribute -> AttributeProto, whose g / graphs hold the
//   bodies of If / Loop / Scan (GraphProto again, to any depth) and whose t / tensors /
//   sparse_tensor / sparse_tensors hold tensors (Constant nodes).
//   GraphProto.initializer -> TensorProto; .sparse_initializer -> SparseTensorProto
//   (values, indices: TensorProto). TensorProto.external_data -> StringStringEntryProto.
#pragma once

#include <cstdint>

namespace onnxstream::onnx {

enum class model_field : std::uint32_t {
    ir_version = 1,
    producer_name = 2,
    producer_version = 3,
    domain = 4,
    model_version = 5,
    doc_string = 6,
    graph = 7,
    opset_import = 8,
    metadata_props = 14,
    training_info = 20,
    functions = 25,
};

enum class operator_set_field : std::uint32_t { domain = 1, version = 2 };

enum class string_entry_field : std::uint32_t { key = 1, value = 2 };

enum class graph_field : std::uint32_t {
    node = 1,
    name = 2,
    initializer = 5,
    doc_string = 10,
    input = 11,
    output = 12,
    value_info = 13,
    quantization_annotation = 14,
    sparse_initializer = 15,
    metadata_props = 16,
};

enum class node_field : std::uint32_t {
    input = 1,
    output = 2,
    name = 3,
    op_type = 4,
    attribute = 5,
    doc_string = 6,
    domain = 7,
    overload = 8,
    metadata_props = 9,
};

enum class attribute_field : std::uint32_t {
    name = 1,
    f = 2,
    i = 3,
    s = 4,
    t = 5,
    g = 6,
    floats = 7,
    ints = 8,
    strings = 9,
    tensors = 10,
    graphs = 11,
    doc_string = 13,
    tp = 14,
    type_protos = 15,
    type = 20,
    ref_attr_name = 21,
    sparse_tensor = 22,
    sparse_tensors = 23,
};

enum class tensor_field : std::uint32_t {
    dims = 1,
    data_type = 2,
    segment = 3,
    float_data = 4,
    int32_data = 5,
    string_data = 6,
    int64_data = 7,
    name = 8,
    raw_data = 9,
    double_data = 10,
    uint64_data = 11,
    doc_string = 12,
    external_data = 13,
    data_location = 14,
    metadata_props = 16,
};

/// TensorProto.DataLocation
enum class data_location : std::uint64_t { default_location = 0, external = 1 };

enum class sparse_tensor_field : std::uint32_t { values = 1, indices = 2, dims = 3 };

enum class training_info_field : std::uint32_t {
    initialization = 1,
    algorithm = 2,
    initialization_binding = 3,
    update_binding = 4,
};

enum class function_field : std::uint32_t {
    name = 1,
    input = 4,
    output = 5,
    attribute = 6,
    node = 7,
    doc_string = 8,
    opset_import = 9,
    domain = 10,
    attribute_proto = 11,
    value_info = 12,
    overload = 13,
    metadata_props = 14,
};

enum class value_info_field : std::uint32_t { name = 1, type = 2, doc_string = 3 };

/// TypeProto and the parts of it inspect reads.
enum class type_field : std::uint32_t {
    tensor_type = 1,
    sequence_type = 4,
    map_type = 5,
    optional_type = 9,
    sparse_tensor_type = 8
};
enum class tensor_type_field : std::uint32_t { elem_type = 1, shape = 2 };
enum class shape_field : std::uint32_t { dim = 1 };
enum class dimension_field : std::uint32_t { dim_value = 1, dim_param = 2 };

template <class Field>
[[nodiscard]] constexpr std::uint32_t number(Field field) noexcept {
    return static_cast<std::uint32_t>(field);
}

/// The TensorProto fields that hold or locate a tensor's value: raw_data, the typed value
/// fields, external_data and data_location. A rewrite that stores the value elsewhere
/// drops exactly these and keeps every other field (name, dims, doc_string, unknown ones).
[[nodiscard]] constexpr bool holds_tensor_value(std::uint32_t field_number) noexcept {
    switch (static_cast<tensor_field>(field_number)) {
        case tensor_field::raw_data:
        case tensor_field::float_data:
        case tensor_field::int32_data:
        case tensor_field::int64_data:
        case tensor_field::double_data:
        case tensor_field::uint64_data:
        case tensor_field::external_data:
        case tensor_field::data_location: return true;
        default: return false;
    }
}

}  // namespace onnxstream::onnx
