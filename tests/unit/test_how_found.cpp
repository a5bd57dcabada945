// How a data file was found (onnx/how_found.hpp): the steps' stable names, which of them
// guess, and the words the library's own messages use for a guess.
#include <onnxstream/onnx/how_found.hpp>

#include <array>
#include <set>
#include <string>

#include <doctest/doctest.h>

using namespace onnxstream::onnx;

namespace {

constexpr std::array every_step{found_by::data_flag,
                                found_by::model_folder,
                                found_by::data_dir,
                                found_by::data_dir_file_name,
                                found_by::file_name_in_model_folder,
                                found_by::common_name,
                                found_by::only_data_file};

}  // namespace

TEST_CASE("every step has its own stable name, as JSON prints it") {
    std::set<std::string> names;
    for (const auto step : every_step) {
        const std::string name = to_string(step);
        CHECK(name != "unknown");
        CHECK(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos);
        names.insert(name);
    }
    CHECK(names.size() == every_step.size());
    CHECK(std::string(to_string(found_by::data_dir)) == "data_dir");
    CHECK(std::string(to_string(found_by::common_name)) == "common_name");
    CHECK(std::string(to_string(static_cast<found_by>(200))) == "unknown");
}

TEST_CASE("the last three steps guess; the location as written and what the caller gave do not") {
    CHECK_FALSE(is_guess(found_by::data_flag));
    CHECK_FALSE(is_guess(found_by::model_folder));
    CHECK_FALSE(is_guess(found_by::data_dir));
    CHECK_FALSE(is_guess(found_by::data_dir_file_name));
    CHECK(is_guess(found_by::file_name_in_model_folder));
    CHECK(is_guess(found_by::common_name));
    CHECK(is_guess(found_by::only_data_file));
    CHECK(how_found{.step = found_by::common_name, .common_name = "m.bin"}.guess());
    CHECK_FALSE(how_found{.step = found_by::data_dir, .data_dir = "d"}.guess());
}

TEST_CASE("a guess has words every front end can show; what the caller gave has none here") {
    for (const auto step : every_step) {
        const auto words = guess_words({.step = step, .common_name = "model.data"});
        CHECK(words.empty() == !is_guess(step));
        // No front end's control: the library does not know them.
        CHECK(words.find("--") == std::string::npos);
    }
    CHECK(guess_words({.step = found_by::common_name, .common_name = "model.onnx_data"}) == "common name model.onnx_data");
    CHECK(guess_words({.step = found_by::only_data_file}) == "the only data file in the model's folder");
    CHECK(guess_words({.step = found_by::file_name_in_model_folder}) == "the file name in the model's folder");
}

TEST_CASE("two findings are the same when step and data are") {
    const how_found a{.step = found_by::data_dir, .data_dir = "/store"};
    CHECK(a == how_found{.step = found_by::data_dir, .data_dir = "/store"});
    CHECK_FALSE(a == how_found{.step = found_by::data_dir, .data_dir = "/other"});
    CHECK_FALSE(a == how_found{.step = found_by::data_dir_file_name, .data_dir = "/store"});
}
