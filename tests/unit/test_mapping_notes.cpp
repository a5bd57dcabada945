// What the Caffe mapping says about itself (caffe/mapping_notes.hpp), as export_caffe
// reports it: the dialect changes the layers and the decisions, each decision names its
// kind and the layer it concerns, and every node with no exact Caffe form is one refusal
// (op, node, why, what to try), all of them listed in one run.
#include <onnxstream/caffe/mapping_notes.hpp>
#include <onnxstream/ops/export_caffe.hpp>

#include "caffe_export_support.hpp"
#include "test_passes_builder.hpp"

#include <algorithm>

using namespace onnxstream;
using namespace test_passes;

namespace {

// X -> Clip(0, 6) -> Y: one ReLU6 in OpenCV's Caffe, a composition in BVLC's.
std::vector<std::byte> relu6_model() {
    graph_spec main;
    main.nodes = {onnx_node("Clip", {"X", "lo", "hi"}, {"Y"}, "clip")};
    main.initializers = {float_tensor("lo", {}, {0}), float_tensor("hi", {}, {6})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    return model(test_passes::graph(main));
}

ops::export_caffe_report exported(harness& h, caffe::dialect target) {
    ops::export_caffe_options options;
    options.output = h.folder().path() / (target == caffe::dialect::bvlc ? "bvlc" : "opencv");
    options.dialect = target;
    options.input_shapes["X"] = {1, 2, 3, 3};
    options.backend = io::writer_backend::portable;
    auto report = ops::export_caffe(h.path(), options);
    REQUIRE(report);
    return std::move(report).value();
}

std::vector<std::string> layer_types(const ops::export_caffe_report& r) {
    std::vector<std::string> types;
    for (const auto& layer : r.layers) types.push_back(layer.type);
    return types;
}

std::vector<const caffe::decision*> of_kind(const ops::export_caffe_report& r, std::string_view kind) {
    std::vector<const caffe::decision*> found;
    for (const auto& d : r.decisions)
        if (d.kind == kind) found.push_back(&d);
    return found;
}

}  // namespace

TEST_CASE("the dialect decides the layers, and a composition is a decision naming its layer") {
    harness h(relu6_model());
    const auto opencv = exported(h, caffe::dialect::opencv);
    REQUIRE(opencv.written);
    CHECK(opencv.dialect == "opencv");
    const auto opencv_types = layer_types(opencv);
    CHECK(std::count(opencv_types.begin(), opencv_types.end(), "ReLU6") == 1);
    CHECK(of_kind(opencv, "composition").empty());

    const auto bvlc = exported(h, caffe::dialect::bvlc);
    REQUIRE(bvlc.written);
    CHECK(bvlc.dialect == "bvlc");
    const auto bvlc_types = layer_types(bvlc);
    CHECK(std::count(bvlc_types.begin(), bvlc_types.end(), "ReLU6") == 0);
    CHECK(std::count(bvlc_types.begin(), bvlc_types.end(), "ReLU") == 2);
    CHECK(std::count(bvlc_types.begin(), bvlc_types.end(), "Power") == 2);
    const auto compositions = of_kind(bvlc, "composition");
    REQUIRE(compositions.size() == 1);
    CHECK(compositions[0]->detail.find("ReLU6") != std::string::npos);
    // The layer it concerns is one the export wrote: the last of the composition.
    CHECK(compositions[0]->layer == bvlc.layers.back().name);
}

TEST_CASE("the input shapes given are decisions too, one per input, with no layer") {
    harness h(relu6_model());
    const auto report = exported(h, caffe::dialect::opencv);
    const auto shapes = of_kind(report, "input-shape");
    REQUIRE(shapes.size() == 1);
    CHECK(shapes[0]->layer == "X");  // the input's name
    CHECK(shapes[0]->detail.find("as given") != std::string::npos);
    CHECK(shapes[0]->detail.find('3') != std::string::npos);
}

TEST_CASE("each node without an exact Caffe form is one refusal, and mapping goes on to list them all") {
    graph_spec main;
    main.nodes = {onnx_node("NonZero", {"X"}, {"a"}, "first"), onnx_node("Relu", {"X"}, {"b"}, "fine"),
                  onnx_node("Mystery", {"b"}, {"c"}, "custom", {}, "com.example")};
    main.inputs = {"X"};
    main.outputs = {"a", "c"};
    harness h(model(test_passes::graph(main)));
    const auto report = export_net(h, {1, 4});
    REQUIRE(report);
    CHECK_FALSE(report->written);
    REQUIRE(report->refusals.size() == 2);
    const auto& non_zero = report->refusals[0];
    CHECK(non_zero.op_type == "NonZero");
    CHECK(non_zero.node == "first");
    CHECK_FALSE(non_zero.why.empty());
    CHECK_FALSE(non_zero.hint.empty());
    const auto& custom = report->refusals[1];
    CHECK(custom.op_type == "Mystery");
    CHECK(custom.node == "custom");
    CHECK(custom.why.find("com.example") != std::string::npos);  // the domain is why
    CHECK(custom.hint == "export a model with standard ONNX operators");
}
