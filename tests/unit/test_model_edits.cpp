// Writing an edited graph model back: untouched bytes are copied as they were, changed
// nodes are re-encoded with their unknown fields, subgraph changes reach the output.
#include <onnxstream/graph/model_edits.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/passes/dead_code.hpp>
#include <onnxstream/proto/encoded_message.hpp>

#include "test_passes_builder.hpp"

using namespace onnxstream::passes;
using namespace test_passes;
using onnxstream::proto::encoded_message;

TEST_CASE("encoded_message: fields, nested messages and slices") {
    encoded_message inner;
    inner.text_field(1, "ab");
    encoded_message outer;
    outer.varint_field(1, 300);
    outer.message_field(2, inner);
    CHECK(!outer.has_slices());
    const std::vector<std::byte> expected{std::byte{0x08}, std::byte{0xAC}, std::byte{0x02}, std::byte{0x12}, std::byte{0x04},
                                          std::byte{0x0A}, std::byte{0x02}, std::byte{'a'},  std::byte{'b'}};
    CHECK(std::vector<std::byte>(outer.pool().begin(), outer.pool().end()) == expected);
    encoded_message sliced;
    sliced.slice_field(9, 3, 100, 5);
    CHECK(sliced.has_slices());
    CHECK(sliced.size() == 2 + 5);
    encoded_message holder;
    holder.message_field(4, sliced);
    CHECK(holder.size() == 2 + 7);
    REQUIRE(holder.pieces().size() == 2);
    CHECK(holder.pieces()[1].source == 3);
    CHECK(holder.pieces()[1].offset == 100);
}

TEST_CASE("a model the passes do not change is written byte for byte") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"Y"}, "relu")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    const auto bytes = model(graph(main));
    harness h(bytes);
    const auto out = h.optimized({});
    const auto written = test_support::read_file(h.folder().path() / "out.onnx");
    CHECK(written.size() == bytes.size());
    CHECK(std::memcmp(written.data(), bytes.data(), bytes.size()) == 0);
}

TEST_CASE("a changed node keeps its unknown fields; a subgraph change reaches the output") {
    graph_spec body;
    body.nodes = {onnx_node("Add", {"v", "v"}, {"v2"}, "body_add"), onnx_node("Neg", {"v"}, {"unused"}, "body_dead"),
                  onnx_node("Identity", {"cond"}, {"c2"}, "body_cond")};
    body.inputs = {"i", "cond", "v"};
    body.outputs = {"c2", "v2"};
    auto identity = onnx_node("Identity", {"r"}, {"r2"}, "identity");
    auto relu = onnx_node("Relu", {"r2"}, {"r3"}, "relu");
    relu.string_field(1234, "keep me");  // an unknown field on a node that will be rewired
    graph_spec main;
    main.nodes = {onnx_node("Abs", {"X"}, {"r"}, "abs"), identity, relu,
                  onnx_node("Loop", {"M", "", "r3"}, {"Y"}, "loop", {attr_graph("body", graph(body, "body"))})};
    main.initializers = {int64_tensor("M", 2)};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    const auto out = h.optimized({"dce", "identity"});
    auto& m = out->model();
    CHECK(out->node_named("body_dead") == none);
    CHECK(out->node_named("body_add") != none);
    CHECK(out->node_named("identity") == none);
    const auto r = out->node_named("relu");
    REQUIRE(r != none);
    CHECK(m.text(m.nodes[r].inputs[0]) == "r");
    const auto* unknown = m.tree().find(m.nodes[r].message, 1234);
    REQUIRE(unknown != nullptr);
    CHECK(m.tree().text(*unknown) == "keep me");
    // The body's outputs and the Loop's attribute name survived the re-encoding.
    REQUIRE(m.scopes.size() == 2);
    CHECK(m.scopes[scope_id{1}].attribute == "body");
    CHECK(m.text(m.scopes[scope_id{1}].outputs[1]) == "v2");
}

TEST_CASE("surviving_sites follows removed nodes, scopes and initializers") {
    graph_spec then_g;
    then_g.nodes = {onnx_node("Constant", {}, {"k"}, "then_const", {attr_tensor("value", float_tensor("kv", {1}, {1.0F}))})};
    then_g.outputs = {"k"};
    graph_spec main;
    main.nodes = {onnx_node("If", {"flag"}, {"Y"}, "if",
                            {attr_graph("then_branch", graph(then_g)), attr_graph("else_branch", graph(then_g))}),
                  onnx_node("Constant", {}, {"dead"}, "dead_const", {attr_tensor("value", float_tensor("dv", {1}, {2.0F}))})};
    main.initializers = {bool_tensor("flag", true), float_tensor("unused", {1}, {3.0F})};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    auto& m = h.model();
    CHECK(m.file().sites.size() == 5);
    std::vector<finding> findings;
    std::vector<onnxstream::error> warnings;
    pass_context context{m, h.reader(), findings, warnings};
    (void)eliminate_dead_code(context);
    auto survive = surviving_sites(m);
    std::size_t alive = 0;
    for (const bool s : survive) alive += s ? 1 : 0;
    CHECK(alive == 3);  // flag and both branches' constants
    m.remove_node(h.node_named("if"));
    survive = surviving_sites(m);
    alive = 0;
    for (const bool s : survive) alive += s ? 1 : 0;
    CHECK(alive == 1);  // flag
}

