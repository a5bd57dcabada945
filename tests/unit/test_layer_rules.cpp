// layer_problem: every value a layer writes fits its caffe.proto field and the layer's
// rules (issue 29 item 11: pads of 2^40 and num_output 0 were written, exit 0).
#include <onnxstream/caffe/layer_rules.hpp>

#include <doctest/doctest.h>

#include <limits>

using namespace onnxstream;
using caffe::param;

namespace {

caffe::layer convolution(std::vector<param> fields) {
    caffe::layer l;
    l.name = "conv";
    l.type = "Convolution";
    l.params.push_back(param::message("convolution_param", std::move(fields)));
    return l;
}

}  // namespace

TEST_CASE("a valid convolution passes") {
    CHECK_FALSE(caffe::layer_problem(
        convolution({param::integer("num_output", 8), param::integer("pad_h", 1), param::integer("kernel_h", 3),
                     param::integer("stride_h", 1), param::flag("bias_term", true)})));
}

TEST_CASE("values past their field type, and zero counts, are named") {
    const auto pad = caffe::layer_problem(convolution({param::integer("pad_h", std::int64_t{1} << 40)}));
    REQUIRE(pad);
    CHECK(pad->find("convolution_param.pad_h 1099511627776 does not fit its field (uint32)") != std::string::npos);
    const auto outputs = caffe::layer_problem(convolution({param::integer("num_output", 0)}));
    REQUIRE(outputs);
    CHECK(outputs->find("num_output 0 is below 1") != std::string::npos);
    CHECK(caffe::layer_problem(convolution({param::integer("stride_w", 0)})));
    CHECK(caffe::layer_problem(convolution({param::integer("pad_w", -1)})));
    CHECK(caffe::layer_problem(convolution({param::integer("group", std::int64_t{1} << 32)})));
    caffe::layer power;
    power.type = "Power";
    power.params.push_back(param::message("power_param", {param::real("scale", 1e300)}));
    CHECK(caffe::layer_problem(power));
    power.params = {param::message("power_param", {param::real("shift", std::numeric_limits<double>::quiet_NaN())})};
    CHECK(caffe::layer_problem(power));
    caffe::layer softmax;
    softmax.params.push_back(param::message("softmax_param", {param::integer("axis", std::int64_t{1} << 31)}));
    CHECK(caffe::layer_problem(softmax));
}

TEST_CASE("a parameter without a rule is refused, so a new layer cannot skip the check") {
    caffe::layer l;
    l.params.push_back(param::message("convolution_param", {param::integer("no_such_field", 1)}));
    const auto problem = caffe::layer_problem(l);
    REQUIRE(problem);
    CHECK(problem->find("no caffe.proto rule") != std::string::npos);
}

TEST_CASE("rules between fields: pooling pads below the kernel, odd LRN sizes") {
    caffe::layer pool;
    pool.params.push_back(
        param::message("pooling_param", {param::word("pool", "MAX"), param::integer("kernel_h", 2), param::integer("pad_h", 2)}));
    CHECK(caffe::layer_problem(pool));
    caffe::layer lrn;
    lrn.params.push_back(param::message("lrn_param", {param::integer("local_size", 4)}));
    CHECK(caffe::layer_problem(lrn));
}

TEST_CASE("blobs: shapes Caffe can hold, and inline values that match them") {
    auto l = convolution({param::integer("num_output", 1)});
    caffe::blob b;
    b.shape = {1, 2};
    b.data.values = {1.0F};
    l.blobs = {b};
    CHECK(caffe::layer_problem(l));
    l.blobs[0].data.values = {1.0F, 2.0F};
    CHECK_FALSE(caffe::layer_problem(l));
    l.blobs[0].shape = {0, 2};
    l.blobs[0].data.values = {};
    CHECK(caffe::layer_problem(l));
}
