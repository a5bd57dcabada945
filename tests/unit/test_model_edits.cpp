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
                                          std::byte{0x0A}, std::byte{0x02}, std::byte{'a'}, std::byte{'b'}};
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
    CHECK(m.scopes[1].attribute == "body");
    CHECK(m.text(m.scopes[1].outputs[1]) == "v2");
}

TEST_CASE("surviving_sites follows removed nodes, scopes and initializers") {
    graph_spec then_g;
    then_g.nodes = {onnx_node("Constant", {}, {"k"}, "then_const", {attr_tensor("value", float_tensor("kv", {1}, {1.0F}))})};
    then_g.outputs = {"k"};
    graph_spec main;
    main.nodes = {onnx_node("If", {"flag"}, {"Y"}, "if", {attr_graph("then_branch", graph(then_g)), attr_graph("else_branch", graph(then_g))}),
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
