#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/schema.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>

#include "proto_builder.hpp"
#include "tree_comparison.hpp"

#include <doctest/doctest.h>

#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

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

// An If node whose then-branch holds an initializer `inner`, read by its one node.
proto_builder if_with_initializer(std::string_view inner) {
    proto_builder then_graph;
    then_graph.message_field(5, tensor(inner, {1, 2})).message_field(1, node("Identity", inner, "y"));
    proto_builder attribute;
    attribute.string_field(1, "then_branch").message_field(6, then_graph).varint_field(20, 5);
    proto_builder if_node = node("If", "cond", "y");
    if_node.message_field(5, attribute);
    return if_node;
}

// A Constant node whose value is an unnamed tensor.
proto_builder constant_node() {
    proto_builder constant_attribute;
    constant_attribute.string_field(1, "value").message_field(5, tensor("", {3})).varint_field(20, 4);
    proto_builder constant = node("Constant", "", "c");
    constant.message_field(5, constant_attribute);
    return constant;
}

}  // namespace

TEST_CASE("the tree descends into graphs, nodes, attributes, subgraphs and functions") {
    proto_builder graph;
    graph.message_field(1, if_with_initializer("inner_w")).message_field(1, constant_node());
    graph.message_field(5, tensor("w", {1, 2, 3}));
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
    // An attribute's t (field 5, as a graph's initializer) is one tensor: no index.
    CHECK(tree->path(sites[site_id{1}].message) == "graph.node[1].attribute[0].t");
    CHECK(tree->path(sites[site_id{2}].message) == "graph.initializer[0]");
    const auto nodes = find_nodes(*tree);
    CHECK(nodes.size() == 4);  // If, Identity (inside), Constant, Relu (function)
}

TEST_CASE("a tensor's graph and node come from the tree: initializers, sparse ones, attributes, subgraphs, functions") {
    proto_builder sparse;  // SparseTensorProto: values, indices
    sparse.message_field(1, tensor("s", {2})).message_field(2, tensor("s_idx", {2}));
    proto_builder sparse_attribute;
    sparse_attribute.string_field(1, "sparse_value").message_field(22, sparse).varint_field(20, 11);
    proto_builder sparse_constant = node("Constant", "", "sc");
    sparse_constant.message_field(5, sparse_attribute);
    proto_builder graph;
    graph.message_field(1, if_with_initializer("inner_w")).message_field(1, constant_node()).message_field(1, sparse_constant);
    graph.message_field(5, tensor("w", {1})).message_field(15, sparse);
    proto_builder default_attribute;  // a FunctionProto's attribute_proto: a default, in no node
    default_attribute.string_field(1, "alpha").message_field(5, tensor("d", {1})).varint_field(20, 4);
    proto_builder function;
    function.string_field(1, "f").message_field(7, node("Relu", "a", "b")).message_field(11, default_attribute);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph).message_field(25, function);

    const auto tree = message_tree::parse(model.bytes());
    REQUIRE(tree);
    const auto sites = find_tensors(*tree);
    REQUIRE(sites.size() == 8);
    struct expected {
        tensor_role role;
        std::string graph;  // graph_of's path ("" for the function)
        std::string node;   // node_of's path, "" for none
    };
    const std::array<expected, 8> all{{
        {tensor_role::initializer, "graph.node[0].attribute[0].g", ""},
        {tensor_role::attribute, "graph", "graph.node[1]"},
        {tensor_role::sparse_attribute, "graph", "graph.node[2]"},
        {tensor_role::sparse_attribute, "graph", "graph.node[2]"},
        {tensor_role::initializer, "graph", ""},
        {tensor_role::sparse_initializer, "graph", ""},
        {tensor_role::sparse_initializer, "graph", ""},
        {tensor_role::attribute, "", ""},
    }};
    for (const auto t : sites.ids()) {
        CAPTURE(t.value);
        const auto& site = sites[t];
        const auto& want = all[t.value];
        CHECK(site.role == want.role);
        const auto g = graph_of(*tree, site);
        REQUIRE(g != no_index);
        if (want.graph.empty()) CHECK(tree->at(g).kind == message_kind::function);
        else CHECK(tree->path(g) == want.graph);
        const auto n = node_of(*tree, site);
        if (want.node.empty()) {
            CHECK(n == no_index);
        } else {
            REQUIRE(n != no_index);
            CHECK(tree->path(n) == want.node);
        }
    }
    CHECK(value_name(*tree, sites[site_id{1}]) == "c");  // the Constant's output
    CHECK(value_name(*tree, sites[site_id{7}]) == "d");  // its own: no node
}

