// The helpers every rewriting operation shares: the default output name beside the input
// (DESIGN.md: model.onnx -> model.merged.onnx) and the worker count.
#include <onnxstream/ops/rewrite_options.hpp>

#include <doctest/doctest.h>

#include <thread>

using namespace onnxstream;

TEST_CASE("default_output: <stem>.<suffix>.onnx in the model's folder") {
    CHECK(ops::default_output("models/resnet/model.onnx", "merged") == std::filesystem::path("models/resnet/model.merged.onnx"));
    CHECK(ops::default_output("model.onnx", "split") == std::filesystem::path("model.split.onnx"));
    CHECK(ops::default_output("/abs/m.v2.onnx", "fp16") == std::filesystem::path("/abs/m.v2.fp16.onnx"));  // the last suffix only
    CHECK(ops::default_output("dir/weights", "merged") == std::filesystem::path("dir/weights.merged.onnx"));
}

TEST_CASE("effective_threads: the value asked for, the cores for 0, never more than 1024") {
    CHECK(ops::effective_threads(1) == 1);
    CHECK(ops::effective_threads(3) == 3);
    CHECK(ops::effective_threads(0) == std::max(1U, std::thread::hardware_concurrency()));
    CHECK(ops::effective_threads(1024) == 1024);
    CHECK(ops::effective_threads(100000) == 1024);
}
