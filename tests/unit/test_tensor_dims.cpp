#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_dims.hpp>
#include <onnxstream/onnx/tensor_info.hpp>

#include "proto_builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>
#include <ranges>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::proto_builder;

static_assert(std::forward_iterator<tensor_dims::const_iterator>);
static_assert(std::ranges::forward_range<tensor_dims>);

namespace {

// A model whose graph holds the one initializer `tensor` (message 2), kept alive with the
// tree the view reads from.
struct one_tensor {
    std::vector<std::byte> bytes;
    message_tree tree;
    result<tensor_info> info = failure(error_code::invalid_argument, "not read");

    explicit one_tensor(const proto_builder& tensor) : bytes(test_support::model_with_initializer(tensor)) {
        auto parsed = message_tree::parse(bytes);
        REQUIRE(parsed);
        tree = std::move(parsed).value();
        info = read_tensor(tree, 2);
    }
};

proto_builder packed(std::initializer_list<std::uint64_t> values) {
    proto_builder p;
    for (const auto v : values) p.raw_varint(v);
    return p;
}

}  // namespace

TEST_CASE("a scalar has no dims") {
    const tensor_dims none;
    CHECK(none.empty());
    CHECK(none.begin() == none.end());
    CHECK(none.to_vector().empty());
    CHECK(to_string(none) == "[]");

    proto_builder t;
    t.varint_field(2, 1).string_field(8, "s");
    const one_tensor m(t);
    REQUIRE(m.info);
    CHECK(m.info->dims.size() == 0);
    CHECK(m.info->dims == none);
    CHECK(m.info->element_count == 1);
}

TEST_CASE("unpacked dims are read between other fields") {
    proto_builder t;
    t.varint_field(1, 2).varint_field(2, 1).string_field(8, "w").varint_field(1, 0).fixed32_field(99, 7).varint_field(1, 5);
    const one_tensor m(t);
    REQUIRE(m.info);
    const auto& dims = m.info->dims;
    CHECK(dims.size() == 3);
    CHECK(dims.front() == 2);
    CHECK(dims.to_vector() == std::vector<std::int64_t>{2, 0, 5});
    CHECK(to_string(dims) == "[2, 0, 5]");
    CHECK(m.info->element_count == 0);
    CHECK(*m.info->expected_bytes == 0);
}

TEST_CASE("a packed run, and runs mixed with unpacked dims, read the same") {
    proto_builder lone;
    lone.bytes_field(1, packed({3, 300, 1ULL << 40}).bytes()).varint_field(2, 1);
    const one_tensor a(lone);
    REQUIRE(a.info);
    proto_builder mixed;
    mixed.varint_field(1, 3)
        .varint_field(2, 1)
        .bytes_field(1, packed({}).bytes())
        .bytes_field(1, packed({300, 1ULL << 40}).bytes());
    const one_tensor b(mixed);
    REQUIRE(b.info);
    const std::vector<std::int64_t> expected{3, 300, 1LL << 40};
    CHECK(a.info->dims.to_vector() == expected);
    CHECK(b.info->dims.to_vector() == expected);
    CHECK(a.info->dims == b.info->dims);
    CHECK(a.info->dims == std::span<const std::int64_t>(expected));
    CHECK(*a.info->expected_bytes == 4 * 900 * (1ULL << 40));

    // Iterators copy and compare by position.
    auto it = b.info->dims.begin();
    const auto first = it++;
    CHECK(*first == 3);
    CHECK(*it == 300);
    CHECK(std::ranges::distance(b.info->dims) == 3);
    CHECK(std::ranges::equal(a.info->dims, expected));

    const std::vector<std::int64_t> other{3, 300, 7};
    CHECK_FALSE(a.info->dims == std::span<const std::int64_t>(other));
    CHECK_FALSE(a.info->dims == std::span<const std::int64_t>(expected).first(2));
}

TEST_CASE("a million dims cost the view nothing per dim") {
    proto_builder run;
    for (int i = 0; i < 1'000'000; ++i) run.raw_varint(1);
    proto_builder t;
    t.bytes_field(1, run.bytes()).varint_field(2, 1).varint_field(1, 1);  // one more, unpacked
    const one_tensor m(t);
    REQUIRE(m.info);
    CHECK(m.info->dims.size() == 1'000'001);
    CHECK(m.info->element_count == 1);
    std::uint64_t ones = 0;
    for (const auto d : m.info->dims) ones += d == 1 ? 1 : 0;
    CHECK(ones == 1'000'001);
}

TEST_CASE("dims that do not decode or are not dims are refused when the tensor is read") {
    SUBCASE("a packed varint that does not end") {
        proto_builder bad;
        bad.raw_varint(4);
        bad.raw(std::vector<std::byte>{std::byte{0x80}});
        proto_builder t;
        t.bytes_field(1, bad.bytes()).varint_field(2, 1);
        const one_tensor m(t);
        REQUIRE_FALSE(m.info);
        CHECK(m.info.error().code == error_code::invalid_tensor);
        CHECK(m.info.error().message == "packed dims do not decode");
        CHECK(m.info.error().field_path == "graph.initializer[0]");
    }
    SUBCASE("a dim of wire type fixed32") {
        proto_builder t;
        t.fixed32_field(1, 4).varint_field(2, 1);
        const one_tensor m(t);
        REQUIRE_FALSE(m.info);
        CHECK(m.info.error().message == "dims has the wrong wire type");
    }
    SUBCASE("a negative dim in a packed run") {
        proto_builder t;
        t.bytes_field(1, packed({2, static_cast<std::uint64_t>(-1)}).bytes()).varint_field(2, 1).string_field(8, "n");
        const one_tensor m(t);
        REQUIRE_FALSE(m.info);
        CHECK(m.info.error().message == "tensor 'n' has a negative dimension -1");
    }
}

TEST_CASE("a view of int64s compares and orders as a vector of them") {
    const std::vector<std::int64_t> held{2, 3, 1LL << 50};
    const tensor_dims values(held);
    CHECK(values.size() == 3);
    CHECK(values.to_vector() == held);
    CHECK(to_string(values) == "[2, 3, 1125899906842624]");

    proto_builder t;
    t.varint_field(1, 2).varint_field(1, 3).varint_field(1, 1ULL << 50).varint_field(2, 1);
    const one_tensor m(t);
    REQUIRE(m.info);
    CHECK(m.info->dims == values);
    CHECK_FALSE(m.info->dims < values);
    CHECK_FALSE(values < m.info->dims);

    const std::vector<std::int64_t> shorter{2, 3};
    const std::vector<std::int64_t> larger{2, 4};
    CHECK(tensor_dims(shorter) < values);
    CHECK(values < tensor_dims(larger));
    CHECK(tensor_dims() < tensor_dims(shorter));
    CHECK_FALSE(tensor_dims() < tensor_dims());

    // Dims written with longer varints than they need are the same dims.
    proto_builder longer;
    longer.raw(std::vector<std::byte>{std::byte{0x82}, std::byte{0x00}, std::byte{0x03}});
    proto_builder u;
    u.bytes_field(1, longer.bytes()).varint_field(2, 1);
    const one_tensor n(u);
    REQUIRE(n.info);
    CHECK(n.info->dims == tensor_dims(shorter));
    CHECK_FALSE(n.info->dims.same_encoding(tensor_dims(shorter)));
}