TEST_CASE("a message's payload range is its holder's payload; repeated and ordinals per field number") {
    proto_builder graph;
    graph.message_field(1, node("Relu", "x", "y"))
        .message_field(5, tensor("w", {1}))
        .message_field(1, node("Relu", "y", "z"))
        .message_field(5, tensor("v", {2, 3}));
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto bytes = model.bytes();
    const auto tree = message_tree::parse(bytes);
    REQUIRE(tree);
    CHECK(sizeof(message) == 24);
    const auto root = tree->payload_range(0);
    CHECK(root.offset == 0);
    CHECK(root.length == bytes.size());
    REQUIRE(tree->messages().size() == 6);  // model, graph, node, tensor, node, tensor (pre-order)
    const std::array<message_kind, 6> kinds{message_kind::model,  message_kind::graph, message_kind::node,
                                            message_kind::tensor, message_kind::node,  message_kind::tensor};
    const std::array<std::uint32_t, 6> ordinals{0, 0, 0, 0, 1, 1};
    for (std::uint32_t m = 1; m < 6; ++m) {
        const auto& msg = tree->at(m);
        CHECK(msg.kind == kinds[m]);
        CHECK(msg.ordinal == ordinals[m]);
        CHECK(static_cast<bool>(msg.repeated) == (m != 1));  // two nodes, two initializers, one graph
        const auto& holder = tree->field(msg.parent_field);
        CHECK(tree->payload_range(m).offset == holder.payload_offset());
        CHECK(tree->payload_range(m).length == holder.payload_length());
        CHECK(holder.child == m);
        CHECK(tree->owner(msg.parent_field) == msg.parent);
    }
    CHECK(tree->path(5) == "graph.initializer[1]");
    // The first field of the second node begins its payload.
    CHECK(tree->fields(4).front().header_offset() == tree->payload_range(4).offset);
}

TEST_CASE("ordinals and repeated restart in every message, whichever numbers its children use") {
    // The counts per field number are set when a number is first seen in a message: a
    // count left from a sibling or from the parent must not leak into another message.
    proto_builder two_nodes;
    two_nodes.message_field(1, node("Relu", "a", "b")).message_field(1, node("Relu", "b", "c"));
    proto_builder one_node;
    one_node.message_field(11, proto_builder{}).message_field(1, node("Relu", "a", "b"));
    proto_builder first_attribute;
    first_attribute.string_field(1, "then_branch").message_field(6, two_nodes).varint_field(20, 5);
    proto_builder second_attribute;
    second_attribute.string_field(1, "else_branch").message_field(6, one_node).varint_field(20, 5);
    proto_builder if_node = node("If", "cond", "y");
    if_node.message_field(5, first_attribute).message_field(5, second_attribute);
    proto_builder graph;
    graph.message_field(5, tensor("w", {1})).message_field(1, if_node).message_field(13, proto_builder{});
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto tree = message_tree::parse(model.bytes());
    REQUIRE(tree);
    std::vector<std::string> paths;
    std::vector<bool> repeated;
    for (std::uint32_t m = 0; m < tree->messages().size(); ++m) {
        paths.push_back(tree->path(m));
        repeated.push_back(tree->at(m).repeated);
    }
    const std::vector<std::string> expected{"model",
                                            "graph",
                                            "graph.initializer[0]",
                                            "graph.node[0]",
                                            "graph.node[0].attribute[0]",
                                            "graph.node[0].attribute[0].g",
                                            "graph.node[0].attribute[0].g.node[0]",
                                            "graph.node[0].attribute[0].g.node[1]",
                                            "graph.node[0].attribute[1]",
                                            "graph.node[0].attribute[1].g",
                                            "graph.node[0].attribute[1].g.input",
                                            "graph.node[0].attribute[1].g.node[0]",
                                            "graph.value_info"};
    CHECK(paths == expected);
    const std::vector<bool> expected_repeated{false, false, false, false, true,  false, true,
                                              true,  true,  false, false, false, false};
    CHECK(repeated == expected_repeated);
}

