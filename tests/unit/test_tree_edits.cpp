#include <onnxstream/onnx/tree_edits.hpp>

#include "proto_builder.hpp"
#include "tree_comparison.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>
#include <vector>

using namespace onnxstream;
using body_drop = onnx::tree_edits::body_drop;
using test_support::parse_tree;
using test_support::proto_builder;
using test_support::tensor_messages;

namespace {

// One drop in a body, for comparison: the rows (body_drop) spelled out.
struct one_drop {
    std::uint32_t message = 0;
    std::uint32_t position = 0;
    friend bool operator==(const one_drop&, const one_drop&) = default;
};

std::vector<one_drop> listed(std::span<const body_drop> rows) {
    std::vector<one_drop> out;
    for (const auto& row : rows)
        for (std::uint32_t b = 0; b < body_drop::positions; ++b)
            if (((row.bits >> b) & 1U) != 0) out.push_back({row.message, row.word * body_drop::positions + b});
    return out;
}

// A graph of `count` initializers of three fields each (dims, data_type, name).
std::vector<std::byte> tensors_model(int count) {
    proto_builder graph;
    graph.string_field(2, "g");
    for (int i = 0; i < count; ++i) {
        proto_builder tensor;
        tensor.varint_field(1, 1).varint_field(2, 1).string_field(8, "t" + std::to_string(i));
        graph.message_field(5, tensor);
    }
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    return model.take();
}

}  // namespace

TEST_CASE("drops in bodies come back sorted by message and position, each once, and per message") {
    const auto bytes = tensors_model(5);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto t = tensor_messages(lazy);
    REQUIRE(t.size() == 5);
    onnx::tree_edits edits;
    CHECK(edits.empty());
    edits.drop(lazy, t[3], 2);
    edits.drop(lazy, t[3], 1);
    edits.drop(lazy, t[1], 0);
    edits.drop(lazy, t[3], 2);  // twice, not in a row
    edits.drop(lazy, t[4], 0);
    edits.drop(lazy, t[4], 0);  // twice in a row
    CHECK_FALSE(edits.empty());
    CHECK(listed(edits.body_drops()) == std::vector<one_drop>{{t[1], 0}, {t[3], 1}, {t[3], 2}, {t[4], 0}});
    CHECK(listed(edits.body_drops(t[3])) == std::vector<one_drop>{{t[3], 1}, {t[3], 2}});
    CHECK(listed(edits.body_drops(t[1])) == std::vector<one_drop>{{t[1], 0}});
    CHECK(edits.body_drops(t[2]).empty());
    CHECK(edits.body_drops(t[4] + 1).empty());
    // A drop in a body is not a drop of a stored field of the same number.
    CHECK_FALSE(edits.dropped(2));
    CHECK(edits.dropped_fields().empty());
    // Added after a sort: sorted again.
    edits.drop(lazy, t[0], 2);
    CHECK(listed(edits.body_drops()).front() == one_drop{t[0], 2});
    CHECK(listed(edits.body_drops()).size() == 5);
    CHECK(edits.body_drops().size() == 4);  // t[3]'s two in one row
}

TEST_CASE("drops in bodies added in order stay as added") {
    const auto bytes = tensors_model(3);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto t = tensor_messages(lazy);
    onnx::tree_edits edits;
    edits.reserve(0, 0, 0, 3);
    edits.drop(lazy, t[0], 0);
    edits.drop(lazy, t[0], 2);
    edits.drop(lazy, t[2], 1);
    CHECK(listed(edits.body_drops()) == std::vector<one_drop>{{t[0], 0}, {t[0], 2}, {t[2], 1}});
    // One row a message: a tensor's drops cost 12 bytes, not 8 each.
    CHECK(edits.body_drops().size() == 2);
    CHECK(edits.body_drops()[0] == body_drop{t[0], 0, 0b101});
}

