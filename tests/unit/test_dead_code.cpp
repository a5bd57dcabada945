// dce: liveness through subgraphs, isolated components, unused initializers, value_info
// and local functions.
#include <onnxstream/passes/dead_code.hpp>

#include "test_passes_builder.hpp"

using namespace onnxstream::passes;
using namespace test_passes;

namespace {

std::uint64_t run_dce(harness& h, std::vector<finding>& findings) {
    std::vector<onnxstream::error> warnings;
    pass_context context{h.model(), h.reader(), findings, warnings};
    return eliminate_dead_code(context);
}

}  // namespace

TEST_CASE("dce keeps what a subgraph reads from outside and removes what nothing reads") {
    graph_spec body;
    body.nodes = {onnx_node("Add", {"v", "outer"}, {"v_next"}, "body_add"), onnx_node("Neg", {"v"}, {"body_dead"}, "body_dead"),
                  onnx_node("Identity", {"cond"}, {"cond_out"}, "body_cond")};
    body.inputs = {"i", "cond", "v"};
    body.outputs = {"cond_out", "v_next"};
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"outer"}, "outer_relu"),  // read only inside the body
                  onnx_node("Sigmoid", {"X"}, {"dead"}, "dead_sigmoid"),
                  onnx_node("Loop", {"M", "", "X"}, {"Y"}, "loop", {attr_graph("body", graph(body, "body"))})};
    main.initializers = {int64_tensor("M", 2), float_tensor("unused", {2}, {1.0F, 2.0F})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    main.value_infos = {"dead", "outer"};
    harness h(model(graph(main)));
    std::vector<finding> findings;
    CHECK(run_dce(h, findings) > 0);
    auto& m = h.model();
    CHECK(h.node_named("outer_relu") != none);
    CHECK(h.node_named("loop") != none);
    CHECK(h.node_named("dead_sigmoid") == none);
    CHECK(h.node_named("body_dead") == none);
    CHECK(h.node_named("body_add") != none);
    // The unused initializer went, with its bytes counted; M stays.
    std::uint64_t bytes = 0;
    for (const auto& f : findings)
        if (f.kind == finding_kind::unused_initializer) bytes += f.bytes;
    CHECK(bytes == 8);
    CHECK(m.scopes[main_scope].initializers.size() == 1);
    // value_info of 'dead' went, 'outer' stayed.
    std::vector<std::string> infos;
    for (const auto v : m.scopes[main_scope].value_infos) infos.emplace_back(m.text(m.value_infos[v].name));
    CHECK(infos == std::vector<std::string>{"outer"});
    // The body changed (a node removed): its owner must be re-encoded.
    CHECK(m.scopes[scope_id{1}].changed);
    // A second run finds nothing more.
    findings.clear();
    CHECK(run_dce(h, findings) == 0);
}

TEST_CASE("isolated components: dead nodes connected to neither inputs nor outputs") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"Y"}, "live"),
                  // dead, but hanging off a live value: not isolated
                  onnx_node("Neg", {"Y"}, {"n1"}, "hanging"), onnx_node("Abs", {"n1"}, {"n2"}, "hanging2"),
                  // five nodes fed only by constants
                  onnx_node("Constant", {}, {"k"}, "iso1", {attr_tensor("value", float_tensor("kv", {1}, {1.0F}))}),
                  onnx_node("Add", {"k", "C"}, {"i2"}, "iso2"), onnx_node("Mul", {"i2", "i2"}, {"i3"}, "iso3"),
                  onnx_node("Sigmoid", {"i3"}, {"i4"}, "iso4"), onnx_node("Neg", {"i4"}, {"i5"}, "iso5"),
                  // dead and reading a graph input: not isolated
                  onnx_node("Exp", {"X"}, {"e"}, "reads_input")};
    main.initializers = {float_tensor("C", {1}, {3.0F})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    const graph_index index(h.model());
    const auto live = compute_liveness(h.model(), index);
    CHECK(live.node[h.node_named("live")]);
    CHECK(!live.node[h.node_named("hanging")]);
    const auto components = isolated_components(h.model(), index, live);
    REQUIRE(components.size() == 1);
    CHECK(components[0].nodes.size() == 5);
}

TEST_CASE("dce removes local functions nothing calls, and keeps those a live node calls") {
    auto function = [](std::string_view name, std::string_view op) {
        proto_builder f;
        proto_builder opset_import;
        opset_import.string_field(1, "").varint_field(2, 13);
        f.string_field(1, name).string_field(4, "x").string_field(5, "y");
        f.message_field(7, onnx_node(op, {"x"}, {"y"}));
        f.message_field(9, opset_import).string_field(10, "local");
        return f;
    };
    graph_spec main;
    main.nodes = {onnx_node("Twice", {"X"}, {"Y"}, "call", {}, "local"),
                  onnx_node("Unused", {"X"}, {"Z"}, "dead_call", {}, "local")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main), 13, {function("Twice", "Relu"), function("Unused", "Neg"), function("Never", "Abs")}));
    std::vector<finding> findings;
    (void)run_dce(h, findings);
    auto& m = h.model();
    REQUIRE(m.functions.size() == 3);
    CHECK(!m.functions[function_id{0}].removed);
    CHECK(m.functions[function_id{1}].removed);
    CHECK(m.functions[function_id{2}].removed);
    CHECK(h.node_named("dead_call") == none);
}

TEST_CASE("dce keeps initializers that are graph inputs, and pinned training values") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"Y"})};
    main.initializers = {float_tensor("default", {1}, {1.0F})};
    main.inputs = {"X", "default"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    std::vector<finding> findings;
    CHECK(run_dce(h, findings) == 0);
    CHECK(h.model().scopes[main_scope].initializers.size() == 1);
}

namespace {

// Counts what dce says it will add before it adds it.
struct announced_list {
    std::uint64_t reserved = 0;
    std::uint64_t bytes_each = 0;
    std::vector<finding> added;
    void add(const finding& f) { added.push_back(f); }
    void reserve(std::uint64_t count, std::uint64_t bytes) {
        CHECK(added.empty());  // told before the first finding
        reserved += count;
        bytes_each = bytes;
    }
};

}  // namespace

TEST_CASE("dce tells the list how many unused initializers it reports before reporting them") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"Y"})};
    main.initializers = {float_tensor("unused_one", {1}, {1.0F}), float_tensor("unused_two", {2}, {1.0F, 2.0F})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    announced_list list;
    std::vector<onnxstream::error> warnings;
    pass_context context{h.model(), h.reader(), list, warnings};
    CHECK(eliminate_dead_code(context) == 2);
    CHECK(list.reserved == 2);
    CHECK(list.bytes_each == std::string("unused_one").size() + 16 + 1);
    REQUIRE(list.added.size() == 2);
    CHECK(list.added[0].names == std::vector<std::string>{"unused_one"});
    CHECK(list.added[1].names == std::vector<std::string>{"unused_two"});
    CHECK(list.added[1].bytes == 8);
}