TEST_CASE("every field number the schema knows is below 32 (the parser's lookup tables)") {
    for (const auto& row : schema()) CHECK(row.number < 32);
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
        if (f.child == no_index && f.payload_length() >= big.size())
            expected.emplace_back(f.payload_offset(), f.payload_length());
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

TEST_CASE("find_bulk_payloads does not descend into a message too short to hold a bulk payload") {
    // A node of a few bytes whose body is not protobuf: a scan that read it would give up
    // (and find nothing); one that skips it finds the unknown field's payload after it.
    const std::vector<std::byte> big(100 * 1024, std::byte{7});
    const std::vector<std::byte> garbage(40, std::byte{0xFF});
    proto_builder graph;
    graph.bytes_field(1, garbage);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph).bytes_field(1000, big);
    const auto bytes = model.bytes();
    const read_function read = [&](std::uint64_t offset, std::span<std::byte> out) {
        if (offset > bytes.size() || out.size() > bytes.size() - offset) return false;
        std::memcpy(out.data(), bytes.data() + offset, out.size());
        return true;
    };
    const auto found = find_bulk_payloads(bytes.size(), read);
    REQUIRE(found.size() == 1);
    CHECK(found[0].length == big.size());
    CHECK(found[0].offset + found[0].length == bytes.size());
    // The parse still reads the node and says what is wrong with it.
    CHECK_FALSE(message_tree::parse(bytes));
}

TEST_CASE("a growable array keeps its values across small and large blocks, copies and moves") {
    // Past large_block the storage is a mapping of its own (on Linux), grown by
    // remapping: every value must survive each step.
    constexpr std::uint64_t step = 2654435761U;
    detail::growable_array<std::uint64_t> values;
    constexpr std::size_t count = 3 * large_block / sizeof(std::uint64_t) + 5;
    for (std::uint64_t i = 0; i < count; ++i) values.push_back(i * step);
    REQUIRE(values.size() == count);
    bool same = true;
    for (std::uint64_t i = 0; i < count; ++i) same = same && values[i] == i * step;
    CHECK(same);
    auto copy = values;
    CHECK(copy.size() == count);
    CHECK(std::memcmp(copy.span().data(), values.span().data(), count * sizeof(std::uint64_t)) == 0);
    auto moved = std::move(copy);
    CHECK(moved.size() == count);
    CHECK(moved[count - 1] == (count - 1) * step);
    detail::growable_array<std::uint64_t> small;
    small.push_back(1);
    small = moved;  // a small block replaced by a large one
    CHECK(small.size() == count);
    CHECK(small[count / 2] == (count / 2) * step);
    moved.truncate(3);
    CHECK(moved.size() == 3);
    CHECK(moved[2] == 2 * step);
}

// The compact field_entry: 20 bytes that must give back every offset the tokenizer saw.
TEST_CASE("a field entry keeps offsets and lengths past 4 GiB, the largest field number and long headers") {
    proto::field_token t;
    t.header_offset = (5ULL << 32) + 17;      // past 4 GiB
    t.payload_offset = t.header_offset + 20;  // a 10-byte tag and a 10-byte length, both over-long
    t.payload_length = (6ULL << 32) + 3;      // a payload of more than 4 GiB
    t.number = proto::max_field_number;
    t.type = proto::wire_type::length_delimited;
    REQUIRE(field_entry::fits(t));
    const field_entry f(t, 7);
    CHECK(f.header_offset() == t.header_offset);
    CHECK(f.header_length() == 20);
    CHECK(f.payload_offset() == t.payload_offset);
    CHECK(f.payload_length() == t.payload_length);
    CHECK(f.end_offset() == t.end_offset());
    CHECK(f.total_length() == t.total_length());
    CHECK(f.number() == proto::max_field_number);
    CHECK(f.type() == proto::wire_type::length_delimited);
    CHECK(f.child == 7);

    for (const auto type : {proto::wire_type::varint, proto::wire_type::fixed64, proto::wire_type::fixed32}) {
        t.type = type;
        CHECK(field_entry(t).type() == type);
        CHECK(field_entry(t).number() == proto::max_field_number);
    }
    t.header_offset = field_entry::max_offset;
    t.payload_offset = t.header_offset + 1;
    t.payload_length = field_entry::max_offset;
    REQUIRE(field_entry::fits(t));
    CHECK(field_entry(t).header_offset() == field_entry::max_offset);
    CHECK(field_entry(t).payload_length() == field_entry::max_offset);
    SUBCASE("what does not fit is said so") {
        auto beyond = t;
        beyond.header_offset = field_entry::max_offset + 1;
        beyond.payload_offset = beyond.header_offset + 1;
        CHECK_FALSE(field_entry::fits(beyond));
        auto huge = t;
        huge.payload_length = field_entry::max_offset + 1;
        CHECK_FALSE(field_entry::fits(huge));
        auto long_header = t;
        long_header.payload_offset = long_header.header_offset + 32;
        CHECK_FALSE(field_entry::fits(long_header));
    }
}

