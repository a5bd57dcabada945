// Typed indices: an index of one kind subscripts only its own array, `none` is invalid for
// every kind and equals onnx::no_index as a plain number, and ids hash and order by value.
#include <onnxstream/index.hpp>
#include <onnxstream/onnx/message_tree.hpp>

#include <doctest/doctest.h>

#include <concepts>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

using namespace onnxstream;

namespace {

struct apple_tag {};
struct pear_tag {};
using apple_id = onnxstream::index<apple_tag>;
using pear_id = onnxstream::index<pear_tag>;

template <class Vector, class Id>
concept subscriptable_by = requires(Vector v, Id id) {
    v[id];
};

}  // namespace

TEST_CASE("an index converts from a number only explicitly and never to another kind") {
    static_assert(!std::is_convertible_v<std::uint32_t, apple_id>);
    static_assert(std::is_constructible_v<apple_id, std::uint32_t>);
    static_assert(!std::is_convertible_v<apple_id, pear_id>);
    static_assert(!std::is_convertible_v<apple_id, std::uint32_t>);
    static_assert(sizeof(apple_id) == sizeof(std::uint32_t));
    static_assert(subscriptable_by<indexed_vector<apple_id, int>, apple_id>);
    static_assert(!subscriptable_by<indexed_vector<apple_id, int>, pear_id>);
    static_assert(!subscriptable_by<indexed_vector<apple_id, int>, std::uint32_t>);
}

TEST_CASE("none is the invalid index of every kind and onnx::no_index as a number") {
    const apple_id unset;
    CHECK(unset == none);
    CHECK_FALSE(unset.valid());
    const pear_id p = none;
    CHECK(p == none);
    CHECK(std::uint32_t{none} == onnx::no_index);
    const apple_id zero{0};
    CHECK(zero.valid());
    CHECK(zero != none);
    CHECK(zero != unset);
}

TEST_CASE("ids compare, order and hash by their value") {
    CHECK(apple_id{1} == apple_id{1});
    CHECK(apple_id{1} < apple_id{2});
    CHECK(apple_id{7} > apple_id{2});
    std::unordered_set<apple_id> seen{apple_id{3}, apple_id{3}, apple_id{4}};
    CHECK(seen.size() == 2);
    CHECK(seen.contains(apple_id{4}));
    CHECK_FALSE(seen.contains(apple_id{5}));
}

TEST_CASE("indexed_vector hands out the id of what it stores and iterates its ids") {
    indexed_vector<apple_id, std::string> names;
    CHECK(names.next_id() == apple_id{0});
    const auto a = names.push_back("a");
    const auto b = names.push_back("b");
    CHECK(a == apple_id{0});
    CHECK(b == apple_id{1});
    CHECK(names[b] == "b");
    names[a] = "first";
    CHECK(names[apple_id{0}] == "first");
    CHECK(names.contains(b));
    CHECK_FALSE(names.contains(apple_id{2}));
    CHECK_FALSE(names.contains(none));

    std::vector<std::uint32_t> visited;
    for (const auto id : names.ids()) {
        visited.push_back(id.value);
        if (id == a) names.push_back("added while iterating");
    }
    CHECK(visited == std::vector<std::uint32_t>{0, 1});
    CHECK(names.size() == 3);

    indexed_vector<apple_id, bool> flags(2);
    flags[apple_id{1}] = true;
    CHECK_FALSE(flags[apple_id{0}]);
    CHECK(flags[apple_id{1}]);
}
