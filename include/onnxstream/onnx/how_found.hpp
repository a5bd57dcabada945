// How an external data file was found, as data: the step of data_resolver's search that
// took it and what that step was given. The library names no front end's control here:
// each front end words a `how_found` its own way (the CLI as the flag that found the file,
// the page in words for people who never open a terminal: report/hint_text.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace onnxstream::onnx {

/// The steps of the search (data_resolver.hpp), in its order.
enum class found_by : std::uint8_t {
    data_flag,                  // a data file the caller gave (resolve_options::data_files)
    model_folder,               // the location as written, under the model's folder
    data_dir,                   // the location under a folder the caller gave (resolve_options::data_dirs)
    data_dir_file_name,         // the location's file name under such a folder
    file_name_in_model_folder,  // a guess: the location's file name in the model's folder
    common_name,                // a guess: a name exporters commonly use (<model>.data ...)
    only_data_file,             // a guess: the only data-like file in the model's folder
};

/// A short stable name for a step, as JSON prints it (`"data_dir"`).
[[nodiscard]] const char* to_string(found_by step) noexcept;

/// True for the steps that guess: not the location as written, not a path the caller gave.
[[nodiscard]] bool is_guess(found_by step) noexcept;

struct how_found {
    found_by step = found_by::model_folder;
    // data_dir, data_dir_file_name: the folder given that held the file, as it was given.
    // Empty for the other steps (data_flag's file given is the path found).
    std::filesystem::path data_dir{};
    std::string common_name{};  // common_name: the name that matched ("model.data"); else empty

    [[nodiscard]] bool guess() const noexcept { return is_guess(step); }
    friend bool operator==(const how_found&, const how_found&) = default;
};

/// The words the library's own messages use for a guess ("common name model.data", "the
/// only data file in the model's folder"): a guess is nothing the caller gave, so its
/// words fit every front end. Empty for the other steps, which name what the caller gave
/// and so are worded by each front end.
[[nodiscard]] std::string guess_words(const how_found& how);

}  // namespace onnxstream::onnx