TEST_CASE("varint values are decoded from the bytes when asked, over-long encodings included") {
    proto_builder model;
    model.varint_field(1, 8);
    model.varint_field(proto::max_field_number, ~0ULL);  // ten bytes of value
    // Field 1000 written with an over-long tag (4 bytes) and an over-long value 5 (3 bytes).
    const std::uint64_t tag = 1000ULL << 3;
    const std::array<std::byte, 7> overlong{std::byte{static_cast<unsigned char>((tag & 0x7F) | 0x80)},
                                            std::byte{static_cast<unsigned char>(((tag >> 7) & 0x7F) | 0x80)},
                                            std::byte{0x80},
                                            std::byte{0x00},
                                            std::byte{0x85},
                                            std::byte{0x80},
                                            std::byte{0x00}};
    model.raw(overlong);
    model.fixed32_field(1001, 0xDEADBEEF);
    const auto tree = message_tree::parse(model.bytes());
    REQUIRE(tree);
    const auto fields = tree->fields(0);
    REQUIRE(fields.size() == 4);
    CHECK(tree->value(fields[0]) == 8);
    CHECK(fields[1].number() == proto::max_field_number);
    CHECK(tree->value(fields[1]) == ~0ULL);
    CHECK(fields[1].payload_length() == 10);
    CHECK(fields[2].number() == 1000);
    CHECK(fields[2].header_length() == 4);
    CHECK(fields[2].payload_length() == 3);
    CHECK(tree->value(fields[2]) == 5);
    CHECK(fields[3].type() == proto::wire_type::fixed32);
    CHECK(tree->value(fields[3]) == 0);  // only varints have a value
    // token() gives back what the tokenizer read, field by field.
    std::vector<proto::field_token> tokens;
    REQUIRE(proto::tokenize(tree->bytes(), 0, tree->bytes().size(), tokens));
    REQUIRE(tokens.size() == fields.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const auto back = tree->token(fields[i]);
        CHECK(back.header_offset == tokens[i].header_offset);
        CHECK(back.payload_offset == tokens[i].payload_offset);
        CHECK(back.payload_length == tokens[i].payload_length);
        CHECK(back.value == tokens[i].value);
        CHECK(back.number == tokens[i].number);
        CHECK(back.type == tokens[i].type);
    }
}

TEST_CASE("deep nesting: every field's owner and every message's path, empty messages included") {
    // 30 levels of graph > node > attribute > graph (90 messages deep, under the limit of
    // 96), each graph also holding an empty node, so that messages without fields sit
    // between messages with them.
    proto_builder graph;
    graph.string_field(2, "leaf");
    for (int level = 0; level < 30; ++level) {
        proto_builder attribute;
        attribute.string_field(1, "body").message_field(6, graph);
        proto_builder n;
        n.message_field(5, attribute);
        proto_builder outer;
        outer.message_field(1, proto_builder{}).message_field(1, n).string_field(2, "g");
        graph = std::move(outer);
    }
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto tree = message_tree::parse(model.bytes());
    REQUIRE(tree);
    CHECK(tree->messages().back().depth == 91);
    const auto all = tree->all_fields();
    std::uint64_t checked = 0;
    for (std::uint32_t m = 0; m < tree->messages().size(); ++m) {
        const auto& msg = tree->at(m);
        const auto range = tree->payload_range(m);
        for (std::uint32_t i = 0; i < msg.field_count; ++i) {
            const auto index = msg.first_field + i;
            CHECK(tree->owner(index) == m);
            CHECK(all[index].header_offset() >= range.offset);
            CHECK(all[index].end_offset() <= range.offset + range.length);
            // Fields are contiguous: each starts where the one before it ends.
            if (i == 0) CHECK(all[index].header_offset() == range.offset);
            else CHECK(all[index].header_offset() == all[index - 1].end_offset());
            ++checked;
        }
        if (msg.parent != no_index) {
            CHECK(tree->field(msg.parent_field).child == m);
            CHECK(tree->owner(msg.parent_field) == msg.parent);
        }
    }
    CHECK(checked == all.size());
    std::string deepest = "graph";
    for (int level = 0; level < 30; ++level) deepest += ".node[1].attribute[0].g";
    CHECK(tree->path(static_cast<std::uint32_t>(tree->messages().size() - 1)) == deepest);
}

#if defined(__linux__)
TEST_CASE("a payload of more than 4 GiB is tokenized without touching it") {
    // A 4 GiB + 64 byte mapping of zero pages, reserved but never written past the header.
    const std::uint64_t payload = (4ULL << 30) + 5;
    proto_builder head;
    head.varint_field(1, 8).raw_varint(1000ULL << 3 | 2).raw_varint(payload);
    const auto header = head.bytes();
    const std::uint64_t size = header.size() + payload;
    void* area = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE(area != MAP_FAILED);
    std::memcpy(area, header.data(), header.size());
    const std::span<const std::byte> bytes(static_cast<const std::byte*>(area), size);
    {
        const auto tree = message_tree::parse(bytes);
        REQUIRE(tree);
        const auto fields = tree->fields(0);
        REQUIRE(fields.size() == 2);
        CHECK(fields[1].number() == 1000);
        CHECK(fields[1].payload_length() == payload);
        CHECK(fields[1].payload_offset() == header.size());
        CHECK(fields[1].end_offset() == size);
        CHECK(tree->payload(fields[1]).size() == payload);
    }
    ::munmap(area, size);
}
#endif

