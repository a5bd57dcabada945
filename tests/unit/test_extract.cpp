// extract on a small model built field by field: which nodes and initializers are kept,
// the new interface (an intermediate value typed by inference), and the refusals that
// write nothing. The real models, python-onnx's extract_model beside it and ONNX Runtime
// are in e2e test_extract.py.
#include <onnxstream/ops/extract.hpp>
#include <onnxstream/ops/inspect.hpp>

#include "rewrite_fixtures.hpp"
#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

// x [4] -> Relu -> y; z = y + W; u = x * V; w = Neg(x), which nothing reads.
// Graph outputs z and u.
fs::path two_paths(const temp_folder& dir) {
    using namespace onnx_fields;
    const auto w = ramp(4);
    const auto v = ramp(4, 10.0F);
    proto_builder graph;
    graph.message_field(graph_node, node("Relu", {"x"}, {"y"}, {}, "relu"));
    graph.message_field(graph_node, node("Add", {"y", "W"}, {"z"}, {}, "add"));
    graph.message_field(graph_node, node("Mul", {"x", "V"}, {"u"}, {}, "mul"));
    graph.message_field(graph_node, node("Neg", {"x"}, {"w"}, {}, "neg"));
    graph.string_field(graph_name, "g");
    graph.message_field(graph_initializer, raw_tensor("W", {4}, w));
    graph.message_field(graph_initializer, raw_tensor("V", {4}, v));
    graph.message_field(graph_input, float_value_info("x", {4}));
    graph.message_field(graph_output, float_value_info("z", {4}));
    graph.message_field(graph_output, float_value_info("u", {4}));
    proto_builder opset;
    opset.string_field(1, "").varint_field(2, 13);
    proto_builder m;
    m.varint_field(model_ir_version, 8).string_field(model_producer, "tests").message_field(model_graph, graph);
    m.message_field(model_opset, opset);
    return write_bytes(dir.path() / "m.onnx", m.take());
}

ops::extract_options options_for(const temp_folder& dir) { return portable_options<ops::extract_options>(dir.path() / "x.onnx"); }

std::vector<std::string> names(const std::vector<ops::value_summary>& values) {
    std::vector<std::string> out;
    for (const auto& v : values) out.push_back(v.name);
    return out;
}

}  // namespace

TEST_CASE("the nodes an output needs, and only the initializers they read") {
    const temp_folder dir;
    const auto src = two_paths(dir);
    auto options = options_for(dir);
    options.outputs = {"z"};
    const auto r = ops::extract(src, options);
    REQUIRE(r);
    CHECK(r->nodes_kept == 2);     // Relu, Add
    CHECK(r->nodes_dropped == 2);  // Mul, Neg
    CHECK(r->initializers_kept == 1);
    CHECK(r->initializers_dropped == 1);
    CHECK(r->initializer_bytes_kept == 16);
    CHECK(r->storage == "embedded");
    const auto out = ops::inspect(options.output, {});
    REQUIRE(out);
    CHECK(out->main_graph_nodes == 2);
    CHECK(names(out->inputs) == std::vector<std::string>{"x"});
    CHECK(names(out->outputs) == std::vector<std::string>{"z"});
    CHECK(out->outputs[0].shape == std::vector<std::string>{"4"});  // the graph output's own ValueInfoProto
}

TEST_CASE("an intermediate value as input: typed by inference, its producer dropped") {
    const temp_folder dir;
    const auto src = two_paths(dir);
    auto options = options_for(dir);
    options.inputs = {"y"};
    options.outputs = {"z", "y"};
    const auto r = ops::extract(src, options);
    REQUIRE(r);
    CHECK(r->nodes_kept == 1);  // Add
    REQUIRE(r->inputs.size() == 1);
    CHECK(r->inputs[0].type == ops::io_type_source::inferred);
    REQUIRE(r->outputs.size() == 2);
    CHECK(r->outputs[0].type == ops::io_type_source::graph_output);
    CHECK(r->outputs[1].type == ops::io_type_source::inferred);
    const auto out = ops::inspect(options.output, {});
    REQUIRE(out);
    CHECK(names(out->inputs) == std::vector<std::string>{"y"});
    CHECK(out->inputs[0].shape == std::vector<std::string>{"4"});  // Relu keeps x's [4]
    CHECK(names(out->outputs) == std::vector<std::string>{"z", "y"});
}

TEST_CASE("refusals name the value and write nothing") {
    const temp_folder dir;
    const auto src = two_paths(dir);
    auto options = options_for(dir);
    const auto refused = [&](std::vector<std::string> inputs, std::vector<std::string> outputs, std::string_view words) {
        options.inputs = std::move(inputs);
        options.outputs = std::move(outputs);
        const auto r = ops::extract(src, options);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == error_code::invalid_argument);
        CAPTURE(r.error().message);
        CHECK(r.error().message.find(words) != std::string::npos);
        CHECK_FALSE(r.error().hint.empty());
        CHECK_FALSE(fs::exists(options.output));
    };
    refused({}, {}, "no output");
    refused({}, {"nothing"}, "'nothing'");
    refused({"nothing"}, {"z"}, "'nothing'");
    refused({"y"}, {"z", "u"}, "'x'");  // u still reads x: y does not cut the graph
    refused({}, {"z", "z"}, "twice");
}
