// fold-bn and the element arithmetic under it: FLOAT16 rounding, channel layouts, the
// folded values themselves, and the cases that must be skipped.
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/passes/batchnorm_folding.hpp>

#include "test_passes_builder.hpp"

#include <bit>
#include <cmath>

using namespace onnxstream::passes;
using namespace test_passes;

TEST_CASE("FLOAT16: every finite value survives the round trip; rounding is to nearest even") {
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
        const auto h = static_cast<std::uint16_t>(bits);
        const double x = half_to_double(h);
        if (std::isnan(x)) continue;
        REQUIRE(double_to_half(x) == h);
    }
    CHECK(double_to_half(1.0) == 0x3C00);
    CHECK(double_to_half(65504.0) == 0x7BFF);
    CHECK(double_to_half(65520.0) == 0x7C00);                     // halfway to the next: ties to even, infinity
    CHECK(double_to_half(1.0 + std::ldexp(1.0, -11)) == 0x3C00);  // tie between 1 and 1+2^-10: even (1)
    CHECK(double_to_half(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3C02);
    CHECK(double_to_half(std::ldexp(1.0, -25)) == 0x0000);  // half the smallest subnormal: ties to even (0)
    CHECK(double_to_half(std::ldexp(1.5, -25)) == 0x0001);
    CHECK(double_to_half(-2.0) == 0xC000);
    CHECK(std::isnan(half_to_double(double_to_half(std::nan("")))));
}

TEST_CASE("channels of weight elements per layout") {
    const std::vector<std::int64_t> conv{4, 2, 3, 3};  // [C_out, C_in/group, k, k]
    CHECK(channel_of(channel_layout::axis0, conv, 1, 0) == 0);
    CHECK(channel_of(channel_layout::axis0, conv, 1, 17) == 0);
    CHECK(channel_of(channel_layout::axis0, conv, 1, 18) == 1);
    CHECK(channel_of(channel_layout::axis0, conv, 1, 71) == 3);
    // ConvTranspose [C_in = 4, C_out/group = 3, k = 1], group 2: C_out = 6.
    const std::vector<std::int64_t> deconv{4, 3, 1};
    CHECK(channel_of(channel_layout::conv_transpose, deconv, 2, 0) == 0);   // input 0, group 0, j 0
    CHECK(channel_of(channel_layout::conv_transpose, deconv, 2, 2) == 2);   // input 0, j 2
    CHECK(channel_of(channel_layout::conv_transpose, deconv, 2, 3) == 0);   // input 1, group 0, j 0
    CHECK(channel_of(channel_layout::conv_transpose, deconv, 2, 6) == 3);   // input 2, group 1, j 0
    CHECK(channel_of(channel_layout::conv_transpose, deconv, 2, 11) == 5);  // input 3, group 1, j 2
    // Gemm B [K = 2, N = 3] with transB = 0: the channel is the column.
    const std::vector<std::int64_t> gemm{2, 3};
    CHECK(channel_of(channel_layout::last_axis_2d, gemm, 1, 4) == 1);
    CHECK(channel_of(channel_layout::last_axis_2d, gemm, 1, 5) == 2);
}