namespace {

proto_builder string_entry(std::string_view key, std::string_view value) {
    proto_builder e;
    e.string_field(1, key).string_field(2, value);
    return e;
}

// A graph with a tensor in every place one can be: raw, typed and string initializers, an
// external one, one with external_data keys but no data_location, a sparse initializer, a
// Constant's attribute tensor, and a tensor in a subgraph.
std::vector<std::byte> tensors_everywhere() {
    proto_builder typed;
    typed.varint_field(1, 2).varint_field(2, 6).string_field(8, "typed").varint_field(5, 7).varint_field(5, 8);
    proto_builder strings;
    strings.varint_field(2, 8).string_field(6, "a").string_field(6, "b").string_field(8, "strings");
    proto_builder external;
    external.varint_field(1, 4).varint_field(2, 1).string_field(8, "external");
    external.message_field(13, string_entry("location", "w.bin")).message_field(13, string_entry("length", "16"));
    external.varint_field(14, 1);
    proto_builder keys_only;  // external_data without data_location: ignored by ONNX, kept here
    keys_only.varint_field(1, 1).varint_field(2, 1).string_field(8, "keys_only");
    keys_only.message_field(13, string_entry("location", "x.bin"));
    keys_only.bytes_field(9, test_support::float_bytes({5}));
    proto_builder located;  // data_location = DEFAULT: kept too
    located.varint_field(2, 1).string_field(8, "located").varint_field(14, 0).bytes_field(9, test_support::float_bytes({6}));
    proto_builder sparse;
    sparse.message_field(1, tensor("values", {1, 2})).message_field(2, tensor("indices", {0, 3})).varint_field(3, 4);
    proto_builder graph;
    graph.message_field(1, constant_node())
        .message_field(1, if_with_initializer("inner"))
        .message_field(5, tensor("w", {1, 2, 3}));
    graph.message_field(5, typed).message_field(5, strings).message_field(5, external).message_field(5, keys_only);
    graph.message_field(5, located).message_field(15, sparse).string_field(2, "g");
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    return model.take();
}

tree_options on_demand() {
    tree_options options;
    options.tensors = tensor_fields::on_demand;
    return options;
}

}  // namespace

TEST_CASE("nodes on demand: a node without attributes is dropped and read back; one with attributes is kept") {
    proto_builder relu;  // no attribute: dropped
    relu.string_field(1, "x").string_field(2, "y").string_field(3, "relu").string_field(4, "Relu");
    proto_builder axis;
    axis.string_field(1, "axis").varint_field(3, 1).varint_field(20, 2);
    proto_builder softmax;  // an attribute: kept, with it
    softmax.string_field(1, "y").string_field(2, "z").string_field(4, "Softmax").message_field(5, axis);
    proto_builder graph;
    graph.message_field(1, relu).message_field(1, softmax).message_field(1, constant_node()).string_field(2, "g");
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto bytes = model.take();
    tree_options options;
    options.nodes = node_fields::on_demand;
    const auto full = message_tree::parse(bytes);
    const auto lazy = message_tree::parse(bytes, options);
    REQUIRE(full);
    REQUIRE(lazy);
    CHECK(test_support::check_on_demand_tree(*full, *lazy) == 1);  // the Relu only
    CHECK(lazy->messages().size() == full->messages().size());     // it held no message
    std::uint32_t relu_index = no_index;
    for (std::uint32_t m = 0; m < lazy->messages().size(); ++m)
        if (lazy->at(m).kind == message_kind::node && !lazy->stores_fields(m)) relu_index = m;
    REQUIRE(relu_index != no_index);
    CHECK(lazy->find_text(relu_index, number(node_field::op_type)) == "Relu");
    std::vector<field_entry> scratch;
    const auto fields = lazy->read_fields(relu_index, scratch);
    REQUIRE(fields.size() == 4);
    CHECK(lazy->text(fields[0]) == "x");
    CHECK(lazy->text(fields[3]) == "Relu");
    // The tensor option alone keeps every node.
    const auto tensors_only = message_tree::parse(bytes, on_demand());
    REQUIRE(tensors_only);
    for (std::uint32_t m = 0; m < tensors_only->messages().size(); ++m)
        if (tensors_only->at(m).kind == message_kind::node) CHECK(tensors_only->stores_fields(m));
}

