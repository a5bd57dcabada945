#include <onnxstream/io/output_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

using namespace onnxstream;
using test_support::temp_folder;
namespace fs = std::filesystem;

TEST_CASE("nothing appears at the destination until commit; an abandoned output leaves nothing") {
    temp_folder dir;
    const auto target = dir.path() / "out.onnx";
    {
        auto out = io::output_file::create(target, 5, {});
        REQUIRE(out);
        CHECK(fs::exists(out->temporary_path()));
        CHECK_FALSE(fs::exists(target));
        CHECK(::pwrite(out->descriptor(), "hello", 5, 0) == 5);
    }
    CHECK(fs::is_empty(dir.path()));

    auto out = io::output_file::create(target, 5, {});
    REQUIRE(out);
    REQUIRE(::pwrite(out->descriptor(), "hello", 5, 0) == 5);
    REQUIRE(out->commit());
    CHECK(test_support::read_file(target) == "hello");
    CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("an existing output is refused without overwrite and replaced with it") {
    temp_folder dir;
    const auto target = dir.write("out.onnx", "old");
    const auto refused = io::output_file::create(target, 3, {});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == error_code::output_exists);
    auto out = io::output_file::create(target, 3, {true, true});
    REQUIRE(out);
    REQUIRE(::pwrite(out->descriptor(), "new", 3, 0) == 3);
    REQUIRE(out->commit());
    CHECK(test_support::read_file(target) == "new");
}

TEST_CASE("a directory or a missing folder as the output is a clear error") {
    temp_folder dir;
    CHECK(io::output_file::create(dir.path(), 1, {}).error().code == error_code::invalid_argument);
    const auto missing = io::output_file::create(dir.path() / "no" / "such" / "x.onnx", 1, {});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message.find("does not exist") != std::string::npos);
}

TEST_CASE("the size is reserved up front") {
    temp_folder dir;
    auto out = io::output_file::create(dir.path() / "x", 1 << 20, {});
    REQUIRE(out);
    CHECK(fs::file_size(out->temporary_path()) == 1U << 20);
}