TEST_CASE("drops in bodies past position 31 take a row a word of 32 positions, kept in order and joined when apart") {
    // The positions need not exist: the rows only record them.
    const auto bytes = tensors_model(3);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto t = tensor_messages(lazy);
    onnx::tree_edits edits;
    // Positions of t[1] out of order, across three words, twice some, between drops of
    // other messages.
    for (const auto& [message, position] : std::vector<one_drop>{
             {t[1], 64}, {t[1], 31}, {t[1], 0}, {t[0], 40}, {t[1], 32}, {t[1], 31}, {t[2], 1000000}, {t[1], 95}, {t[0], 40}})
        edits.drop(lazy, message, position);
    CHECK(listed(edits.body_drops()) ==
          std::vector<one_drop>{{t[0], 40}, {t[1], 0}, {t[1], 31}, {t[1], 32}, {t[1], 64}, {t[1], 95}, {t[2], 1000000}});
    CHECK(listed(edits.body_drops(t[1])) == std::vector<one_drop>{{t[1], 0}, {t[1], 31}, {t[1], 32}, {t[1], 64}, {t[1], 95}});
    CHECK(edits.body_drops(t[1]).size() == 3);  // words 0, 1 and 2
    const auto row = edits.body_drops(t[2]);
    REQUIRE(row.size() == 1);
    CHECK(row[0].drops(1000000));
    CHECK_FALSE(row[0].drops(1000001));
    CHECK_FALSE(row[0].drops(1000000 % 32));  // another word's position
    CHECK(edits.body_drops(t[2] + 1).empty());
}

TEST_CASE("a drop by position in a message the tree stores is a drop of that field, never one in a body") {
    // The same positions in the same messages, whether the tree stored the bodies or not:
    // the planner applies body drops only to bodies it reads again, so the form must follow
    // the tree.
    const auto bytes = tensors_model(2);
    const auto full = parse_tree(bytes, onnx::tensor_fields::stored);
    const auto t = tensor_messages(full);
    REQUIRE(full.stores_fields(t[1]));
    onnx::tree_edits edits;
    edits.drop(full, t[1], 2);
    edits.drop(full, 1, 0);  // the graph's name: stored either way
    CHECK(edits.body_drops().empty());
    CHECK(edits.dropped(full.at(t[1]).first_field + 2));
    CHECK(edits.dropped(full.at(1).first_field));
    CHECK(edits.dropped_fields().size() == 2);

    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    REQUIRE_FALSE(lazy.stores_fields(t[1]));
    onnx::tree_edits in_body;
    in_body.drop(lazy, t[1], 2);
    in_body.drop(lazy, 1, 0);
    CHECK(listed(in_body.body_drops()) == std::vector<one_drop>{{t[1], 2}});
    CHECK(in_body.dropped_fields().size() == 1);
    CHECK(in_body.dropped(lazy.at(1).first_field));
}

TEST_CASE("a shared field is held once and inserted wherever it is asked for, in call order") {
    onnx::tree_edits edits;
    const auto shared = edits.add_shared(edits.varint(2, 10));
    edits.insert_shared(9, 1, shared);
    edits.insert(4, 0, edits.varint(2, 1));
    edits.insert_shared(4, 0, shared);
    const auto insertions = edits.insertions();
    REQUIRE(insertions.size() == 3);
    CHECK(insertions[0].message == 4);
    CHECK(edits.field(insertions[0]).value == 1);
    CHECK(insertions[1].message == 4);  // after the one inserted before it at the same place
    CHECK(insertions[2].message == 9);
    CHECK(insertions[2].position == 1);
    CHECK(&edits.field(insertions[1]) == &edits.field(insertions[2]));
    CHECK(edits.field(insertions[2]).number == 2);
    CHECK(edits.field(insertions[2]).value == 10);
    CHECK(edits.encoded_size(insertions[2]) == 2);
}

TEST_CASE("a run of encoded fields holds their tags, lengths and payloads, and must end the pool as it grows") {
    onnx::tree_edits edits;
    auto run = edits.encoded_fields();
    CHECK(run.length == 0);
    const std::vector<std::byte> long_payload(200, std::byte{7});
    edits.append_encoded(run, 3, long_payload);                    // tag 0x1a, length 200 in two bytes
    edits.append_encoded(run, 300, std::span<const std::byte>{});  // a two-byte tag, length 0
    CHECK(run.length == 1 + 2 + 200 + 2 + 1);
    CHECK(run.encoded_size() == run.length);
    const auto pool = edits.pool().subspan(run.offset, run.length);
    CHECK(pool[0] == std::byte{0x1a});
    CHECK(pool[1] == std::byte{0xc8});
    CHECK(pool[2] == std::byte{0x01});
    CHECK(pool[203] == std::byte{0xe2});  // (300 << 3 | 2) = 2402: 0xe2 0x12
    CHECK(pool[204] == std::byte{0x12});
    CHECK(pool[205] == std::byte{0x00});
    edits.insert(1, 0, run);
    CHECK(edits.encoded_size(edits.insertions()[0]) == run.length);
    // Once the pool took something else, the run cannot grow in place.
    (void)edits.text(8, "x");
    CHECK_THROWS_AS(edits.append_encoded(run, 3, long_payload), std::logic_error);
}