TEST_CASE("nodes on demand: a dropped node whose bytes changed after the parse reads as no fields") {
    proto_builder relu;
    relu.string_field(1, "x").string_field(2, "y").string_field(4, "Relu");
    proto_builder graph;
    graph.message_field(1, relu).string_field(2, "g");
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    auto bytes = model.take();
    tree_options options;
    options.nodes = node_fields::on_demand;
    const auto tree = message_tree::parse(bytes, options);  // views `bytes`, which change below
    REQUIRE(tree);
    std::uint32_t node = no_index;
    for (std::uint32_t m = 0; m < tree->messages().size(); ++m)
        if (tree->at(m).kind == message_kind::node) node = m;
    REQUIRE(node != no_index);
    REQUIRE_FALSE(tree->stores_fields(node));
    std::vector<field_entry> scratch;
    CHECK(tree->read_fields(node, scratch).size() == 3);
    // The file changed under a released page: the node's first tag is now a field number 0,
    // which no longer tokenizes. The caller's check that the file is unchanged says why.
    const auto range = tree->payload_range(node);
    bytes[range.offset] = std::byte{0x00};
    CHECK(tree->read_fields(node, scratch).empty());
    CHECK(scratch.empty());
}

TEST_CASE("an on-demand tree drops the body of every tensor and reads each back as the full tree holds it") {
    const auto bytes = tensors_everywhere();
    const auto full = message_tree::parse(bytes);
    const auto lazy = message_tree::parse(bytes, on_demand());
    REQUIRE(full);
    REQUIRE(lazy);
    // Every one, external ones with their external_data entries (3 messages of the full tree).
    CHECK(test_support::check_on_demand_tree(*full, *lazy) == 10);
    CHECK(lazy->messages().size() + 3 == full->messages().size());
    const auto full_sites = find_tensors(*full);
    const auto lazy_sites = find_tensors(*lazy);
    REQUIRE(lazy_sites.size() == 10);
    REQUIRE(full_sites.size() == lazy_sites.size());
    for (const auto t : lazy_sites.ids()) {
        CHECK_FALSE(lazy->stores_fields(lazy_sites[t].message));
        CHECK(lazy->path(lazy_sites[t].message) == full->path(full_sites[t].message));
        CHECK(value_name(*lazy, lazy_sites[t]) == value_name(*full, full_sites[t]));
    }
}

TEST_CASE("a damaged tensor body fails an on-demand parse with the error of a full one") {
    auto check_same_error = [](std::span<const std::byte> bytes, tree_options options = {}) {
        const auto full = message_tree::parse(bytes, options);
        options.tensors = tensor_fields::on_demand;
        const auto lazy = message_tree::parse(bytes, options);
        REQUIRE_FALSE(full);
        REQUIRE_FALSE(lazy);
        CHECK(lazy.error().code == full.error().code);
        CHECK(lazy.error().message == full.error().message);
        CHECK(lazy.error().offset == full.error().offset);
        CHECK(lazy.error().field_path == full.error().field_path);
    };
    SUBCASE("a field cut short inside the body") {
        proto_builder t;
        t.string_field(8, "t").raw(test_support::to_bytes("\x4a\x10short"));  // raw_data of 16 bytes, 5 there
        check_same_error(test_support::model_with_initializer(t));
    }
    SUBCASE("a singular field written twice") {
        proto_builder t = tensor("t", {1});
        t.string_field(8, "again");
        check_same_error(test_support::model_with_initializer(t));
    }
    SUBCASE("the field limit counts the fields of dropped bodies") {
        proto_builder graph;
        for (int i = 0; i < 50; ++i) graph.message_field(5, tensor("t" + std::to_string(i), {1, 2}));
        proto_builder model;
        model.varint_field(1, 8).message_field(7, graph);
        tree_options tight;
        tight.max_fields = 120;  // 2 + 50 + 4 a tensor
        check_same_error(model.bytes(), tight);
        tight.max_fields = 300;
        tight.tensors = tensor_fields::on_demand;
        CHECK(message_tree::parse(model.bytes(), tight));
    }
    SUBCASE("the message limit counts the messages inside dropped bodies") {
        proto_builder external;
        external.varint_field(1, 4).varint_field(2, 1).string_field(8, "e");
        external.message_field(13, string_entry("location", "w.bin")).varint_field(14, 1);
        proto_builder graph;
        for (int i = 0; i < 10; ++i) graph.message_field(5, external);
        proto_builder model;
        model.varint_field(1, 8).message_field(7, graph);
        tree_options tight;
        tight.max_messages = 21;  // the model, the graph, 2 a tensor
        check_same_error(model.bytes(), tight);
        tight.max_messages = 22;
        tight.tensors = tensor_fields::on_demand;
        CHECK(message_tree::parse(model.bytes(), tight));
    }
    SUBCASE("a damaged external_data entry inside a body") {
        proto_builder entry;
        entry.string_field(1, "location").string_field(1, "again");  // a singular key twice
        proto_builder t;
        t.string_field(8, "t").message_field(13, entry).varint_field(14, 1);
        check_same_error(test_support::model_with_initializer(t));
    }
    SUBCASE("a damaged body after a dropped one") {
        proto_builder graph;
        graph.message_field(5, tensor("fine", {1}));
        proto_builder bad;
        bad.string_field(8, "bad").varint_field(2, 1).raw(test_support::to_bytes("\x0f"));  // wire type 7
        graph.message_field(5, bad);
        proto_builder model;
        model.varint_field(1, 8).message_field(7, graph);
        check_same_error(model.bytes());
    }
}

