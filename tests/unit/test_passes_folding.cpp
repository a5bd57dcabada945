// fold-constants, shape and nop on hand-made graphs, through the registry: what is folded,
// where the results go, what is left and why, and the model written back.
#include <onnxstream/passes/pass_registry.hpp>

#include "test_passes_builder.hpp"

#include <algorithm>
#include <cstring>
#include <set>

using namespace onnxstream::passes;
using namespace test_passes;

namespace {

std::uint64_t run(harness& h, std::string_view pass, std::vector<finding>& findings) {
    std::vector<onnxstream::error> warnings;
    pass_context context{h.model(), h.reader(), findings, warnings};
    const auto* entry = find_pass(pass);
    REQUIRE(entry != nullptr);
    return entry->run(context);
}

std::size_t count(const std::vector<finding>& findings, finding_kind kind) {
    return static_cast<std::size_t>(
        std::count_if(findings.begin(), findings.end(), [&](const finding& f) { return f.kind == kind; }));
}

}  // namespace

TEST_CASE("fold-constants: a chain of constants becomes one initializer; a graph output Constant stays") {
    graph_spec main;
    main.nodes = {onnx_node("Constant", {}, {"c"}, "c", {attr_tensor("value", float_tensor("cv", {2}, {1.5F, -2.0F}))}),
                  onnx_node("Add", {"c", "c"}, {"twice"}, "twice"), onnx_node("Neg", {"twice"}, {"neg"}, "neg"),
                  onnx_node("Mul", {"X", "neg"}, {"Y"}, "mul"),
                  onnx_node("Constant", {}, {"K"}, "k", {attr_tensor("value", float_tensor("kv", {1}, {3.0F}))})};
    main.inputs = {"X"};
    main.outputs = {"Y", "K"};
    harness h(model(graph(main)));
    std::vector<finding> findings;
    CHECK(run(h, "fold-constants", findings) == 3);
    CHECK(h.op_counts() == std::map<std::string, int>{{"Constant", 1}, {"Mul", 1}});
    CHECK(count(findings, finding_kind::folded_constant) == 3);
    REQUIRE(count(findings, finding_kind::skipped) == 1);
    const auto skip = std::find_if(findings.begin(), findings.end(),
                                   [](const finding& f) { return f.kind == finding_kind::skipped; });
    CHECK(skip->detail == "its output is a graph output");
    // The folded value, written back: -(c + c), one FLOAT initializer named as the output.
    const auto out = h.optimized({"fold-constants", "dce"});
    CHECK(out->op_counts() == std::map<std::string, int>{{"Constant", 1}, {"Mul", 1}});
    const auto& m = out->model();
    std::optional<tensor_id> neg;
    for (const auto t : m.tensors.ids())
        if (m.tensor_live(t) && m.text(m.tensors[t].name) == "neg") neg = t;
    REQUIRE(neg);
    const auto bytes = out->reader().tensor_bytes(m, *neg);
    REQUIRE(bytes);
    std::vector<float> values(2);
    std::memcpy(values.data(), bytes->data(), 8);
    CHECK(values == std::vector<float>{-3.0F, 4.0F});
}

TEST_CASE("fold-constants: analyze reports the whole chain and changes nothing") {
    graph_spec main;
    main.nodes = {onnx_node("Constant", {}, {"c"}, "c", {attr_tensor("value", float_tensor("cv", {1}, {2.0F}))}),
                  onnx_node("Sqrt", {"c"}, {"s"}, "sqrt"), onnx_node("Mul", {"X", "s"}, {"Y"}, "mul")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    std::vector<finding> findings;
    std::vector<onnxstream::error> warnings;
    pass_context context{h.model(), h.reader(), findings, warnings};
    find_pass("fold-constants")->analyze(context);
    CHECK(count(findings, finding_kind::folded_constant) == 2);
    CHECK(h.op_counts() == std::map<std::string, int>{{"Constant", 1}, {"Mul", 1}, {"Sqrt", 1}});
}

TEST_CASE("fold-constants: the fold limit keeps a large result a node, and says so") {
    graph_spec main;
    main.nodes = {onnx_node("ConstantOfShape", {"shape"}, {"big"}, "big"), onnx_node("Add", {"X", "big"}, {"Y"}, "add")};
    proto_builder shape;  // INT64 [2] = {512, 1024}: 2 MiB of FLOAT zeros
    shape.varint_field(1, 2).varint_field(2, 7).string_field(8, "shape");
    std::vector<std::byte> raw(16);
    const std::int64_t dims[2] = {512, 1024};
    std::memcpy(raw.data(), dims, 16);
    shape.bytes_field(9, raw);
    main.initializers = {shape};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    std::vector<finding> findings;
    CHECK(run(h, "fold-constants", findings) == 0);
    REQUIRE(count(findings, finding_kind::skipped) == 1);
    CHECK(findings[0].detail.find("fold limit") != std::string::npos);
}

TEST_CASE("nop: a Cast to the type it has goes; the registry lists every pass once") {
    graph_spec main;
    main.nodes = {onnx_node("Constant", {}, {"c"}, "c", {attr_tensor("value", float_tensor("cv", {1}, {2.0F}))}),
                  onnx_node("Cast", {"c"}, {"cast"}, "cast", {attr_int("to", 1)}), onnx_node("Mul", {"X", "cast"}, {"Y"}, "mul")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    std::vector<finding> findings;
    CHECK(run(h, "nop", findings) == 1);
    CHECK(h.op_counts() == std::map<std::string, int>{{"Constant", 1}, {"Mul", 1}});
    CHECK(count(findings, finding_kind::nop_node) == 1);
    std::set<std::string_view> names;
    for (const auto& p : pass_registry()) CHECK(names.insert(p.name).second);
    CHECK(names.size() == 9);
}
