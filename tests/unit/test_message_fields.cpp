#include <onnxstream/onnx/message_fields.hpp>

#include "proto_builder.hpp"
#include "tree_comparison.hpp"

#include <doctest/doctest.h>

#include <onnxstream/onnx/tensor_walker.hpp>

#include <string_view>
#include <vector>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::parse_tree;
using test_support::proto_builder;

namespace {

proto_builder string_entry(std::string_view key, std::string_view value) {
    proto_builder e;
    e.string_field(1, key).string_field(2, value);
    return e;
}

// Three initializers: raw, typed, and external (its entries are messages inside its body).
std::vector<std::byte> three_initializers() {
    proto_builder raw;
    raw.varint_field(1, 1).varint_field(2, 1).string_field(8, "raw").bytes_field(9, test_support::float_bytes({1}));
    proto_builder typed;
    typed.varint_field(1, 2).varint_field(2, 6).string_field(8, "typed").varint_field(5, 7).varint_field(5, 8);
    proto_builder external;
    external.varint_field(1, 4).varint_field(2, 1).string_field(8, "external");
    external.message_field(13, string_entry("location", "w.bin")).message_field(13, string_entry("length", "16"));
    external.varint_field(14, 1);
    proto_builder graph;
    graph.string_field(2, "g").message_field(5, raw).message_field(5, typed).message_field(5, external);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    return model.take();
}

}  // namespace

TEST_CASE("message_fields gives a message's fields where the tree stores them or from its body read again") {
    const auto bytes = three_initializers();
    const auto full = parse_tree(bytes, tensor_fields::stored);
    const auto lazy = parse_tree(bytes, tensor_fields::on_demand);
    const auto full_sites = find_tensors(full);
    const auto lazy_sites = find_tensors(lazy);
    REQUIRE(full_sites.size() == 3);
    REQUIRE(lazy_sites.size() == 3);
    for (const auto t : lazy_sites.ids()) {
        const auto stored = message_fields::read(full, full_sites[t].message);
        auto read_again = message_fields::read(lazy, lazy_sites[t].message);
        REQUIRE(stored);
        REQUIRE(read_again);
        // Stored: the tree's own rows, not a copy.
        CHECK(stored->fields().data() == full.fields(full_sites[t].message).data());
        const auto want = stored->fields();
        auto same = [&](std::span<const field_entry> got) {
            REQUIRE(got.size() == want.size());
            for (std::size_t i = 0; i < got.size(); ++i) {
                CHECK(got[i].header_offset() == want[i].header_offset());
                CHECK(got[i].total_length() == want[i].total_length());
                CHECK(got[i].number() == want[i].number());
                CHECK(lazy.value(got[i]) == full.value(want[i]));
            }
        };
        same(read_again->fields());
        // Moved, a body's rows stay where they are.
        const auto before = read_again->fields().data();
        const message_fields moved = std::move(read_again).value();
        CHECK(moved.fields().data() == before);
        same(moved.fields());
    }
    // The graph: stored by both trees.
    const auto graph = message_fields::read(lazy, 1);
    REQUIRE(graph);
    CHECK(graph->fields().data() == lazy.fields(1).data());
}

TEST_CASE("message_fields fails on a dropped body that no longer tokenizes, and not on a stored message") {
    auto bytes = three_initializers();
    const auto lazy = parse_tree(bytes, tensor_fields::on_demand);
    const auto full = parse_tree(bytes, tensor_fields::stored);
    const auto sites = find_tensors(lazy);
    const auto m = sites[site_id::at(0)].message;
    // The file changed under the tree: the body's first tag is now a wire type protobuf has not.
    bytes[lazy.payload_range(m).offset] = std::byte{0x0F};
    const auto read = message_fields::read(lazy, m);
    REQUIRE_FALSE(read);
    CHECK(read.error().code == error_code::malformed);
    // A stored message's rows are the tree's: nothing is read again.
    CHECK(message_fields::read(full, m));
}
