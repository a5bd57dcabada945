// ops::infer_shapes on a small model: the value_info it writes reads back (a second run
// replaces every entry by the same bytes), --input-shape rewrites the input's type, and
// nothing is written on error. tests/e2e/test_infer_shapes.py judges the shapes against
// python-onnx and ONNX Runtime.
#include <onnxstream/ops/infer_shapes.hpp>

#include "rewrite_fixtures.hpp"
#include "temp_folder.hpp"
#include "test_passes_builder.hpp"

using namespace onnxstream;
using namespace test_passes;
using test_support::temp_folder;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& path) { return test_support::read_file(path); }

fs::path small_model(const temp_folder& dir) {
    proto_builder g;
    g.message_field(1, onnx_node("MatMul", {"x", "w"}, {"m"}, "matmul"));
    g.message_field(1, onnx_node("Relu", {"m"}, {"r"}, "relu"));
    g.message_field(1, onnx_node("Mystery", {"r"}, {"q"}, "custom", {}, "example.domain"));
    g.message_field(1, onnx_node("Softmax", {"r"}, {"y"}, "softmax"));
    g.string_field(2, "small");
    g.message_field(5, float_tensor("w", {4, 5}, std::vector<float>(20, 1.0F)));
    g.message_field(11, test_support::float_value_info("x", {"N", 4}));
    g.message_field(12, vinfo("y"));
    g.message_field(12, vinfo("q"));
    const auto bytes = model(g);
    return dir.write("m.onnx", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

ops::infer_shapes_options options_to(const fs::path& output) {
    return test_support::portable_options<ops::infer_shapes_options>(output);
}

}  // namespace

TEST_CASE("value_info for the values inferred; a second run replaces each entry with the same bytes") {
    const temp_folder dir;
    const auto source = small_model(dir);
    const auto first = ops::infer_shapes(source, options_to(dir.path() / "a.onnx"));
    REQUIRE(first);
    CHECK(first->values == 2);  // m and r (y and q are graph outputs)
    CHECK(first->inferred == 2);
    CHECK(first->value_info_written == 2);
    CHECK(first->value_info_replaced == 0);
    const auto text = read(dir.path() / "a.onnx");
    CHECK(text.find("\x12\x01N") != std::string::npos);  // dim_param N carried
    const auto second = ops::infer_shapes(dir.path() / "a.onnx", options_to(dir.path() / "b.onnx"));
    REQUIRE(second);
    CHECK(second->value_info_replaced == 2);
    CHECK(read(dir.path() / "b.onnx") == text);
    CHECK(ops::infer_shapes_report_text(*first).find("2 value(s): 2 inferred") != std::string::npos);
}

TEST_CASE("--input-shape rewrites the input's type; a bad one writes nothing") {
    const temp_folder dir;
    const auto source = small_model(dir);
    auto options = options_to(dir.path() / "fixed.onnx");
    options.input_shapes.push_back(*graph::parse_input_shape("x=3,4"));
    const auto fixed = ops::infer_shapes(source, options);
    REQUIRE(fixed);
    CHECK(fixed->inputs_fixed == 1);
    CHECK(read(dir.path() / "fixed.onnx").find("\x12\x01N") == std::string::npos);  // N is 3 everywhere now
    auto bad = options_to(dir.path() / "bad.onnx");
    bad.input_shapes.push_back(*graph::parse_input_shape("x=3,5"));
    const auto refused = ops::infer_shapes(source, bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == error_code::invalid_argument);
    CHECK_FALSE(fs::exists(dir.path() / "bad.onnx"));
}
