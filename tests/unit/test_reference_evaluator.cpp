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