namespace {

std::vector<float> floats_of(harness& h, std::string_view name) {
    auto& m = h.model();
    for (const auto t : m.tensors.ids()) {
        if (!m.tensor_live(t) || m.text(m.tensors[t].name) != name) continue;
        auto bytes = h.reader().tensor_bytes(m, t);
        REQUIRE(bytes);
        std::vector<float> out(bytes->size() / 4);
        std::memcpy(out.data(), bytes->data(), bytes->size());
        return out;
    }
    FAIL("no tensor " << name);
    return {};
}

std::vector<proto_builder> bn_params(std::vector<float> scale, std::vector<float> bias, std::vector<float> mean,
                                     std::vector<float> var) {
    const auto c = static_cast<std::int64_t>(scale.size());
    return {float_tensor("s", {c}, std::move(scale)), float_tensor("B", {c}, std::move(bias)),
            float_tensor("m", {c}, std::move(mean)), float_tensor("v", {c}, std::move(var))};
}

// A one-graph model reading X and giving `outputs`, and what fold-bn finds and warns on it.
struct folding {
    explicit folding(graph_spec main, std::vector<std::string> outputs = {"Y"})
        : h(model(graph(with_io(std::move(main), std::move(outputs))))) {}
    static graph_spec with_io(graph_spec main, std::vector<std::string> outputs) {
        main.inputs = {"X"};
        main.outputs = std::move(outputs);
        return main;
    }
    harness h;
    std::vector<finding> findings;
    std::vector<onnxstream::error> warnings;
};

std::uint64_t fold(harness& h, std::vector<finding>& findings, std::vector<onnxstream::error>& warnings) {
    pass_context context{h.model(), h.reader(), findings, warnings};
    return fold_batchnorms(context);
}

}  // namespace

TEST_CASE("fold-bn: Conv without bias gets W*f and (0 - mean)*f + B, under fresh names") {
    graph_spec main;
    main.nodes = {onnx_node("Conv", {"X", "W"}, {"c"}, "conv"),
                  onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"Y"}, "bn", {attr_float("epsilon", 0.0F)})};
    main.initializers = bn_params({2.0F, 1.0F}, {0.5F, -1.0F}, {1.0F, 2.0F}, {4.0F, 0.25F});
    main.initializers.push_back(float_tensor("W", {2, 1, 1, 2}, {1.0F, 2.0F, 3.0F, 4.0F}));
    folding f(std::move(main));
    auto& [h, findings, warnings] = f;
    CHECK(fold(h, findings, warnings) == 1);
    auto& m = h.model();
    CHECK(h.node_named("bn") == none);
    const auto conv = h.node_named("conv");
    REQUIRE(m.nodes[conv].inputs.size() == 3);
    CHECK(m.text(m.nodes[conv].inputs[1]) == "W_bn");
    CHECK(m.text(m.nodes[conv].inputs[2]) == "W_bn_bias");
    CHECK(m.text(m.nodes[conv].outputs[0]) == "Y");
    // f = scale / sqrt(var): 2/2 = 1, 1/0.5 = 2
    CHECK(floats_of(h, "W_bn") == std::vector<float>{1.0F, 2.0F, 6.0F, 8.0F});
    CHECK(floats_of(h, "W_bn_bias") == std::vector<float>{-0.5F, -5.0F});
    CHECK(floats_of(h, "W") == std::vector<float>{1.0F, 2.0F, 3.0F, 4.0F});  // the original is untouched
    CHECK(warnings.empty());
    // Written and read back: the Conv reads computed tensors stored in the model.
    const auto out = h.optimized({"fold-bn", "dce"});
    CHECK(out->op_counts() == std::map<std::string, int>{{"Conv", 1}});
    CHECK(floats_of(*out, "W_bn") == std::vector<float>{1.0F, 2.0F, 6.0F, 8.0F});
    CHECK(floats_of(*out, "W_bn_bias") == std::vector<float>{-0.5F, -5.0F});
}