TEST_CASE("a set attribute replaces the one of its name, is read back and is written in its place") {
    proto_builder perm;
    perm.string_field(1, "perm").varint_field(20, 7).varint_field(8, 1).varint_field(8, 2).varint_field(8, 0);
    graph_spec main;
    main.nodes = {onnx_node("Transpose", {"X"}, {"a"}, "first", {perm}),
                  onnx_node("Transpose", {"a"}, {"Y"}, "second", {attr_int("before", 1), perm, attr_int("after", 2)})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    auto& m = h.model();
    const auto second = h.node_named("second");
    m.set_attribute(second, {"perm", std::nullopt, {0, 2, 1}});
    m.set_attribute(second, {"perm", std::nullopt, {2, 1, 0}});  // the last one set wins
    m.set_attribute(second, {"axis", -3, {}});
    REQUIRE(m.attribute(second, "perm"));
    CHECK(m.attribute(second, "perm")->ints == std::vector<std::int64_t>{2, 1, 0});
    CHECK(m.attribute(second, "axis")->i == -3);
    CHECK(m.attribute(second, "before")->i == 1);
    CHECK(m.attributes(second).size() == 4);
    CHECK(m.attribute_messages(second).size() == 2);

    // Through optimize: nop composes the two Transposes (perm [1,2,0] twice is [2,0,1]) and
    // dce drops the first; the written Transpose keeps its other attributes around the new perm.
    const auto out = h.optimized({"nop", "dce"});
    auto& written = out->model();
    CHECK(out->node_named("first") == none);
    const auto t = out->node_named("second");
    REQUIRE(t != none);
    CHECK(written.text(written.nodes[t].inputs[0]) == "X");
    std::vector<std::string> order;
    for (const auto a : written.attribute_messages(t)) order.emplace_back(read_attribute(written.tree(), a).name);
    CHECK(order == std::vector<std::string>{"before", "perm", "after"});
    const auto a = written.attribute(t, "perm");
    REQUIRE(a);
    CHECK(a->type == 7);
    CHECK(a->ints == std::vector<std::int64_t>{2, 0, 1});
}

TEST_CASE("a storage plan holds the sites it moves and the computed tensors it places, and nothing for the rest") {
    using onnxstream::graph::storage_plan;
    using onnxstream::graph::tensor_id;
    using onnxstream::onnx::site_id;
    storage_plan plan;
    CHECK(plan.site_location(site_id::at(0)) == nullptr);
    plan.move_site(site_id::at(7), {"a.data", 0, 16});
    plan.move_site(site_id::at(2), {"a.data", 16, 8});   // out of order: still found
    plan.move_site(site_id::at(7), {"b.data", 64, 16});  // again: replaced
    REQUIRE(plan.moved_sites().size() == 2);
    CHECK(plan.moved_sites()[0].first == site_id::at(2));
    CHECK(plan.moved_sites()[1].first == site_id::at(7));
    REQUIRE(plan.site_location(site_id::at(7)) != nullptr);
    CHECK(plan.site_location(site_id::at(7))->location == "b.data");
    CHECK(plan.site_location(site_id::at(7))->offset == 64);
    CHECK(plan.site_location(site_id::at(2))->length == 8);
    CHECK(plan.site_location(site_id::at(3)) == nullptr);

    const storage_plan& read_only = plan;
    CHECK(read_only.placement(tensor_id::at(5)) == nullptr);
    plan.placement(tensor_id::at(5)).length = 40;
    plan.placement(tensor_id::at(1)).data_offset = 8;
    plan.placement(tensor_id::at(5)).data_offset = 100;  // the same placement again
    REQUIRE(read_only.placement(tensor_id::at(5)) != nullptr);
    CHECK(read_only.placement(tensor_id::at(5))->length == 40);
    CHECK(read_only.placement(tensor_id::at(5))->data_offset == 100);
    CHECK(read_only.placement(tensor_id::at(1))->data_offset == 8);
    CHECK(read_only.placement(tensor_id::at(2)) == nullptr);
}
