// name_list: ids in place up to three, on the heap beyond, and back in place when it
// shrinks; it reads like the std::vector<name_id> it replaced.
#include <onnxstream/graph/name_list.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

using namespace onnxstream::graph;

namespace {

name_id id(std::uint32_t v) { return static_cast<name_id>(v); }

std::vector<name_id> ids(std::uint32_t count) {
    std::vector<name_id> out;
    for (std::uint32_t i = 1; i <= count; ++i) out.push_back(id(i));
    return out;
}

}  // namespace

TEST_CASE("name_list: push_back keeps every id across the move to the heap and growth") {
    name_list list;
    CHECK(list.empty());
    for (std::uint32_t i = 1; i <= 40; ++i) {
        list.push_back(id(i));
        REQUIRE(list.size() == i);
        CHECK(list == ids(i));
        CHECK(list.back() == id(i));
        CHECK(list.front() == id(1));
    }
}

TEST_CASE("name_list: shrinking from the heap brings the ids back in place") {
    name_list list(ids(9));
    list.resize(2);
    CHECK(list == ids(2));
    list.resize(5);  // new entries are the empty name
    CHECK(list == std::vector<name_id>{id(1), id(2), empty_name, empty_name, empty_name});
    list.resize(6, id(7));
    CHECK(list[5] == id(7));
    while (list.size() > 1) list.pop_back();
    CHECK(list == ids(1));
    list.clear();
    CHECK(list.empty());
}

TEST_CASE("name_list: copies are deep, moves take the ids, assignment replaces them") {
    for (const std::uint32_t count : {0U, 2U, 3U, 4U, 17U}) {
        CAPTURE(count);
        name_list a(ids(count));
        name_list b(a);
        CHECK(b == a);
        if (count > 0) {
            b[0] = id(99);
            CHECK(a[0] == id(1));  // not shared
        }
        name_list c(std::move(b));
        CHECK(c.size() == count);
        name_list d{id(5)};
        d = a;
        CHECK(d == ids(count));
        d = name_list(ids(6));
        CHECK(d == ids(6));
        d = {};
        CHECK(d.empty());
        auto& self = d;
        d = ids(count);
        d = self;  // self-assignment keeps the ids
        CHECK(d == ids(count));
    }
}

TEST_CASE("name_list: a contiguous range, viewed as a span") {
    name_list list(ids(5));
    CHECK(std::find(list.begin(), list.end(), id(3)) == list.begin() + 2);
    const std::span<const name_id> view = list;
    CHECK(view.size() == 5);
    CHECK(view[4] == id(5));
}
