// The options of the data search (onnx/resolve_options.hpp): what each field changes in
// data_resolver's order (how a rewrite's --strict reaches them: test_rewrite_options.cpp),
// and that the defaults are the search DESIGN.md describes.
#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/onnx/resolve_options.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::temp_folder;
namespace fs = std::filesystem;

namespace {

// Where `location` is found beside `model` with `options` (the test fails when it is not).
resolved_location found(const fs::path& model, const resolve_options& options, std::string_view location) {
    data_resolver r(model, options);
    auto where = r.resolve(location);
    REQUIRE(where);
    return where->where;
}

}  // namespace

TEST_CASE("the defaults search the model's folder only, and take guesses") {
    const resolve_options defaults;
    CHECK(defaults.data_files.empty());
    CHECK(defaults.data_dirs.empty());
    CHECK(defaults.allow_guesses);
    temp_folder dir;
    const auto model = dir.write("m/model.onnx", "m");
    const auto guessed = dir.write("m/model.data", "0123");
    const auto where = found(model, defaults, "model.onnx.data");
    CHECK(where.path == guessed);
    CHECK(where.how.step == found_by::common_name);
}

TEST_CASE("data_files come before the model's folder, data_dirs after it, each in the order given") {
    temp_folder dir;
    const auto model = dir.write("m/model.onnx", "m");
    const auto beside = dir.write("m/w.bin", "beside");
    const auto given = dir.write("given/w.bin", "given");
    const auto first = dir.write("first/x.bin", "first");
    const auto second = dir.write("second/x.bin", "second");
    dir.write("second/y.bin", "second");
    // A data file given wins over the file the location names beside the model.
    CHECK(found(model, {.data_files = {given}}, "w.bin").path == given);
    // A folder given does not: the location as written comes first.
    CHECK(found(model, {.data_dirs = {dir.path() / "given"}}, "w.bin").path == beside);
    // Folders are searched in the order given; a later one serves what the first lacks.
    const resolve_options folders{.data_dirs = {dir.path() / "first", dir.path() / "second"}};
    CHECK(found(model, folders, "x.bin").path == first);
    const resolve_options reversed{.data_dirs = {dir.path() / "second", dir.path() / "first"}};
    CHECK(found(model, reversed, "x.bin").path == second);
    const auto later = found(model, folders, "y.bin");
    CHECK(later.how == how_found{.step = found_by::data_dir, .data_dir = dir.path() / "second"});
}

TEST_CASE("allow_guesses off: what would be guessed is refused, and the hint names the setting") {
    temp_folder dir;
    const auto model = dir.write("m/model.onnx", "m");
    dir.write("m/model.data", "0123");
    data_resolver strict(model, {.allow_guesses = false});
    const auto refused = strict.resolve("model.onnx.data");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == error_code::missing_data);
    REQUIRE(refused.error().remedies.size() == 2);
    CHECK(refused.error().remedies[1].change == remedy::refuse_guesses);
    // What the user gave is no guess: taken with guesses off too.
    const auto given = dir.write("elsewhere/w.bin", "w");
    CHECK(found(model, {.data_files = {given}, .allow_guesses = false}, "model.onnx.data").path == given);
}
