// value_replacement: which values may be read through another name, and the rewiring
// itself, on hand-made graphs with a subgraph (the rules identity, cse, nop and fuse rely on).
#include <onnxstream/graph/value_replacement.hpp>

#include "test_passes_builder.hpp"

using namespace onnxstream::graph;
using namespace test_passes;

namespace {

// X -> Relu r -> Neg n -> Identity Y (graph output)
//      Relu r2 (the same as r)
//      If(c) { then: Abs(r) -> t_out (computed inside); else: outputs r directly }
std::vector<std::byte> model_with_subgraph() {
    graph_spec then_branch;
    then_branch.nodes = {onnx_node("Abs", {"r"}, {"t_out"}, "abs_inner")};
    then_branch.outputs = {"t_out"};
    graph_spec else_branch;
    else_branch.outputs = {"r"};
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"r"}, "relu"), onnx_node("Relu", {"X"}, {"r2"}, "relu_again"),
                  onnx_node("Neg", {"r2"}, {"n"}, "neg"), onnx_node("Identity", {"n"}, {"Y"}, "to_output"),
                  onnx_node("If", {"c"}, {"branch"}, "if",
                            {attr_graph("then_branch", graph(then_branch, "then")),
                             attr_graph("else_branch", graph(else_branch, "else"))})};
    main.inputs = {"X", "c"};
    main.outputs = {"Y", "branch"};
    return model(graph(main));
}

name_id name(const graph_model& m, std::string_view text) {
    const auto id = m.names.find(text);
    REQUIRE(id.has_value());
    return *id;
}

value_id value_named(const graph_model& m, const graph_index& index, std::string_view text, scope_id s = main_scope) {
    const auto v = index.resolve(s, name(m, text));
    REQUIRE(v != none);
    return v;
}

scope_id subgraph_of(const graph_model& m, node_id n, std::size_t k) {
    REQUIRE(k < m.nodes[n].subgraphs().size());
    return m.nodes[n].subgraphs()[k];
}

}  // namespace

TEST_CASE("value_replacement: the main graph's outputs are the interface; values inside are not") {
    harness h(model_with_subgraph());
    const auto& m = h.model();
    const graph_index index(m);
    CHECK(is_interface_output(m, index, value_named(m, index, "Y")));
    CHECK(is_interface_output(m, index, value_named(m, index, "branch")));
    CHECK_FALSE(is_interface_output(m, index, value_named(m, index, "r")));
    CHECK_FALSE(is_interface_output(m, index, value_named(m, index, "n")));
    // A subgraph's output is not the model's interface.
    const auto then_scope = subgraph_of(m, h.node_named("if"), 0);
    CHECK_FALSE(is_interface_output(m, index, value_named(m, index, "t_out", then_scope)));
}

TEST_CASE("value_replacement: which uses may read another value") {
    harness h(model_with_subgraph());
    const auto& m = h.model();
    const graph_index index(m);
    const auto r = value_named(m, index, "r");
    const auto r2 = value_named(m, index, "r2");
    const auto x = value_named(m, index, "X");
    // r2 is read by Neg only: it may read r (or X) instead.
    CHECK(can_replace_uses(m, index, r2, r));
    CHECK(can_replace_uses(m, index, r2, x));
    // The model's outputs never change.
    CHECK_FALSE(can_replace_uses(m, index, value_named(m, index, "Y"), value_named(m, index, "n")));
    // else_branch outputs r, a value from outside it: another outside value keeps its
    // standing, so r may become r2 there; the then_branch's own output, computed inside, may
    // not become a value from outside.
    CHECK(can_replace_uses(m, index, r, r2));
    const auto then_scope = subgraph_of(m, h.node_named("if"), 0);
    const auto t_out = value_named(m, index, "t_out", then_scope);
    CHECK_FALSE(can_replace_uses(m, index, t_out, r));
}

TEST_CASE("value_replacement: replace_uses rewires node inputs and subgraph outputs, and marks them changed") {
    harness h(model_with_subgraph());
    auto& m = h.model();
    const graph_index index(m);
    const auto neg = h.node_named("neg");
    const auto abs_inner = h.node_named("abs_inner");
    const auto else_scope = subgraph_of(m, h.node_named("if"), 1);
    REQUIRE_FALSE(m.nodes[neg].changed);
    REQUIRE_FALSE(m.scopes[else_scope].changed);

    replace_uses(m, index, value_named(m, index, "r2"), name(m, "r"));
    CHECK(m.text(m.nodes[neg].inputs[0]) == "r");
    CHECK(m.nodes[neg].changed);
    CHECK_FALSE(m.nodes[abs_inner].changed);  // it read r already

    replace_uses(m, index, value_named(m, index, "r"), name(m, "X"));
    CHECK(m.text(m.nodes[abs_inner].inputs[0]) == "X");  // a use inside a subgraph
    CHECK(m.nodes[abs_inner].changed);
    CHECK(m.text(m.scopes[else_scope].outputs[0]) == "X");  // a subgraph output
    CHECK(m.scopes[else_scope].changed);

    // Written back through optimize (the identity pass, which rewires through here), the
    // model still parses and computes the same graph shape.
    const auto out = h.optimized({"identity"});
    CHECK(out->op_counts().at("Relu") == 2);
    CHECK(out->op_counts().count("Identity") == 0);
}
