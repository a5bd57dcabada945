#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>

#include "proto_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::proto_builder;

namespace {

// Field numbers written out here on purpose, from onnx.proto, independent of fields.hpp.
proto_builder tensor(std::string_view name, std::initializer_list<float> values) {
    proto_builder t;
    t.varint_field(1, values.size()).varint_field(2, 1).string_field(8, name);
    t.bytes_field(9, test_support::float_bytes(values));
    return t;
}

proto_builder node(std::string_view op, std::string_view input, std::string_view output) {
    proto_builder n;
    n.string_field(1, input).string_field(2, output).string_field(4, op);
    return n;
}

}  // namespace

TEST_CASE("the tree descends into graphs, nodes, attributes, subgraphs and functions") {
    proto_builder then_graph;
    then_graph.message_field(5, tensor("inner_w", {1, 2})).message_field(1, node("Identity", "inner_w", "y"));
    proto_builder attribute;
    attribute.string_field(1, "then_branch").message_field(6, then_graph).varint_field(20, 5);
    proto_builder if_node = node("If", "cond", "y");
    if_node.message_field(5, attribute);
    proto_builder constant_attribute;
    constant_attribute.string_field(1, "value").message_field(5, tensor("", {3})).varint_field(20, 4);
    proto_builder constant = node("Constant", "", "c");
    constant.message_field(5, constant_attribute);
    proto_builder graph;
    graph.message_field(1, if_node).message_field(1, constant).message_field(5, tensor("w", {1, 2, 3}));
    proto_builder function;
    function.string_field(1, "f").message_field(7, node("Relu", "a", "b"));
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph).message_field(25, function);

    const auto tree = message_tree::parse(model.bytes());
    REQUIRE(tree);
    const auto sites = find_tensors(*tree);
    REQUIRE(sites.size() == 3);
    CHECK(tree->path(sites[site_id{0}].message) == "graph.node[0].attribute[0].g.initializer[0]");
    CHECK(sites[site_id{0}].role == tensor_role::initializer);
    CHECK(sites[site_id{1}].role == tensor_role::attribute);
    CHECK(value_name(*tree, sites[site_id{1}]) == "c");
    CHECK(tree->path(sites[site_id{2}].message) == "graph.initializer[0]");
    const auto nodes = find_nodes(*tree);
    CHECK(nodes.size() == 4);  // If, Identity (inside), Constant, Relu (function)
}

TEST_CASE("protobuf without ir_version is not an ONNX model") {
    proto_builder b;
    b.string_field(2, "producer");
    const auto tree = message_tree::parse(b.bytes());
    REQUIRE_FALSE(tree);
    CHECK(tree.error().code == error_code::not_onnx);
    CHECK_FALSE(message_tree::parse({}));
}

TEST_CASE("a known message field with the wrong wire type is refused") {
    proto_builder b;
    b.varint_field(1, 8).varint_field(7, 3);  // graph as a varint
    const auto tree = message_tree::parse(b.bytes());
    REQUIRE_FALSE(tree);
    CHECK(tree.error().code == error_code::not_onnx);
}

TEST_CASE("nesting deeper than the limit is refused without recursing further") {
    proto_builder graph;
    graph.string_field(2, "leaf");
    for (int level = 0; level < 200; ++level) {
        proto_builder attribute;
        attribute.message_field(6, graph);
        proto_builder n;
        n.message_field(5, attribute);
        proto_builder outer;
        outer.message_field(1, n);
        graph = std::move(outer);
    }
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto tree = message_tree::parse(model.bytes());
    REQUIRE_FALSE(tree);
    CHECK(tree.error().code == error_code::limit_exceeded);
}

TEST_CASE("unknown fields are kept as tokens") {
    proto_builder model;
    model.varint_field(1, 8).string_field(999, "future").varint_field(1000, 5);
    const auto tree = message_tree::parse(model.bytes());
    REQUIRE(tree);
    CHECK(tree->fields(0).size() == 3);
    CHECK(tree->find_text(0, 999) == "future");
}

TEST_CASE("find_bulk_payloads finds the large opaque payloads by their headers alone, at any depth") {
    const std::vector<std::byte> big(100 * 1024, std::byte{7});
    const std::vector<std::byte> small(100, std::byte{8});
    proto_builder weight;
    weight.varint_field(1, big.size() / 4).varint_field(2, 1).string_field(8, "w").bytes_field(9, big);
    proto_builder tiny;
    tiny.varint_field(2, 1).string_field(8, "t").bytes_field(9, small);
    proto_builder constant_attribute;  // a Constant's tensor, inside an attribute
    constant_attribute.string_field(1, "value").message_field(5, weight).varint_field(20, 4);
    proto_builder constant = node("Constant", "", "c");
    constant.message_field(5, constant_attribute);
    proto_builder graph;
    graph.message_field(1, constant).message_field(5, tiny).message_field(5, weight);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph).bytes_field(1000, big);  // an unknown field
    const auto bytes = model.bytes();
    std::uint64_t reads = 0;
    const read_function read = [&](std::uint64_t offset, std::span<std::byte> out) {
        ++reads;
        if (offset > bytes.size() || out.size() > bytes.size() - offset) return false;
        std::memcpy(out.data(), bytes.data() + offset, out.size());
        return true;
    };
    const auto found = find_bulk_payloads(bytes.size(), read);
    REQUIRE(found.size() == 3);
    const auto tree = message_tree::parse(bytes);
    REQUIRE(tree);
    // The same ranges as the tree's raw_data payloads and the unknown field's.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> expected;
    for (const auto& f : tree->all_fields())
        if (f.child == no_index && f.token.payload_length >= big.size())
            expected.emplace_back(f.token.payload_offset, f.token.payload_length);
    std::sort(expected.begin(), expected.end());
    REQUIRE(expected.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(found[i].offset == expected[i].first);
        CHECK(found[i].length == expected[i].second);
    }

    SUBCASE("only the largest are kept past max_ranges, in file order") {
        bulk_scan_options options;
        options.max_ranges = 1;
        const auto largest = find_bulk_payloads(bytes.size(), read, options);
        REQUIRE(largest.size() == 1);
        CHECK(largest[0].length == big.size());
    }
    SUBCASE("bytes that are not a model give nothing (the parse reports why)") {
        auto broken = std::vector<std::byte>(bytes.begin(), bytes.end());
        broken.resize(broken.size() - 10);  // the unknown field now claims more than is left
        const read_function read_broken = [&](std::uint64_t offset, std::span<std::byte> out) {
            if (offset > broken.size() || out.size() > broken.size() - offset) return false;
            std::memcpy(out.data(), broken.data() + offset, out.size());
            return true;
        };
        CHECK(find_bulk_payloads(broken.size(), read_broken).empty());
        CHECK(find_bulk_payloads(0, read_broken).empty());
    }
}
