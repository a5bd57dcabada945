// Small ONNX models built by hand with proto_builder, for the verify and diff tests: a
// model is a list of initializers and nodes, each tensor embedded (raw or typed) or
// external, written to a folder with its data files.
#pragma once

#include "proto_builder.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Not in test_support itself: calls with proto_builder arguments would otherwise find these
// by argument-dependent lookup from other tests' helpers of the same name.
namespace small_models {

using test_support::proto_builder;

// Field numbers written out (the tests must not depend on the code under test's enums).
namespace onnx_fields {
inline constexpr std::uint32_t model_ir_version = 1, model_producer = 2, model_graph = 7, model_opset = 8, model_metadata = 14;
inline constexpr std::uint32_t graph_node = 1, graph_name = 2, graph_initializer = 5, graph_input = 11, graph_output = 12;
inline constexpr std::uint32_t node_input = 1, node_output = 2, node_name = 3, node_op = 4, node_attribute = 5;
inline constexpr std::uint32_t attribute_name = 1, attribute_f = 2, attribute_i = 3, attribute_t = 5, attribute_ints = 8,
                               attribute_type = 20;
inline constexpr std::uint32_t tensor_dims = 1, tensor_type = 2, tensor_float_data = 4, tensor_name = 8, tensor_raw = 9,
                               tensor_external = 13, tensor_location = 14;
}  // namespace onnx_fields

inline proto_builder string_entry(std::string_view key, std::string_view value) {
    proto_builder e;
    e.string_field(1, key).string_field(2, value);
    return e;
}

/// A FLOAT tensor `name` of `dims` whose values are `bytes` in field `values`.
inline proto_builder float_tensor_in(std::uint32_t values, std::string_view name, std::vector<std::uint64_t> dims,
                                     std::span<const std::byte> bytes) {
    using namespace onnx_fields;
    proto_builder t;
    for (const auto d : dims) t.varint_field(tensor_dims, d);
    t.varint_field(tensor_type, 1).string_field(tensor_name, name).bytes_field(values, bytes);
    return t;
}

/// A FLOAT tensor `name` of `dims` with raw_data `bytes`.
inline proto_builder raw_tensor(std::string_view name, std::vector<std::uint64_t> dims, std::span<const std::byte> bytes) {
    return float_tensor_in(onnx_fields::tensor_raw, name, std::move(dims), bytes);
}

/// The same tensor with its values in float_data (packed).
inline proto_builder typed_tensor(std::string_view name, std::vector<std::uint64_t> dims, std::span<const std::byte> bytes) {
    return float_tensor_in(onnx_fields::tensor_float_data, name, std::move(dims), bytes);
}

/// An external FLOAT tensor; empty optional entries are left out.
inline proto_builder external_tensor(std::string_view name, std::vector<std::uint64_t> dims, std::string_view location,
                                     std::string_view offset = {}, std::string_view length = {}, std::string_view checksum = {}) {
    using namespace onnx_fields;
    proto_builder t;
    for (const auto d : dims) t.varint_field(tensor_dims, d);
    t.varint_field(tensor_type, 1).string_field(tensor_name, name);
    t.message_field(tensor_external, string_entry("location", location));
    if (!offset.empty()) t.message_field(tensor_external, string_entry("offset", offset));
    if (!length.empty()) t.message_field(tensor_external, string_entry("length", length));
    if (!checksum.empty()) t.message_field(tensor_external, string_entry("checksum", checksum));
    t.varint_field(tensor_location, 1);
    return t;
}

inline proto_builder float_attribute(std::string_view name, float value) {
    using namespace onnx_fields;
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, 4);
    proto_builder a;
    a.string_field(attribute_name, name).fixed32_field(attribute_f, bits).varint_field(attribute_type, 1);
    return a;
}

inline proto_builder int_attribute(std::string_view name, std::uint64_t value) {
    using namespace onnx_fields;
    proto_builder a;
    a.string_field(attribute_name, name).varint_field(attribute_i, value).varint_field(attribute_type, 2);
    return a;
}

inline proto_builder node(std::string_view op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                          std::vector<proto_builder> attributes = {}, std::string_view name = {}) {
    using namespace onnx_fields;
    proto_builder n;
    for (const auto& i : inputs) n.string_field(node_input, i);
    for (const auto& o : outputs) n.string_field(node_output, o);
    if (!name.empty()) n.string_field(node_name, name);
    n.string_field(node_op, op);
    for (const auto& a : attributes) n.message_field(node_attribute, a);
    return n;
}

/// A model: graph "g" holding `nodes` then `initializers`, opset 13.
inline std::vector<std::byte> model(const std::vector<proto_builder>& initializers, const std::vector<proto_builder>& nodes = {},
                                    std::string_view producer = "tests") {
    using namespace onnx_fields;
    proto_builder graph;
    for (const auto& n : nodes) graph.message_field(graph_node, n);
    graph.string_field(graph_name, "g");
    for (const auto& t : initializers) graph.message_field(graph_initializer, t);
    proto_builder opset;
    opset.string_field(1, "").varint_field(2, 13);
    proto_builder m;
    m.varint_field(model_ir_version, 8).string_field(model_producer, producer).message_field(model_graph, graph);
    m.message_field(model_opset, opset);
    return m.take();
}

inline std::filesystem::path write_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
}

/// `count` floats 0.5, 1.5, 2.5 ... as little-endian bytes.
inline std::vector<std::byte> ramp(std::size_t count, float start = 0.5f) {
    std::vector<std::byte> out(count * 4);
    for (std::size_t i = 0; i < count; ++i) {
        const float v = start + static_cast<float>(i);
        std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
}

}  // namespace small_models
