// quantize on small models built field by field: what is chosen (MatMul B, Gemm B with
// transB), the sizes the report gives, the opset raised, and the refusals that write
// nothing. The bytes themselves are held to a numpy reference and run in ONNX Runtime in
// e2e test_quantize.py; the arithmetic is in test_quantize_blocks.cpp.
#include <onnxstream/ops/quantize.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

// MatMul(x, W [64, 32]) and Gemm(y, G [16, 64], transB = 1): 8 KiB and 4 KiB of float32.
fs::path two_weights(const temp_folder& dir) {
    const auto w = ramp(64 * 32, -1000.0F);
    const auto g = ramp(16 * 64);
    const auto bytes = model({raw_tensor("W", {64, 32}, w), raw_tensor("G", {16, 64}, g)},
                             {node("MatMul", {"x", "W"}, {"y"}), node("Gemm", {"y", "G"}, {"z"}, {int_attribute("transB", 1)})});
    return write_bytes(dir.path() / "m.onnx", bytes);
}

ops::quantize_options options_for(const temp_folder& dir) {
    ops::quantize_options options;
    options.output = dir.path() / "q.onnx";
    options.backend = io::writer_backend::portable;
    return options;
}

}  // namespace

TEST_CASE("MatMul and Gemm weights: blocks along K, sizes and the opset in the report") {
    const temp_folder dir;
    const auto src = two_weights(dir);
    auto options = options_for(dir);
    options.weights = ops::quantized_type::int4;
    const auto r = ops::quantize(src, options);
    REQUIRE(r);
    REQUIRE(r->quantized.size() == 2);
    CHECK(r->quantized[0].name == "W");
    CHECK(r->quantized[0].axis == 0);
    CHECK(r->quantized[1].name == "G");
    CHECK(r->quantized[1].axis == 1);  // transB = 1: K is axis 1
    // int4: half a byte a value; scales: [2, 32] and [16, 2] float32.
    CHECK(r->quantized[0].bytes_after == 64 * 32 / 2 + 2 * 32 * 4);
    CHECK(r->quantized[1].bytes_after == 16 * 64 / 2 + 16 * 2 * 4);
    CHECK(r->bytes_before == (64 * 32 + 16 * 64) * 4);
    CHECK(r->opset_before == 13);
    CHECK(r->opset_after == 21);
    CHECK(r->ir_version_before == 8);
    CHECK(r->ir_version_after == 10);
    CHECK(r->max_relative_error > 0);
    CHECK(r->max_relative_error <= 0.5 / 7 + 1e-6);
    CHECK(fs::is_regular_file(options.output));
}

TEST_CASE("--min-size and --exclude leave weights float, and say why") {
    const temp_folder dir;
    const auto src = two_weights(dir);
    auto options = options_for(dir);
    options.min_size = 8192;
    options.exclude = {"W"};
    const auto r = ops::quantize(src, options);
    CHECK_FALSE(r);  // W excluded, G under the minimum: nothing left
    CHECK(r.error().code == error_code::unsupported);
    CHECK(r.error().message.find("nothing to quantize") != std::string::npos);
    CHECK_FALSE(fs::exists(options.output));
    options.min_size = 4096;
    const auto kept = ops::quantize(src, options);
    REQUIRE(kept);
    REQUIRE(kept->skipped.size() == 1);
    CHECK(kept->skipped[0].name == "W");
    CHECK(kept->skipped[0].reason == "excluded");
}

TEST_CASE("bad options are refused before anything is written") {
    const temp_folder dir;
    const auto src = two_weights(dir);
    auto options = options_for(dir);
    options.block_size = 48;
    auto r = ops::quantize(src, options);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == error_code::invalid_argument);
    options.block_size = 32;
    options.exclude = {"no such weight"};
    r = ops::quantize(src, options);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == error_code::invalid_argument);
    CHECK(r.error().message.find("no such weight") != std::string::npos);
    options.exclude = {};
    options.ops = {"Conv"};
    r = ops::quantize(src, options);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == error_code::invalid_argument);
    CHECK_FALSE(fs::exists(options.output));
}

TEST_CASE("a model below opset 13 is refused: too much changed on the way to 21") {
    const temp_folder dir;
    auto bytes = model({raw_tensor("W", {64, 32}, ramp(64 * 32))}, {node("MatMul", {"x", "W"}, {"y"})});
    // The opset_import is the model's last field: its version varint is the last byte.
    REQUIRE(bytes.back() == std::byte{13});
    bytes.back() = std::byte{11};
    const auto src = write_bytes(dir.path() / "old.onnx", bytes);
    auto options = options_for(dir);
    const auto r = ops::quantize(src, options);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == error_code::unsupported);
    CHECK(r.error().message.find("opset 11") != std::string::npos);
    CHECK_FALSE(fs::exists(options.output));
}
