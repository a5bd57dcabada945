// export_caffe on a Conv -> Relu -> Flatten -> Gemm chain: nothing refused, the layers in
// order, the weights copied into the .caffemodel as the model's own float bytes, and,
// where the build has OpenCV, its run of the export (opencv_runner) agreeing with the reference
// evaluator (the independent check; tests/e2e/test_export_caffe.py covers real models).
#include <onnxstream/ops/export_caffe.hpp>

#include "caffe_export_support.hpp"
#include "test_passes_builder.hpp"

using namespace onnxstream;
using namespace test_passes;

namespace {

std::vector<std::byte> chain_model() {
    graph_spec main;
    main.nodes = {onnx_node("Conv", {"X", "W", "bias"}, {"conv"}, "conv", {attr_ints("kernel_shape", {2, 2})}),
                  onnx_node("Relu", {"conv"}, {"relu"}, "relu"),
                  onnx_node("Flatten", {"relu"}, {"flat"}, "flatten", {attr_int("axis", 1)}),
                  onnx_node("Gemm", {"flat", "B", "C"}, {"Y"}, "gemm", {attr_int("transB", 1)})};
    main.initializers = {float_tensor("W", {1, 1, 2, 2}, {1, -2, 3, -4}), float_tensor("bias", {1}, {12}),
                         float_tensor("B", {2, 4}, {1, 2, 3, 4, -1, 0.5F, 0, 2}), float_tensor("C", {2}, {0.25F, -1})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    return model(test_passes::graph(main));
}

std::string floats(std::initializer_list<float> values) {
    std::string out(values.size() * 4, '\0');
    std::memcpy(out.data(), std::data(values), out.size());
    return out;
}

// The chain's export into the harness's folder, through the portable writer.
ops::export_caffe_options chain_options(const harness& h) {
    ops::export_caffe_options options;
    options.output = h.folder().path() / "net";
    options.input_shapes["X"] = {1, 1, 3, 3};
    options.backend = io::writer_backend::portable;
    return options;
}

}  // namespace

TEST_CASE("a small chain exports whole: layers in order, the model's weight bytes in the .caffemodel") {
    harness h(chain_model());
    auto options = chain_options(h);
    options.check = ops::caffe_check_available();
    const auto report = ops::export_caffe(h.path(), options);
    REQUIRE(report);
    CHECK(report->refusals.empty());
    REQUIRE(report->written);

    std::vector<std::string> types;
    for (const auto& layer : report->layers) types.push_back(layer.type);
    const auto at = [&](std::string_view type) { return std::find(types.begin(), types.end(), type) - types.begin(); };
    CHECK(at("Convolution") < at("ReLU"));
    CHECK(at("ReLU") < at("InnerProduct"));
    CHECK(at("InnerProduct") < static_cast<std::ptrdiff_t>(types.size()));

    const auto prototxt = test_support::read_file(report->prototxt);
    CHECK(prototxt.find("type: \"Convolution\"") != std::string::npos);
    CHECK(prototxt.find("type: \"InnerProduct\"") != std::string::npos);
    const auto caffemodel = test_support::read_file(report->caffemodel);
    CHECK(caffemodel.size() == report->caffemodel_size);
    CHECK(report->copied_bytes + report->computed_bytes == 60);  // 4 + 1 + 8 + 2 floats
    CHECK(caffemodel.find(floats({1, -2, 3, -4})) != std::string::npos);
    CHECK(caffemodel.find(floats({1, 2, 3, 4, -1, 0.5F, 0, 2})) != std::string::npos);  // Gemm B, [N, K] as Caffe's
    if (options.check) {
        CHECK(report->check.ran);
        CHECK(report->check.passed);
    }
    CHECK(report->digests.empty());  // digests read every byte again: only the report has them
}

TEST_CASE("the audit report digests the model and both outputs") {
    harness h(chain_model());
    auto options = chain_options(h);
    options.report = true;
    const auto report = ops::export_caffe(h.path(), options);
    REQUIRE(report);
    REQUIRE(report->written);
    std::vector<std::string> roles;
    for (const auto& d : report->digests) {
        roles.push_back(d.role);
        CHECK(d.sha256.size() == 64);
    }
    CHECK(roles == std::vector<std::string>{"model", "prototxt", "caffemodel"});
    CHECK(std::filesystem::exists(report->report_json));
}

TEST_CASE("an operator with no Caffe layer is refused and nothing is written") {
    graph_spec main;
    main.nodes = {onnx_node("NonZero", {"X"}, {"Y"}, "nonzero")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(test_passes::graph(main)));
    const auto report = export_net(h, {1, 4});
    REQUIRE(report);
    CHECK_FALSE(report->written);
    CHECK_FALSE(report->refusals.empty());
    CHECK_FALSE(std::filesystem::exists(h.folder().path() / "net.prototxt"));
    CHECK_FALSE(std::filesystem::exists(h.folder().path() / "net.caffemodel"));
}
