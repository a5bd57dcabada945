// lazy_vector: no storage while empty, a std::vector's behaviour once filled.
#include <onnxstream/lazy_vector.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

using onnxstream::lazy_vector;

TEST_CASE("lazy_vector: empty without storage, then a vector") {
    lazy_vector<std::string> list;
    static_assert(sizeof(list) == sizeof(void*));
    CHECK(list.empty());
    CHECK(list.begin() == list.end());
    CHECK(list.data() == nullptr);
    for (const auto& s : list) FAIL(s);
    list.push_back("a");
    list.push_back("b");
    CHECK(list.size() == 2);
    CHECK(list[1] == "b");
    CHECK(list == std::vector<std::string>{"a", "b"});
    CHECK(std::find(list.begin(), list.end(), "b") != list.end());
    list.clear();
    CHECK(list.empty());
    CHECK(list.data() == nullptr);
}

TEST_CASE("lazy_vector: copies are deep, moves take the elements") {
    lazy_vector<int> a;
    a.push_back(1);
    lazy_vector<int> b(a);
    b[0] = 2;
    CHECK(a[0] == 1);
    CHECK(a != b);
    lazy_vector<int> empty;
    b = empty;
    CHECK(b.empty());
    CHECK(b == empty);
    b = a;
    CHECK(b == a);
    lazy_vector<int> c(std::move(b));
    CHECK(c == std::vector<int>{1});
}

TEST_CASE("lazy_vector: made from a vector takes its elements; from an empty one holds no block") {
    const lazy_vector<std::int64_t> dims(std::vector<std::int64_t>{2, 3});
    CHECK(dims == std::vector<std::int64_t>{2, 3});
    const std::span<const std::int64_t> view(dims);  // what tensor_dims and encoders take
    CHECK(view.size() == 2);
    CHECK(view[1] == 3);
    const lazy_vector<std::int64_t> none_given(std::vector<std::int64_t>{});
    CHECK(none_given.empty());
    CHECK(none_given.data() == nullptr);
}
