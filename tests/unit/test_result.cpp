// result<T>: a value or an error, and the two macros that propagate errors. Checked with a
// move-only value (the owners the library returns, mapped files and buffers, are move-only).
#include <onnxstream/result.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace onnxstream;

namespace {

result<std::unique_ptr<int>> make(int value) {
    if (value < 0) return failure(error_code::invalid_argument, "negative: " + std::to_string(value), "pass 0 or more");
    return std::make_unique<int>(value);
}

result<int> doubled(int value) {
    ONNXSTREAM_ASSIGN(auto owned, make(value));
    return *owned * 2;
}

int steps = 0;

result<void> step(bool fail) {
    ++steps;
    if (fail) return failure(error(error_code::interrupted, "stopped"));
    return {};
}

result<void> three_steps(bool fail_second) {
    ONNXSTREAM_TRY(step(false));
    ONNXSTREAM_TRY(step(fail_second));
    ONNXSTREAM_TRY(step(false));
    return {};
}

}  // namespace

TEST_CASE("a result holds its value, moved out without copying") {
    auto r = make(7);
    REQUIRE(r.has_value());
    REQUIRE(static_cast<bool>(r));
    CHECK(**r == 7);
    CHECK(*r.value() == 7);
    const std::unique_ptr<int> taken = std::move(r).value();
    CHECK(*taken == 7);
}

TEST_CASE("a failure converts to any result and keeps code, message and hint") {
    const auto r = make(-3);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == error_code::invalid_argument);
    CHECK(r.error().message == "negative: -3");
    CHECK(r.error().hint == "pass 0 or more");
}

TEST_CASE("ONNXSTREAM_ASSIGN declares the value or returns the error unchanged") {
    CHECK(doubled(21).value() == 42);
    const auto bad = doubled(-1);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == error_code::invalid_argument);
    CHECK(bad.error().message == "negative: -1");
}

TEST_CASE("ONNXSTREAM_TRY stops at the first error; result<void> carries success or an error") {
    steps = 0;
    CHECK(three_steps(false).has_value());
    CHECK(steps == 3);
    steps = 0;
    const auto r = three_steps(true);
    REQUIRE_FALSE(r.has_value());
    CHECK(steps == 2);
    CHECK(r.error().code == error_code::interrupted);
    CHECK(r.error().message == "stopped");
    error moved = std::move(three_steps(true)).error();
    CHECK(moved.message == "stopped");
}
