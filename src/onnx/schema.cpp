#include <onnxstream/onnx/schema.hpp>

#include <array>
#include <cstddef>
#include <limits>

namespace onnxstream::onnx {
namespace {

using k = message_kind;
using h = field_holds;
constexpr bool once = false;
constexpr bool repeated = true;

constexpr field_schema value(k owner, auto field, const char* name, bool shape) {
    return {owner, number(field), name, shape, h::value, k::model};
}
constexpr field_schema opaque(k owner, auto field, const char* name, bool shape) {
    return {owner, number(field), name, shape, h::message, k::model};
}
constexpr field_schema child(k owner, auto field, const char* name, bool shape, k holds) {
    return {owner, number(field), name, shape, h::child, holds};
}

using model = model_field;
using graph = graph_field;
using node = node_field;
using attribute = attribute_field;
using tensor = tensor_field;
using sparse = sparse_tensor_field;
using training = training_info_field;
using function = function_field;

constexpr std::array table{
    value(k::model, model::ir_version, "ir_version", once),
    value(k::model, model::producer_name, "producer_name", once),
    value(k::model, model::producer_version, "producer_version", once),
    value(k::model, model::domain, "domain", once),
    value(k::model, model::model_version, "model_version", once),
    value(k::model, model::doc_string, "doc_string", once),
    child(k::model, model::graph, "graph", once, k::graph),
    child(k::model, model::opset_import, "opset_import", repeated, k::operator_set),
    child(k::model, model::metadata_props, "metadata_props", repeated, k::string_entry),
    child(k::model, model::training_info, "training_info", repeated, k::training_info),
    child(k::model, model::functions, "functions", repeated, k::function),

    child(k::graph, graph::node, "node", repeated, k::node),
    value(k::graph, graph::name, "name", once),
    child(k::graph, graph::initializer, "initializer", repeated, k::tensor),
    value(k::graph, graph::doc_string, "doc_string", once),
    child(k::graph, graph::input, "input", repeated, k::value_info),
    child(k::graph, graph::output, "output", repeated, k::value_info),
    child(k::graph, graph::value_info, "value_info", repeated, k::value_info),
    opaque(k::graph, graph::quantization_annotation, "quantization_annotation", repeated),
    child(k::graph, graph::sparse_initializer, "sparse_initializer", repeated, k::sparse_tensor),
    opaque(k::graph, graph::metadata_props, "metadata_props", repeated),

    value(k::node, node::input, "input", repeated),
    value(k::node, node::output, "output", repeated),
    value(k::node, node::name, "name", once),
    value(k::node, node::op_type, "op_type", once),
    child(k::node, node::attribute, "attribute", repeated, k::attribute),
    value(k::node, node::doc_string, "doc_string", once),
    value(k::node, node::domain, "domain", once),
    value(k::node, node::overload, "overload", once),
    opaque(k::node, node::metadata_props, "metadata_props", repeated),

    value(k::attribute, attribute::name, "name", once),
    value(k::attribute, attribute::f, "f", once),
    value(k::attribute, attribute::i, "i", once),
    value(k::attribute, attribute::s, "s", once),
    child(k::attribute, attribute::t, "t", once, k::tensor),
    child(k::attribute, attribute::g, "g", once, k::graph),
    value(k::attribute, attribute::floats, "floats", repeated),
    value(k::attribute, attribute::ints, "ints", repeated),
    value(k::attribute, attribute::strings, "strings", repeated),
    child(k::attribute, attribute::tensors, "tensors", repeated, k::tensor),
    child(k::attribute, attribute::graphs, "graphs", repeated, k::graph),
    value(k::attribute, attribute::doc_string, "doc_string", once),
    opaque(k::attribute, attribute::tp, "tp", once),
    opaque(k::attribute, attribute::type_protos, "type_protos", repeated),
    value(k::attribute, attribute::type, "type", once),
    value(k::attribute, attribute::ref_attr_name, "ref_attr_name", once),
    child(k::attribute, attribute::sparse_tensor, "sparse_tensor", once, k::sparse_tensor),
    child(k::attribute, attribute::sparse_tensors, "sparse_tensors", repeated, k::sparse_tensor),

    value(k::tensor, tensor::dims, "dims", repeated),
    value(k::tensor, tensor::data_type, "data_type", once),
    opaque(k::tensor, tensor::segment, "segment", once),
    value(k::tensor, tensor::float_data, "float_data", repeated),
    value(k::tensor, tensor::int32_data, "int32_data", repeated),
    value(k::tensor, tensor::string_data, "string_data", repeated),
    value(k::tensor, tensor::int64_data, "int64_data", repeated),
    value(k::tensor, tensor::name, "name", once),
    value(k::tensor, tensor::raw_data, "raw_data", once),
    value(k::tensor, tensor::double_data, "double_data", repeated),
    value(k::tensor, tensor::uint64_data, "uint64_data", repeated),
    value(k::tensor, tensor::doc_string, "doc_string", once),
    child(k::tensor, tensor::external_data, "external_data", repeated, k::string_entry),
    value(k::tensor, tensor::data_location, "data_location", once),
    opaque(k::tensor, tensor::metadata_props, "metadata_props", repeated),

    child(k::sparse_tensor, sparse::values, "values", once, k::tensor),
    child(k::sparse_tensor, sparse::indices, "indices", once, k::tensor),
    value(k::sparse_tensor, sparse::dims, "dims", repeated),

    child(k::training_info, training::initialization, "initialization", once, k::graph),
    child(k::training_info, training::algorithm, "algorithm", once, k::graph),
    opaque(k::training_info, training::initialization_binding, "initialization_binding", repeated),
    opaque(k::training_info, training::update_binding, "update_binding", repeated),

    value(k::function, function::name, "name", once),
    value(k::function, function::input, "input", repeated),
    value(k::function, function::output, "output", repeated),
    value(k::function, function::attribute, "attribute", repeated),
    child(k::function, function::node, "node", repeated, k::node),
    value(k::function, function::doc_string, "doc_string", once),
    child(k::function, function::opset_import, "opset_import", repeated, k::operator_set),
    value(k::function, function::domain, "domain", once),
    child(k::function, function::attribute_proto, "attribute_proto", repeated, k::attribute),
    opaque(k::function, function::value_info, "value_info", repeated),
    value(k::function, function::overload, "overload", once),
    opaque(k::function, function::metadata_props, "metadata_props", repeated),

    value(k::string_entry, string_entry_field::key, "key", once),
    value(k::string_entry, string_entry_field::value, "value", once),
    value(k::operator_set, operator_set_field::domain, "domain", once),
    value(k::operator_set, operator_set_field::version, "version", once),
    value(k::value_info, value_info_field::name, "name", once),
    opaque(k::value_info, value_info_field::type, "type", once),
    value(k::value_info, value_info_field::doc_string, "doc_string", once),
};

// Row of each (owner, number), for constant-time lookups; `none` where there is no field.
constexpr std::size_t kinds = static_cast<std::size_t>(k::value_info) + 1;
constexpr std::uint32_t numbers = 32;  // every known field number is below this
constexpr std::uint8_t none = std::numeric_limits<std::uint8_t>::max();
static_assert(table.size() < none);

constexpr auto make_index() {
    std::array<std::array<std::uint8_t, numbers>, kinds> index{};
    for (auto& row : index) row.fill(none);
    for (std::size_t i = 0; i < table.size(); ++i) {
        const auto& f = table[i];
        if (f.number >= numbers || index[static_cast<std::size_t>(f.owner)][f.number] != none)
            throw "a field number past the index, or a field listed twice";  // fails the constant evaluation
        index[static_cast<std::size_t>(f.owner)][f.number] = static_cast<std::uint8_t>(i);
    }
    return index;
}
constexpr auto index = make_index();

}  // namespace

std::span<const field_schema> schema() noexcept { return table; }

const field_schema* find_field(message_kind owner, std::uint32_t n) noexcept {
    const auto kind = static_cast<std::size_t>(owner);
    if (kind >= kinds || n >= numbers) return nullptr;
    const auto row = index[kind][n];
    return row == none ? nullptr : &table[row];
}

}  // namespace onnxstream::onnx
