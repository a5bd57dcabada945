// Size arithmetic on untrusted dims: checked at every step, never wrapping.
#include <onnxstream/caffe/blob_limits.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace onnxstream;

TEST_CASE("element_count: products checked at every step against the limit") {
    using dims = std::vector<std::int64_t>;
    CHECK(caffe::element_count(dims{}, 10) == 1U);
    CHECK(caffe::element_count(dims{2, 3, 4}, 24) == 24U);
    CHECK_FALSE(caffe::element_count(dims{2, 3, 4}, 23));
    CHECK_FALSE(caffe::element_count(dims{2, -3}, 100));
    // 3 * 2^62 * 4 = 3 * 2^64 wraps to 0 in 64 bits: refused, not zero.
    CHECK_FALSE(caffe::element_count(dims{1, 3, std::int64_t{1} << 62, 4}, UINT64_MAX));
    CHECK_FALSE(caffe::element_count(dims{std::int64_t{1} << 32, std::int64_t{1} << 32, 0}, UINT64_MAX));
    CHECK(caffe::element_count(dims{0, std::int64_t{1} << 62}, 10) == 0U);
}

TEST_CASE("blob_shape_problem: Caffe's int dimensions and INT_MAX elements") {
    using dims = std::vector<std::int64_t>;
    CHECK_FALSE(caffe::blob_shape_problem(dims{1, 3, 224, 224}));
    CHECK_FALSE(caffe::blob_shape_problem(dims{std::numeric_limits<std::int32_t>::max()}));
    CHECK(caffe::blob_shape_problem(dims{std::int64_t{1} << 31}));
    CHECK(caffe::blob_shape_problem(dims{1, 0, 3}));
    CHECK(caffe::blob_shape_problem(dims{65536, 32768}));
    const auto huge = caffe::blob_shape_problem(dims{1, 3, std::int64_t{1} << 62, 4});
    REQUIRE(huge);
    CHECK(huge->find("1x3x4611686018427387904x4") != std::string::npos);
}

TEST_CASE("checked_multiply and checked_add refuse what overflows int64") {
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    CHECK(caffe::checked_multiply(std::int64_t{1} << 31, std::int64_t{1} << 31) == std::int64_t{1} << 62);
    CHECK_FALSE(caffe::checked_multiply(std::int64_t{1} << 32, std::int64_t{1} << 31));
    CHECK(caffe::checked_add(max - 1, 1) == max);
    CHECK_FALSE(caffe::checked_add(max, 1));
}