TEST_CASE("fold-bn: Gemm with transB = 0, alpha, beta and C") {
    graph_spec main;
    main.nodes = {onnx_node("Gemm", {"X", "W", "C"}, {"g"}, "gemm", {attr_float("alpha", 0.5F), attr_float("beta", 2.0F)}),
                  onnx_node("BatchNormalization", {"g", "s", "B", "m", "v"}, {"Y"}, "bn", {attr_float("epsilon", 0.0F)})};
    main.initializers = bn_params({2.0F, 3.0F}, {1.0F, 1.0F}, {0.0F, 1.0F}, {1.0F, 1.0F});
    main.initializers.push_back(float_tensor("W", {2, 2}, {1.0F, 2.0F, 3.0F, 4.0F}));  // [K, N]
    main.initializers.push_back(float_tensor("C", {2}, {1.0F, -1.0F}));
    folding f(std::move(main));
    auto& [h, findings, warnings] = f;
    CHECK(fold(h, findings, warnings) == 1);
    CHECK(floats_of(h, "W_bn") == std::vector<float>{2.0F, 6.0F, 6.0F, 12.0F});  // columns scaled by 2 and 3
    // C' = f * (beta*C - mean) + B = 2*(2) + 1, 3*(-2 - 1) + 1
    CHECK(floats_of(h, "W_bn_bias") == std::vector<float>{5.0F, -8.0F});
    CHECK(!h.model().attribute(h.node_named("gemm"), "beta"));  // beta is 1 now
    CHECK(h.model().attribute(h.node_named("gemm"), "alpha"));  // alpha stays
}

TEST_CASE("fold-bn: negative variance folds where var + eps > 0, is clamped with a warning where not") {
    graph_spec main;
    main.nodes = {onnx_node("Conv", {"X", "W"}, {"c"}, "conv"),
                  onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"Y"}, "the_bn", {attr_float("epsilon", 0.25F)})};
    main.initializers = bn_params({1.0F, 1.0F}, {0.0F, 0.0F}, {0.0F, 0.0F}, {-0.25F + 1.0F, -1.0F});
    main.initializers.push_back(float_tensor("W", {2, 1, 1, 1}, {1.0F, 1.0F}));
    folding f(std::move(main));
    auto& [h, findings, warnings] = f;
    CHECK(fold(h, findings, warnings) == 1);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].message.find("the_bn") != std::string::npos);
    CHECK(warnings[0].message.find("channel 1") != std::string::npos);
    CHECK(floats_of(h, "W_bn") == std::vector<float>{1.0F, 2.0F});  // 1/sqrt(1), 1/sqrt(0 + 0.25)
}

TEST_CASE("fold-bn skips and says why") {
    auto skipped_reason = [](graph_spec spec) {
        spec.inputs.push_back("X");
        auto params = bn_params({1.0F}, {0.0F}, {0.0F}, {1.0F});
        spec.initializers.insert(spec.initializers.end(), params.begin(), params.end());
        spec.initializers.push_back(float_tensor("W", {1, 1, 1, 1}, {1.0F}));
        harness h(model(graph(spec), 15));
        std::vector<finding> findings;
        std::vector<onnxstream::error> warnings;
        CHECK(fold(h, findings, warnings) == 0);
        std::string reasons;
        for (const auto& f : findings)
            if (f.kind == finding_kind::skipped) reasons += f.detail + ";";
        return reasons;
    };
    graph_spec training;
    training.nodes = {onnx_node("Conv", {"X", "W"}, {"c"}),
                      onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"Y"}, "bn", {attr_int("training_mode", 1)})};
    training.outputs = {"Y"};
    CHECK(skipped_reason(training).find("training_mode") != std::string::npos);

    graph_spec used_twice;
    used_twice.nodes = {onnx_node("Conv", {"X", "W"}, {"c"}),
                        onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"Y"}, "bn"), onnx_node("Relu", {"c"}, {"Z"})};
    used_twice.outputs = {"Y", "Z"};
    CHECK(skipped_reason(used_twice).find("also used elsewhere") != std::string::npos);

    graph_spec not_constant;
    not_constant.nodes = {onnx_node("Conv", {"X", "X2"}, {"c"}),
                          onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"Y"}, "bn")};
    not_constant.inputs = {"X2"};
    not_constant.outputs = {"Y"};
    CHECK(skipped_reason(not_constant).find("not a constant") != std::string::npos);

    graph_spec after_relu;
    after_relu.nodes = {onnx_node("Relu", {"X"}, {"c"}), onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"Y"}, "bn")};
    after_relu.outputs = {"Y"};
    CHECK(skipped_reason(after_relu).find("comes from Relu") != std::string::npos);

    graph_spec stats_used;
    stats_used.nodes = {onnx_node("Conv", {"X", "W"}, {"c"}),
                        onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"Y", "rm"}, "bn")};
    stats_used.outputs = {"Y", "rm"};
    CHECK(skipped_reason(stats_used).find("running mean") != std::string::npos);
}