namespace {

// A graph of more than tree_options::behind_step bytes (a megabyte more): `add(graph, i)`
// adds its i-th fields until it is. Returns how many times it was called.
template <class Add>
std::size_t fill_large_graph(proto_builder& graph, Add add) {
    std::size_t i = 0;
    for (; graph.bytes().size() <= tree_options::behind_step + (1U << 20); ++i) add(graph, i);
    return i;
}

std::vector<std::byte> model_of(const proto_builder& graph) {
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto b = model.bytes();
    return {b.begin(), b.end()};
}

// Two parses of the same bytes made the same tree: every message, every stored field.
void check_same_tree(const message_tree& a, const message_tree& b) {
    REQUIRE(a.messages().size() == b.messages().size());
    for (std::uint32_t m = 0; m < a.messages().size(); ++m) {
        REQUIRE(a.stores_fields(m) == b.stores_fields(m));
        if (a.stores_fields(m)) test_support::check_same_message(a, m, b, m);
    }
}

}  // namespace

TEST_CASE("the parse reports its progress through a large message: during the header scan, then after each child") {
    // A graph of more than tree_options::behind_step bytes: nodes, then two initializers.
    proto_builder graph;
    std::size_t children = fill_large_graph(graph, [](proto_builder& g, std::size_t i) {
        g.message_field(1, node("Relu", "x" + std::to_string(i), "y" + std::to_string(i)));
    });
    graph.message_field(5, tensor("w", {1, 2})).message_field(5, tensor("v", {3}));
    children += 2;
    const auto bytes = model_of(graph);

    std::vector<std::uint64_t> calls;
    auto options = on_demand();
    options.behind = [&calls](std::uint64_t offset) { calls.push_back(offset); };
    const auto tree = message_tree::parse(bytes, options);
    REQUIRE(tree);
    const auto graph_index = tree->field(tree->at(0).first_field + 1).child;
    REQUIRE(tree->at(graph_index).kind == message_kind::graph);
    const auto graph_range = tree->payload_range(graph_index);

    // The scan of the graph's headers reports once per step, moving forward...
    std::size_t scanned = 0;
    while (scanned + 1 < calls.size() && calls[scanned + 1] > calls[scanned]) ++scanned;
    ++scanned;
    REQUIRE(scanned >= 1);
    CHECK(calls.front() >= graph_range.offset + tree_options::behind_step);
    CHECK(calls[scanned - 1] < graph_range.offset + graph_range.length);
    // ...then the descent goes back and reports the end of each child, in order, and at
    // last the graph's own end (the model is larger than a step too).
    REQUIRE(calls.size() == scanned + children + 1);
    std::uint32_t child = 0;
    for (const auto& f : tree->fields(graph_index)) {
        if (f.child == no_index) continue;
        CHECK(calls[scanned + child] == f.end_offset());
        ++child;
    }
    CHECK(child == children);
    CHECK(calls.back() == graph_range.offset + graph_range.length);
    // The tree is what a parse without reports makes.
    const auto plain = message_tree::parse(bytes, on_demand());
    REQUIRE(plain);
    check_same_tree(*plain, *tree);

    SUBCASE("a model of less than a step reports nothing") {
        calls.clear();
        REQUIRE(message_tree::parse(tensors_everywhere(), options));
        CHECK(calls.empty());
    }
}

