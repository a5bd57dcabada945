// evaluate_onnx, the reference --check holds OpenCV's run of a Caffe export against, on a
// Conv -> Relu -> Flatten -> Gemm chain whose values numpy computed (a 2x2 correlation of
// 1..9, plus the bias; max(0, .); flat @ B.T + C). ONNX Runtime checks it end to end in
// tests/e2e/test_export_caffe.py.
#include <onnxstream/caffe/reference_evaluator.hpp>

#include "test_passes_builder.hpp"

using namespace onnxstream;
using namespace test_passes;

namespace {

std::vector<std::byte> chain_model(std::string_view last_op = "Gemm") {
    graph_spec main;
    main.nodes = {onnx_node("Conv", {"X", "W", "bias"}, {"conv"}, "conv", {attr_ints("kernel_shape", {2, 2})}),
                  onnx_node("Relu", {"conv"}, {"relu"}, "relu"),
                  onnx_node("Flatten", {"relu"}, {"flat"}, "flatten", {attr_int("axis", 1)}),
                  onnx_node(last_op, {"flat", "B", "C"}, {"Y"}, "gemm", {attr_int("transB", 1)})};
    main.initializers = {float_tensor("W", {1, 1, 2, 2}, {1, -2, 3, -4}), float_tensor("bias", {1}, {12}),
                         float_tensor("B", {2, 4}, {1, 2, 3, 4, -1, 0.5F, 0, 2}), float_tensor("C", {2}, {0.25F, -1})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    return model(test_passes::graph(main));
}

std::map<std::string, caffe::dense_tensor> one_to_nine() {
    return {{"X", caffe::dense_tensor{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}}};
}

}  // namespace

TEST_CASE("every value of the chain, as numpy computes it") {
    harness h(chain_model());
    const auto values = caffe::evaluate_onnx(h.model(), h.reader(), one_to_nine());
    REQUIRE(values);
    const auto& conv = values->at("conv");
    CHECK(conv.shape == std::vector<std::int64_t>{1, 1, 2, 2});
    CHECK(conv.values == std::vector<double>{1, -1, -5, -7});
    CHECK(values->at("relu").values == std::vector<double>{1, 0, 0, 0});
    CHECK(values->at("flat").shape == std::vector<std::int64_t>{1, 4});
    const auto& y = values->at("Y");
    CHECK(y.shape == std::vector<std::int64_t>{1, 2});
    REQUIRE(y.values.size() == 2);
    CHECK(y.values[0] == doctest::Approx(1.25));
    CHECK(y.values[1] == doctest::Approx(-2.0));
}

TEST_CASE("an operator it does not evaluate is named in an `unsupported` error") {
    harness h(chain_model("NoSuchOp"));
    const auto values = caffe::evaluate_onnx(h.model(), h.reader(), one_to_nine());
    REQUIRE_FALSE(values);
    CHECK(values.error().code == error_code::unsupported);
    CHECK(values.error().message.find("NoSuchOp") != std::string::npos);
}

// Hostile sizes (issue 29 item 1: dims [1,3,2^62,4] made --check index past its tensors):
// each is an error, never a read or write outside a tensor. These run under ASan in the
// unit stage of scripts/test.sh.
namespace {

std::vector<std::byte> one_node_model(proto_builder node, std::vector<proto_builder> initializers = {}) {
    graph_spec main;
    main.nodes = {std::move(node)};
    main.initializers = std::move(initializers);
    main.inputs = {"X"};
    main.outputs = {"Y"};
    return model(test_passes::graph(main));
}

caffe::dense_tensor ones(std::vector<std::int64_t> shape) {
    std::size_t count = 1;
    for (const auto d : shape) count *= static_cast<std::size_t>(d);
    return caffe::dense_tensor{std::move(shape), std::vector<double>(count, 1.0)};
}

}  // namespace

TEST_CASE("hostile: an input of dims [1,3,2^62,4] (its count wraps to 0) is refused, not indexed") {
    harness h(one_node_model(onnx_node("Relu", {"X"}, {"Y"}, "relu")));
    const auto values = caffe::evaluate_onnx(h.model(), h.reader(),
                                             {{"X", caffe::dense_tensor{{1, 3, std::int64_t{1} << 62, 4}, {}}}});
    REQUIRE_FALSE(values);
    CHECK(values.error().code == error_code::limit_exceeded);
    CHECK(values.error().message.find("4611686018427387904") != std::string::npos);
}

TEST_CASE("hostile: an input whose values do not match its shape is refused") {
    harness h(one_node_model(onnx_node("Relu", {"X"}, {"Y"}, "relu")));
    const auto values = caffe::evaluate_onnx(h.model(), h.reader(), {{"X", caffe::dense_tensor{{2, 3}, {1, 2}}}});
    REQUIRE_FALSE(values);
    CHECK(values.error().code == error_code::invalid_argument);
}

TEST_CASE("hostile: tensors past evaluation_limits are refused before they are allocated") {
    harness h(one_node_model(onnx_node("Concat", {"X", "X"}, {"Y"}, "concat", {attr_int("axis", 0)})));
    caffe::evaluation_limits limits;
    limits.max_tensor_elements = 100;
    limits.max_total_elements = 1000;
    CHECK(caffe::evaluate_onnx(h.model(), h.reader(), {{"X", ones({60})}}, limits).error().code == error_code::limit_exceeded);
    limits.max_tensor_elements = 1000;
    limits.max_total_elements = 150;
    const auto total = caffe::evaluate_onnx(h.model(), h.reader(), {{"X", ones({60})}}, limits);
    REQUIRE_FALSE(total);
    CHECK(total.error().message.find("at once") != std::string::npos);
    limits.max_total_elements = 1000;
    CHECK(caffe::evaluate_onnx(h.model(), h.reader(), {{"X", ones({60})}}, limits));
}

TEST_CASE("hostile: Conv strides, pads and group past what indexing can hold are errors") {
    const auto w = float_tensor("W", {1, 1, 1, 1}, {1});
    for (const auto& bad : {attr_ints("strides", {std::int64_t{1} << 40, 1}), attr_ints("pads", {0, 0, std::int64_t{1} << 62, 0}),
                            attr_ints("dilations", {0, 1}), attr_int("group", 0), attr_ints("strides", {1})}) {
        harness h(one_node_model(onnx_node("Conv", {"X", "W"}, {"Y"}, "conv", {bad}), {w}));
        const auto values = caffe::evaluate_onnx(h.model(), h.reader(), {{"X", ones({1, 1, 3, 3})}});
        REQUIRE_FALSE(values);
        CHECK(values.error().code == error_code::invalid_argument);
    }
}

TEST_CASE("hostile: a Conv weight that does not match the input channels is an error") {
    harness h(one_node_model(onnx_node("Conv", {"X", "W"}, {"Y"}, "conv"), {float_tensor("W", {1, 4, 1, 1}, {1, 1, 1, 1})}));
    CHECK_FALSE(caffe::evaluate_onnx(h.model(), h.reader(), {{"X", ones({1, 1, 3, 3})}}));
}

TEST_CASE("hostile: axes, perms and split sizes out of range are errors") {
    const std::vector<std::pair<proto_builder, std::vector<proto_builder>>> nodes{
        {onnx_node("Gather", {"X", "i"}, {"Y"}, "gather", {attr_int("axis", 7)}), {int64_tensor("i", 0)}},
        {onnx_node("Concat", {"X", "X"}, {"Y"}, "concat", {attr_int("axis", -9)}), {}},
        {onnx_node("Softmax", {"X"}, {"Y"}, "softmax", {attr_int("axis", 4)}), {}},
        {onnx_node("Flatten", {"X"}, {"Y"}, "flatten", {attr_int("axis", 5)}), {}},
        {onnx_node("Transpose", {"X"}, {"Y"}, "transpose", {attr_ints("perm", {0, 1, 2, 9})}), {}},
        {onnx_node("Transpose", {"X"}, {"Y"}, "transpose", {attr_ints("perm", {0, 0, 1, 2})}), {}},
        {onnx_node("Split", {"X"}, {"Y"}, "split", {attr_int("axis", 3), attr_ints("split", {99})}), {}},
        {onnx_node("Unsqueeze", {"X"}, {"Y"}, "unsqueeze", {attr_ints("axes", {1, 1})}), {}},
        {onnx_node("Unsqueeze", {"X"}, {"Y"}, "unsqueeze", {attr_ints("axes", {40})}), {}},
        {onnx_node("LRN", {"X"}, {"Y"}, "lrn", {attr_int("size", 0)}), {}},
        {onnx_node("MaxPool", {"X"}, {"Y"}, "pool", {attr_ints("kernel_shape", {std::int64_t{1} << 50, 1})}), {}},
    };
    for (const auto& [node, initializers] : nodes) {
        harness h(one_node_model(node, initializers));
        const auto values = caffe::evaluate_onnx(h.model(), h.reader(), {{"X", ones({1, 2, 3, 3})}});
        CHECK_FALSE(values);
    }
}

TEST_CASE("hostile: MatMul by a B with K = 0, and Reshape inferring from 0, are errors, not divisions by zero") {
    {
        harness h(one_node_model(onnx_node("MatMul", {"X", "B"}, {"Y"}, "matmul"), {float_tensor("B", {0, 2}, {})}));
        CHECK_FALSE(caffe::evaluate_onnx(h.model(), h.reader(), {{"X", caffe::dense_tensor{{2, 0}, {}}}}));
    }
    {
        graph_spec main;
        main.nodes = {onnx_node("Reshape", {"X", "s"}, {"Y"}, "reshape", {attr_int("allowzero", 1)})};
        std::vector<std::byte> raw(16);
        const std::int64_t dims[2] = {0, -1};
        std::memcpy(raw.data(), dims, 16);
        proto_builder shape;
        shape.varint_field(1, 2).varint_field(2, 7).string_field(8, "s").bytes_field(9, raw);
        main.initializers = {shape};
        main.inputs = {"X"};
        main.outputs = {"Y"};
        harness h(model(test_passes::graph(main)));
        CHECK_FALSE(caffe::evaluate_onnx(h.model(), h.reader(), {{"X", ones({2, 3})}}));
    }
}
