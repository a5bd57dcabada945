// load_module: the places are tried in order, only the first file that exists is opened
// (a broken one is reported, not skipped), and each outcome says what happened. A real
// shared object serves as the module: the C math library, found where this test loaded it.
#include <onnxstream/io/loadable_module.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

// The file this process loaded the math library from (libm.so.6).
std::filesystem::path math_library() {
    Dl_info info{};
    double (*cosine)(double) = &::cos;
    REQUIRE(::dladdr(reinterpret_cast<void*>(cosine), &info) != 0);
    REQUIRE(info.dli_fname != nullptr);
    return std::filesystem::canonical(info.dli_fname);
}

}  // namespace

TEST_CASE("load_module finds the module in the first place that holds it and returns its entry") {
    const auto library = math_library();
    const temp_folder empty;
    const auto found = io::load_module(library.filename().string(), "cos", {{}, empty.path(), library.parent_path()});
    CHECK(found.outcome == io::module_outcome::loaded);
    CHECK(found.path == library.parent_path() / library.filename());
    REQUIRE(found.entry != nullptr);
    CHECK(reinterpret_cast<double (*)(double)>(found.entry)(0.0) == 1.0);
}

TEST_CASE("load_module says when no place holds the module") {
    const temp_folder empty;
    const auto found = io::load_module("onnxstream-no-such-module.so", "entry", {"../nowhere", empty.path(), empty.path()});
    CHECK(found.outcome == io::module_outcome::not_found);
    CHECK(found.entry == nullptr);
    CHECK(found.path.empty());
}

TEST_CASE("load_module reports a damaged module rather than skip to a later place") {
    const auto library = math_library();
    const temp_folder folder;
    const auto damaged = folder.path() / library.filename();
    std::ofstream(damaged) << "not a shared object\n";
    const auto found = io::load_module(library.filename().string(), "cos", {{}, folder.path(), library.parent_path()});
    CHECK(found.outcome == io::module_outcome::not_loaded);
    CHECK(found.path == damaged);
    CHECK(found.entry == nullptr);
    CHECK_FALSE(found.detail.empty());
}

TEST_CASE("load_module says when the module lacks its entry symbol") {
    const auto library = math_library();
    const auto found = io::load_module(library.filename().string(), "onnxstream_no_such_entry", {{}, library.parent_path(), {}});
    CHECK(found.outcome == io::module_outcome::no_entry);
    CHECK(found.entry == nullptr);
}