TEST_CASE("a large message's headers are read through tree_options::read, with the same tree and the same errors") {
    // A graph of more than tree_options::behind_step bytes of nodes and initializers.
    proto_builder graph;
    fill_large_graph(graph, [](proto_builder& g, std::size_t i) {
        const auto n = std::to_string(i);
        g.message_field(1, node("Relu", "x" + n, "y" + n)).message_field(5, tensor("w" + n, {1, 2}));
    });
    const auto bytes = model_of(graph);
    std::size_t reads = 0;
    std::uint64_t read_bytes = 0;
    bool fails = false;
    auto options = on_demand();
    options.read = [&](std::uint64_t offset, std::span<std::byte> out) {
        if (fails || offset + out.size() > bytes.size()) return false;
        ++reads;
        read_bytes += out.size();
        std::memcpy(out.data(), bytes.data() + offset, out.size());
        return true;
    };
    const auto plain = message_tree::parse(bytes, on_demand());
    REQUIRE(plain);

    SUBCASE("the window is read once through the graph, and the tree is the mapping's") {
        const auto tree = message_tree::parse(bytes, options);
        REQUIRE(tree);
        check_same_tree(*plain, *tree);
        // The graph's and the model's headers, a window at a time: about their size once
        // (the model is one field, the graph, whose first window the model's scan read).
        CHECK(reads >= 2);
        CHECK(read_bytes <= 2 * bytes.size());
    }
    SUBCASE("every well-formed header is read through the window, whatever its length") {
        // Tensors of 16 KiB and more (length prefixes of three bytes, which
        // proto::read_field_fast leaves to read_field) and unknown fields of three-byte tags
        // (length-delimited, varint, fixed32). The mapping's copy of the graph's headers is
        // zeroed (a tag of 0 is no field): the parse sees them only through the read.
        proto_builder large;
        const std::vector<std::byte> payload(16 * 1024, std::byte{1});
        fill_large_graph(large, [&payload](proto_builder& g, std::size_t i) {
            proto_builder t;
            t.varint_field(1, payload.size() / 4).varint_field(2, 1).string_field(8, "w" + std::to_string(i));
            t.bytes_field(9, payload);
            g.message_field(5, t).bytes_field(100000, std::span(payload).first(i % 3));
            g.varint_field(100001, std::uint64_t{1} << 40).fixed32_field(100002, static_cast<std::uint32_t>(i));
        });
        const auto original = model_of(large);
        const auto expected = message_tree::parse(original, on_demand());
        REQUIRE(expected);
        auto headerless = original;
        std::size_t zeroed = 0;
        for (std::uint32_t m = 0; m < expected->messages().size(); ++m) {
            if (expected->messages()[m].kind != message_kind::graph) continue;
            for (const auto& f : expected->fields(m)) {
                std::fill(headerless.begin() + static_cast<std::ptrdiff_t>(f.header_offset()),
                          headerless.begin() + static_cast<std::ptrdiff_t>(f.payload_offset()), std::byte{0});
                ++zeroed;
            }
        }
        REQUIRE(zeroed > 500);
        REQUIRE_FALSE(message_tree::parse(headerless, on_demand()));
        options.read = [&](std::uint64_t offset, std::span<std::byte> out) {
            if (offset + out.size() > original.size()) return false;
            std::memcpy(out.data(), original.data() + offset, out.size());
            return true;
        };
        const auto tree = message_tree::parse(headerless, options);
        REQUIRE(tree);
        check_same_tree(*expected, *tree);
    }
    SUBCASE("a read that fails leaves the headers to the mapping") {
        fails = true;
        const auto tree = message_tree::parse(bytes, options);
        REQUIRE(tree);
        check_same_tree(*plain, *tree);
    }
    SUBCASE("a damaged field at the end of the graph is the same error") {
        // A last field whose length runs past the graph's end.
        auto damaged = graph;
        const std::array<std::byte, 3> cut{std::byte{0x0a}, std::byte{0x7f}, std::byte{0x00}};
        damaged.raw(cut);
        const auto damaged_bytes = model_of(damaged);
        options.read = [&](std::uint64_t offset, std::span<std::byte> out) {
            if (offset + out.size() > damaged_bytes.size()) return false;
            ++reads;
            std::memcpy(out.data(), damaged_bytes.data() + offset, out.size());
            return true;
        };
        const auto expected = message_tree::parse(damaged_bytes, on_demand());
        const auto got = message_tree::parse(damaged_bytes, options);
        REQUIRE_FALSE(expected);
        REQUIRE_FALSE(got);
        CHECK(reads >= 1);
        CHECK(got.error().code == expected.error().code);
        CHECK(got.error().message == expected.error().message);
        CHECK(got.error().offset == expected.error().offset);
        CHECK(got.error().field_path == expected.error().field_path);
    }
}
