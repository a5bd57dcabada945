// ONNX field numbers against the reference: every enumerator of onnx/fields.hpp is checked
// against the field of the same name in python-onnx's descriptors (Debian's onnx 1.12:
// `onnx.ModelProto.DESCRIPTOR.fields_by_name[name].number`). The fields added after 1.12
// (metadata_props on graphs, nodes, tensors and functions; node and function overload;
// FunctionProto.attribute_proto and value_info) are taken from onnx.proto of onnx 1.16 and
// marked. Table generated once with /usr/bin/python3 from the descriptors, not from the header.
#include <onnxstream/onnx/fields.hpp>

#include <doctest/doctest.h>

using namespace onnxstream::onnx;

TEST_CASE("every field number is the one onnx.proto gives the field of that name") {
    // ModelProto
    CHECK(number(model_field::ir_version) == 1);
    CHECK(number(model_field::producer_name) == 2);
    CHECK(number(model_field::producer_version) == 3);
    CHECK(number(model_field::domain) == 4);
    CHECK(number(model_field::model_version) == 5);
    CHECK(number(model_field::doc_string) == 6);
    CHECK(number(model_field::graph) == 7);
    CHECK(number(model_field::opset_import) == 8);
    CHECK(number(model_field::metadata_props) == 14);
    CHECK(number(model_field::training_info) == 20);
    CHECK(number(model_field::functions) == 25);
    // OperatorSetIdProto
    CHECK(number(operator_set_field::domain) == 1);
    CHECK(number(operator_set_field::version) == 2);
    // StringStringEntryProto
    CHECK(number(string_entry_field::key) == 1);
    CHECK(number(string_entry_field::value) == 2);
    // GraphProto
    CHECK(number(graph_field::node) == 1);
    CHECK(number(graph_field::name) == 2);
    CHECK(number(graph_field::initializer) == 5);
    CHECK(number(graph_field::doc_string) == 10);
    CHECK(number(graph_field::input) == 11);
    CHECK(number(graph_field::output) == 12);
    CHECK(number(graph_field::value_info) == 13);
    CHECK(number(graph_field::quantization_annotation) == 14);
    CHECK(number(graph_field::sparse_initializer) == 15);
    CHECK(number(graph_field::metadata_props) == 16);  // onnx 1.16
    // NodeProto
    CHECK(number(node_field::input) == 1);
    CHECK(number(node_field::output) == 2);
    CHECK(number(node_field::name) == 3);
    CHECK(number(node_field::op_type) == 4);
    CHECK(number(node_field::attribute) == 5);
    CHECK(number(node_field::doc_string) == 6);
    CHECK(number(node_field::domain) == 7);
    CHECK(number(node_field::overload) == 8);        // onnx 1.16
    CHECK(number(node_field::metadata_props) == 9);  // onnx 1.16
    // AttributeProto
    CHECK(number(attribute_field::name) == 1);
    CHECK(number(attribute_field::f) == 2);
    CHECK(number(attribute_field::i) == 3);
    CHECK(number(attribute_field::s) == 4);
    CHECK(number(attribute_field::t) == 5);
    CHECK(number(attribute_field::g) == 6);
    CHECK(number(attribute_field::floats) == 7);
    CHECK(number(attribute_field::ints) == 8);
    CHECK(number(attribute_field::strings) == 9);
    CHECK(number(attribute_field::tensors) == 10);
    CHECK(number(attribute_field::graphs) == 11);
    CHECK(number(attribute_field::doc_string) == 13);
    CHECK(number(attribute_field::tp) == 14);
    CHECK(number(attribute_field::type_protos) == 15);
    CHECK(number(attribute_field::type) == 20);
    CHECK(number(attribute_field::ref_attr_name) == 21);
    CHECK(number(attribute_field::sparse_tensor) == 22);
    CHECK(number(attribute_field::sparse_tensors) == 23);
    // TensorProto
    CHECK(number(tensor_field::dims) == 1);
    CHECK(number(tensor_field::data_type) == 2);
    CHECK(number(tensor_field::segment) == 3);
    CHECK(number(tensor_field::float_data) == 4);
    CHECK(number(tensor_field::int32_data) == 5);
    CHECK(number(tensor_field::string_data) == 6);
    CHECK(number(tensor_field::int64_data) == 7);
    CHECK(number(tensor_field::name) == 8);
    CHECK(number(tensor_field::raw_data) == 9);
    CHECK(number(tensor_field::double_data) == 10);
    CHECK(number(tensor_field::uint64_data) == 11);
    CHECK(number(tensor_field::doc_string) == 12);
    CHECK(number(tensor_field::external_data) == 13);
    CHECK(number(tensor_field::data_location) == 14);
    CHECK(number(tensor_field::metadata_props) == 16);  // onnx 1.16
    // SparseTensorProto
    CHECK(number(sparse_tensor_field::values) == 1);
    CHECK(number(sparse_tensor_field::indices) == 2);
    CHECK(number(sparse_tensor_field::dims) == 3);
    // TrainingInfoProto
    CHECK(number(training_info_field::initialization) == 1);
    CHECK(number(training_info_field::algorithm) == 2);
    CHECK(number(training_info_field::initialization_binding) == 3);
    CHECK(number(training_info_field::update_binding) == 4);
    // FunctionProto
    CHECK(number(function_field::name) == 1);
    CHECK(number(function_field::input) == 4);
    CHECK(number(function_field::output) == 5);
    CHECK(number(function_field::attribute) == 6);
    CHECK(number(function_field::node) == 7);
    CHECK(number(function_field::doc_string) == 8);
    CHECK(number(function_field::opset_import) == 9);
    CHECK(number(function_field::domain) == 10);
    CHECK(number(function_field::attribute_proto) == 11);  // onnx 1.16
    CHECK(number(function_field::value_info) == 12);       // onnx 1.16
    CHECK(number(function_field::overload) == 13);         // onnx 1.16
    CHECK(number(function_field::metadata_props) == 14);   // onnx 1.16
    // ValueInfoProto
    CHECK(number(value_info_field::name) == 1);
    CHECK(number(value_info_field::type) == 2);
    CHECK(number(value_info_field::doc_string) == 3);
    // TypeProto
    CHECK(number(type_field::tensor_type) == 1);
    CHECK(number(type_field::sequence_type) == 4);
    CHECK(number(type_field::map_type) == 5);
    CHECK(number(type_field::optional_type) == 9);
    CHECK(number(type_field::sparse_tensor_type) == 8);
    // TypeProto.Tensor
    CHECK(number(tensor_type_field::elem_type) == 1);
    CHECK(number(tensor_type_field::shape) == 2);
    // TensorShapeProto
    CHECK(number(shape_field::dim) == 1);
    // TensorShapeProto.Dimension
    CHECK(number(dimension_field::dim_value) == 1);
    CHECK(number(dimension_field::dim_param) == 2);
}

