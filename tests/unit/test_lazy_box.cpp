// lazy_box: no storage until made, deep copies once it is.
#include <onnxstream/lazy_box.hpp>

#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

using onnxstream::lazy_box;

TEST_CASE("lazy_box: a pointer, null until made, then the one value") {
    lazy_box<std::vector<std::string>> box;
    static_assert(sizeof(box) == sizeof(void*));
    CHECK(box.get() == nullptr);
    box.make().push_back("a");
    const auto* made = box.get();
    REQUIRE(made != nullptr);
    box.make().push_back("b");  // made once
    CHECK(box.get() == made);
    CHECK(*box.get() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("lazy_box: copies are deep, moves take the value") {
    lazy_box<std::vector<int>> a;
    a.make().push_back(1);
    lazy_box<std::vector<int>> b(a);
    b.make()[0] = 2;
    CHECK((*a.get())[0] == 1);
    CHECK((*b.get())[0] == 2);
    lazy_box<std::vector<int>> empty;
    b = empty;
    CHECK(b.get() == nullptr);
    b = a;
    REQUIRE(b.get() != nullptr);
    CHECK(b.get() != a.get());
    CHECK(*b.get() == std::vector<int>{1});
    const auto* taken = a.get();
    lazy_box<std::vector<int>> c(std::move(a));
    CHECK(c.get() == taken);
}
