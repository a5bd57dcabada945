// Finding the file an external_data `location` names, in DESIGN.md's order:
//   1. every --data FILE whose file name matches (a single --data serves all locations);
//   2. the location under the model's folder;
//   3. the location, then its file name, under each --data-dir;
//   4. the file name in the model's folder;
//   5. the common names <model>.data, <stem>.data, <stem>.bin, <stem>.onnx_data, <model>_data;
//   6. the only data-like file in the model's folder.
// A location written in the model is untrusted: absolute or `..` locations are refused
// whatever the fallbacks, and a file reached through a symlink must really live inside
// the model's folder (or, for the Hugging Face cache layout
// `<repo>/snapshots/<rev>/model.onnx`, inside `<repo>/blobs/`). Paths given on the
// command line are trusted.
#pragma once

#include <onnxstream/result.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::onnx {

struct resolve_options {
    std::vector<std::filesystem::path> data_files;  // --data
    std::vector<std::filesystem::path> data_dirs;   // --data-dir
};

enum class found_by : std::uint8_t {
    data_flag,
    model_folder,
    data_dir,
    data_dir_file_name,
    file_name_in_model_folder,
    common_name,
    only_data_file,
};

struct resolved_location {
    std::filesystem::path path;
    found_by how = found_by::model_folder;
    std::string how_text;  // for people: "next to the model", "--data", "common name model.data"
};

class data_resolver {
public:
    data_resolver(std::filesystem::path model_path, resolve_options options);

    /// The file for `location`. Errors: `unsafe_location` (absolute, `..`, NUL, or a
    /// link out of the allowed folders), `missing_data` (its hint lists every path tried
    /// and the flags that would help). Results are cached per location.
    [[nodiscard]] result<resolved_location> resolve(std::string_view location);

    /// The checks applied to a location written inside a model, on their own.
    [[nodiscard]] static result<void> check_location_text(std::string_view location);

private:
    [[nodiscard]] result<bool> accept_inside_model_folder(const std::filesystem::path& candidate) const;
    [[nodiscard]] result<resolved_location> search(std::string_view location) const;

    std::filesystem::path model_path_;
    std::filesystem::path model_folder_;
    resolve_options options_;
    std::vector<std::filesystem::path> allowed_roots_;  // canonical folders links may lead into
    std::map<std::string, result<resolved_location>, std::less<>> cache_;
    // The data-like files of the model's folder (step 6), listed once: a model naming
    // thousands of missing files must not list the folder thousands of times.
    mutable std::optional<std::vector<std::filesystem::path>> data_like_;
};

[[nodiscard]] const char* to_string(found_by how) noexcept;

/// `relative` inside `root`, with the rules of external data locations: refused when
/// absolute, with `..`, with a NUL, or when the existing part of the path leads through a
/// symlink out of `root`. The file need not exist yet (an output). Empty: `root` itself.
/// Returns the canonical path. Errors: `unsafe_location`.
[[nodiscard]] result<std::filesystem::path> contained_path(const std::filesystem::path& root, std::string_view relative);

}  // namespace onnxstream::onnx