TEST_CASE("TensorProto.DataLocation values") {
    CHECK(static_cast<std::uint64_t>(data_location::default_location) == 0);
    CHECK(static_cast<std::uint64_t>(data_location::external) == 1);
}

TEST_CASE("holds_tensor_value: the fields that hold or locate a value, and no other") {
    // By number, as the tokenizer meets them (numbers from python-onnx's TensorProto descriptor).
    CHECK(holds_tensor_value(9));   // raw_data
    CHECK(holds_tensor_value(4));   // float_data
    CHECK(holds_tensor_value(5));   // int32_data
    CHECK(holds_tensor_value(7));   // int64_data
    CHECK(holds_tensor_value(10));  // double_data
    CHECK(holds_tensor_value(11));  // uint64_data
    CHECK(holds_tensor_value(13));  // external_data
    CHECK(holds_tensor_value(14));  // data_location
    // Not string_data: onnx.proto forbids raw_data (and so external data) for STRING tensors,
    // so no rewrite stores strings elsewhere and they stay with the tensor.
    CHECK_FALSE(holds_tensor_value(1));   // dims
    CHECK_FALSE(holds_tensor_value(2));   // data_type
    CHECK_FALSE(holds_tensor_value(3));   // segment
    CHECK_FALSE(holds_tensor_value(8));   // name
    CHECK_FALSE(holds_tensor_value(12));  // doc_string
    CHECK_FALSE(holds_tensor_value(6));   // string_data
    CHECK_FALSE(holds_tensor_value(16));  // metadata_props (onnx 1.16)
    CHECK_FALSE(holds_tensor_value(15));  // unknown to ONNX: kept as it is
    CHECK_FALSE(holds_tensor_value(0));
}
