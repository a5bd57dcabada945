// How a command opens a model (onnx/open_options.hpp): --strict's rule that no data file
// is taken by a guess, and that every operation's options are open options.
#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/ops/diff.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/ops/verify.hpp>

#include <doctest/doctest.h>

#include <type_traits>

using namespace onnxstream;

TEST_CASE("resolving: --strict turns guessing off and keeps every given file and folder") {
    onnx::open_options options;
    options.data.data_files = {"a.bin"};
    options.data.data_dirs = {"weights"};
    CHECK(options.resolving().allow_guesses);
    options.strict = true;
    const auto strict = options.resolving();
    CHECK_FALSE(strict.allow_guesses);
    CHECK(strict.data_files == std::vector<std::filesystem::path>{"a.bin"});
    CHECK(strict.data_dirs == std::vector<std::filesystem::path>{"weights"});
    options.strict = false;
    options.data.allow_guesses = false;  // off already: --strict cannot turn it back on either way
    CHECK_FALSE(options.resolving().allow_guesses);
}

TEST_CASE("every operation's options are open options: none can open a model with data options alone") {
    CHECK(std::is_base_of_v<onnx::open_options, ops::rewrite_options>);
    CHECK(std::is_base_of_v<onnx::open_options, ops::verify_options>);
    CHECK(std::is_base_of_v<onnx::open_options, ops::diff_options>);
    CHECK_FALSE(std::is_convertible_v<onnx::resolve_options, onnx::open_options>);
}