TEST_CASE("converted insertions hold one kind per field number and conversion, and neither a new_field nor bytes") {
    using onnx::float_conversion;
    onnx::tree_edits edits;
    edits.insert_converted(7, 3, 9, float_conversion::float32_to_float16);
    edits.insert_converted(5, 1, 9, float_conversion::float32_to_float16);
    edits.insert_converted(6, 0, 9, float_conversion::float32_to_bfloat16);
    edits.insert_external(8, 0, edits.add_external({"w.data", 0, 4, std::nullopt}));
    const auto insertions = edits.insertions();
    REQUIRE(insertions.size() == 4);
    CHECK(insertions[0].message == 5);
    CHECK(insertions[0].position == 1);
    REQUIRE(onnx::tree_edits::is_converted(insertions[0]));
    CHECK_FALSE(onnx::tree_edits::is_external(insertions[0]));
    CHECK(edits.converted(insertions[0]) == onnx::tree_edits::converted_field{9, float_conversion::float32_to_float16});
    CHECK(edits.converted(insertions[1]) == onnx::tree_edits::converted_field{9, float_conversion::float32_to_bfloat16});
    CHECK(insertions[2].message == 7);
    CHECK(insertions[2].what == insertions[0].what);  // the same kind, held once
    CHECK(onnx::tree_edits::is_external(insertions[3]));
    CHECK_FALSE(onnx::tree_edits::is_converted(insertions[3]));
    CHECK(edits.pool().empty());
    CHECK_FALSE(edits.empty());
}

TEST_CASE("a converted payload is 2 bytes a whole float32 value") {
    CHECK(onnx::tree_edits::converted_length(0) == 0);
    CHECK(onnx::tree_edits::converted_length(16) == 8);
    CHECK(onnx::tree_edits::converted_length(18) == 8);  // a remainder is not written
}

TEST_CASE("inlined insertions are a record of the caller's table and a check when given, neither external nor converted") {
    onnx::tree_edits edits;
    edits.set_inlined_values([](std::uint32_t record) {
        return onnx::inlined_value{1, 16ULL * record, record == 7 ? 300U : 16U};
    });
    const auto check = edits.add_check({.tensor = "b", .expected_sha1 = {}});
    edits.insert_inlined(9, 2, 7, check);
    edits.insert_inlined(4, 1, 3);
    edits.insert_external(5, 0, edits.add_external({"w.data", 0, 4, std::nullopt}));
    edits.insert_converted(6, 0, 9, onnx::float_conversion::float32_to_float16);
    edits.insert_inlined(3, 0, (1U << 30) - 1);  // the largest record
    const auto insertions = edits.insertions();
    REQUIRE(insertions.size() == 5);
    CHECK(insertions[0].message == 3);
    CHECK(insertions[1].message == 4);
    CHECK(insertions[4].message == 9);
    for (const std::size_t i : {0U, 1U, 4U}) {
        CHECK(onnx::tree_edits::is_inlined(insertions[i]));
        CHECK_FALSE(onnx::tree_edits::is_external(insertions[i]));
        CHECK_FALSE(onnx::tree_edits::is_converted(insertions[i]));
    }
    CHECK_FALSE(onnx::tree_edits::is_inlined(insertions[2]));  // external
    CHECK(onnx::tree_edits::is_external(insertions[2]));
    CHECK(edits.external(insertions[2]).location == "w.data");
    CHECK_FALSE(onnx::tree_edits::is_inlined(insertions[3]));  // converted
    CHECK(onnx::tree_edits::is_converted(insertions[3]));
    CHECK(edits.inlined(insertions[0]) == onnx::inlined_value{1, 16ULL * ((1U << 30) - 1), 16});
    CHECK(edits.inlined(insertions[1]) == onnx::inlined_value{1, 48, 16});
    CHECK(edits.inlined(insertions[4]) == onnx::inlined_value{1, 112, 300});
    CHECK(edits.inlined_check(insertions[0]) == io::no_check);
    CHECK(edits.inlined_check(insertions[1]) == io::no_check);
    CHECK(edits.inlined_check(insertions[4]) == check);
    // raw_data (9): tag, a length varint of 1 or 2 bytes, the payload.
    CHECK(edits.encoded_size(insertions[1]) == 1 + 1 + 16);
    CHECK(edits.encoded_size(insertions[4]) == 1 + 2 + 300);
    CHECK(edits.pool().empty());
    CHECK(edits.labels().empty());
}

