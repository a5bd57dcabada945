// lazy_vector: no storage while empty, a std::vector's behaviour once filled.
#include <onnxstream/lazy_vector.hpp>

#include <doctest/doctest.h>

#include <algorithm>
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
