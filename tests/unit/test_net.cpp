// The Caffe net's parameter entries as prototxt text: protobuf's text format (octal escapes
// in string literals), and reals that read back as the same float with the C library's
// strtof (Caffe's parameters are float).
#include <onnxstream/caffe/net.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cstdlib>
#include <limits>
#include <string>

using namespace onnxstream;

TEST_CASE("quoted escapes quotes, backslashes and control bytes") {
    CHECK(caffe::quoted("a\"b\\c") == "\"a\\\"b\\\\c\"");
    CHECK(caffe::quoted(std::string("x\x1b\x7fy")) == "\"x\\033\\177y\"");
    CHECK(caffe::quoted("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
}

TEST_CASE("a real parameter reads back as the very same float") {
    for (const float f : {0.1F, 1e-5F, 0.001F, 1.0F / 3.0F, -2.5F, 123456.789F, std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(), 0.0F}) {
        const auto p = caffe::param::real("eps", static_cast<double>(f));
        CAPTURE(p.value);
        CHECK(p.key == "eps");
        CHECK(std::bit_cast<std::uint32_t>(std::strtof(p.value.c_str(), nullptr)) == std::bit_cast<std::uint32_t>(f));
    }
    CHECK(caffe::param::real("alpha", 0.1).value == "0.1");  // a double as given: shortest digits that are exact
}

TEST_CASE("integers, flags, enum words and nested messages") {
    CHECK(caffe::param::integer("dim", -3).value == "-3");
    CHECK(caffe::param::integer("n", std::numeric_limits<std::int64_t>::min()).value == "-9223372036854775808");
    CHECK(caffe::param::flag("bias_term", false).value == "false");
    CHECK(caffe::param::flag("global_pooling", true).value == "true");
    CHECK(caffe::param::word("pool", "MAX").value == "MAX");
    const auto m = caffe::param::message("shape", {caffe::param::integer("dim", 1), caffe::param::integer("dim", 2)});
    CHECK(m.key == "shape");
    CHECK(m.value.empty());
    REQUIRE(m.children.size() == 2);
    CHECK(m.children[1].value == "2");
}

TEST_CASE("a blob's element count and float32 byte size") {
    caffe::blob b;
    b.shape = {64, 3, 7, 7};
    CHECK(b.count() == 9408);
    CHECK(b.bytes() == 37632);
    b.shape = {};
    CHECK(b.count() == 1);  // a scalar
    b.shape = {5, 0};
    CHECK(b.bytes() == 0);
    CHECK(caffe::blob_data{}.source == caffe::blob_data::inline_values);
}