TEST_CASE("checks of inlined insertions added out of record order are found by record") {
    onnx::tree_edits edits;
    edits.set_inlined_values([](std::uint32_t) { return onnx::inlined_value{1, 0, 4}; });
    std::vector<std::uint32_t> checks;
    for (const std::uint32_t record : {5U, 2U, 9U, 0U}) {
        checks.push_back(edits.add_check({.tensor = std::to_string(record), .expected_sha1 = {}}));
        edits.insert_inlined(record, 0, record, checks.back());
    }
    edits.insert_inlined(7, 0, 7);
    const auto insertions = edits.insertions();  // by message: records 0, 2, 5, 7, 9
    REQUIRE(insertions.size() == 5);
    CHECK(edits.inlined_check(insertions[0]) == checks[3]);
    CHECK(edits.inlined_check(insertions[1]) == checks[1]);
    CHECK(edits.inlined_check(insertions[2]) == checks[0]);
    CHECK(edits.inlined_check(insertions[3]) == io::no_check);
    CHECK(edits.inlined_check(insertions[4]) == checks[2]);
}

TEST_CASE(
    "inline_body is one row a body, by message and once a message; where the tree stores the fields, drops and an insertion") {
    const auto bytes = tensors_model(3);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto t = tensor_messages(lazy);
    REQUIRE(t.size() == 3);
    REQUIRE_FALSE(lazy.stores_fields(t[0]));
    // Record 9's value names no field to replace; the others the 2nd and 3rd (positions 1, 2).
    const auto values = [](std::uint32_t record) { return onnx::inlined_value{1, 0, 4, record == 9 ? 0U : 0b110U, 6}; };
    onnx::tree_edits edits;
    CHECK_THROWS_AS(edits.inline_body(lazy, t[0], 0), std::logic_error);  // no table yet
    CHECK(edits.empty());
    edits.set_inlined_values(values);
    edits.inline_body(lazy, t[2], 2);
    edits.inline_body(lazy, t[0], 0);
    edits.inline_body(lazy, t[2], 5);  // a second row for t[2]: the first is kept
    CHECK_FALSE(edits.empty());
    CHECK(edits.insertions().empty());
    CHECK(edits.body_drops().empty());
    using row = onnx::tree_edits::inlined_body;
    const auto rows = edits.inlined_bodies();
    CHECK(std::vector<row>(rows.begin(), rows.end()) == std::vector<row>{{t[0], 0}, {t[2], 2}});
    CHECK(edits.inlined_value_of(2) == values(2));

    const auto full = parse_tree(bytes, onnx::tensor_fields::stored);
    REQUIRE(full.stores_fields(t[1]));
    onnx::tree_edits stored;
    stored.set_inlined_values(values);
    stored.inline_body(full, t[1], 1);
    CHECK(stored.inlined_bodies().empty());
    CHECK_FALSE(stored.dropped(full.at(t[1]).first_field));
    CHECK(stored.dropped(full.at(t[1]).first_field + 1));
    CHECK(stored.dropped(full.at(t[1]).first_field + 2));
    CHECK(stored.dropped_fields().size() == 2);
    const auto insertions = stored.insertions();
    REQUIRE(insertions.size() == 1);
    CHECK(onnx::tree_edits::is_inlined(insertions[0]));
    CHECK(insertions[0].message == t[1]);
    CHECK(insertions[0].position == 1);
    CHECK(stored.inlined(insertions[0]) == values(1));
    CHECK(stored.inlined_check(insertions[0]) == io::no_check);
    CHECK_THROWS_AS(stored.inline_body(full, t[0], 9), std::logic_error);  // it would replace nothing
}