TEST_CASE("fold-bn: one weight shared by two Convs gets a folded copy for each") {
    graph_spec main;
    main.nodes = {onnx_node("Conv", {"X", "W"}, {"ca"}, "conv_a"),
                  onnx_node("BatchNormalization", {"ca", "s", "B", "m", "v"}, {"Y1"}, "bn_a"),
                  onnx_node("Conv", {"X", "W"}, {"cb"}, "conv_b"),
                  onnx_node("BatchNormalization", {"cb", "s2", "B", "m", "v"}, {"Y2"}, "bn_b")};
    main.initializers = bn_params({2.0F}, {0.0F}, {0.0F}, {1.0F});
    main.initializers.push_back(float_tensor("s2", {1}, {3.0F}));
    main.initializers.push_back(float_tensor("W", {1, 1, 1, 1}, {1.0F}));
    folding f(std::move(main), {"Y1", "Y2"});
    auto& [h, findings, warnings] = f;
    CHECK(fold(h, findings, warnings) == 2);
    const auto& m = h.model();
    const auto wa = m.text(m.nodes[h.node_named("conv_a")].inputs[1]);
    const auto wb = m.text(m.nodes[h.node_named("conv_b")].inputs[1]);
    CHECK(wa != wb);
    CHECK(floats_of(h, std::string(wa))[0] == doctest::Approx(2.0 / std::sqrt(1.0 + 1e-5)));
    CHECK(floats_of(h, std::string(wb))[0] == doctest::Approx(3.0 / std::sqrt(1.0 + 1e-5)));
    CHECK(floats_of(h, "W")[0] == 1.0F);
}

TEST_CASE("fold-bn: two BatchNormalizations in a row fold into one weight, over two runs") {
    graph_spec main;
    main.nodes = {onnx_node("Conv", {"X", "W", "b"}, {"c"}, "conv"),
                  onnx_node("BatchNormalization", {"c", "s", "B", "m", "v"}, {"n"}, "bn1", {attr_float("epsilon", 0.0F)}),
                  onnx_node("BatchNormalization", {"n", "s2", "B", "m", "v"}, {"Y"}, "bn2", {attr_float("epsilon", 0.0F)})};
    main.initializers = bn_params({2.0F}, {1.0F}, {0.0F}, {1.0F});
    main.initializers.push_back(float_tensor("s2", {1}, {3.0F}));
    main.initializers.push_back(float_tensor("W", {1, 1, 1, 2}, {1.0F, -2.0F}));
    main.initializers.push_back(float_tensor("b", {1}, {0.5F}));
    folding f(std::move(main));
    auto& [h, findings, warnings] = f;
    CHECK(fold(h, findings, warnings) == 1);  // bn2 waits: its input came from bn1
    CHECK(fold(h, findings, warnings) == 1);
    const auto& m = h.model();
    const auto conv = h.node_named("conv");
    CHECK(m.text(m.nodes[conv].outputs[0]) == "Y");
    const auto weight = std::string(m.text(m.nodes[conv].inputs[1]));
    // Both factors, 2 then 3, applied to the original weight in one step.
    CHECK(floats_of(h, weight) == std::vector<float>{6.0F, -12.0F});
    // bias: ((0.5 - 0) * 2 + 1 - 0) * 3 + 1
    CHECK(floats_of(h, std::string(m.text(m.nodes[conv].inputs[2]))) == std::vector<float>{7.0F});
}
