// Finding and opening the file an external_data `location` names, in DESIGN.md's order:
//   1. every --data FILE whose file name matches (a single --data serves all locations);
//   2. the location under the model's folder;
//   3. the location, then its file name, under each --data-dir;
//   4. the file name in the model's folder;
//   5. the common names <model>.data, <stem>.data, <stem>.bin, <stem>.onnx_data, <model>_data;
//   6. the only data-like file in the model's folder.
// Steps 1 to 3 are the location as written or a path the user gave. Steps 4 to 6 are
// guesses: a guessed file is taken only when it holds every byte the tensors need and
// matches their checksums, never with `allow_guesses` off, and whoever takes one must
// say so (a runtime reading the model will not find it).
//
// A location written in the model is untrusted: absolute or `..` locations are refused
// whatever the fallbacks, and a file found in the model's folder must really live inside
// it, inside a --data-dir, or (for the Hugging Face cache layout `<repo>/snapshots/<rev>/`
// at any depth) inside `<repo>/blobs/` when that is a real folder, not a link. This is
// decided on the real path of the very file that is then read (io::located_file), never
// by resolving a name and opening it again. Paths given on the command line are trusted.
#pragma once

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/how_found.hpp>
#include <onnxstream/onnx/resolve_options.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::onnx {

/// What the tensors stored under one location need from its file, so that a guessed file
/// can be checked before it is taken.
struct data_needs {
    struct checked_range {
        std::uint64_t offset = 0;
        std::optional<std::uint64_t> length;  // empty: to the end of the file
        io::sha1_digest digest{};
    };
    std::uint64_t bytes = 0;  // the file must be at least this long
    std::vector<checked_range> checksums;
};

struct resolved_location {
    std::filesystem::path path;
    how_found how;                     // the step that found it, and what it was given (front ends word it)
    std::filesystem::path as_written;  // where the location itself points: <model folder>/<location>

    [[nodiscard]] bool guess() const noexcept { return how.guess(); }
};

struct opened_location {
    resolved_location where;
    io::source_file file;  // open for reading; the file that was checked
};

/// Whether a file name is one a data file may have (.data, .bin, .onnx_data, .weights,
/// .raw, .pb, or ending in _data): what step 6 counts, and what a model is not named.
[[nodiscard]] bool looks_like_data(const std::filesystem::path& path);

class data_resolver {
public:
    data_resolver(std::filesystem::path model_path, resolve_options options);

    /// Finds and opens the file for `location`. Errors: `unsafe_location` (absolute, `..`,
    /// NUL, or a link out of the allowed folders), `missing_data` (its hint lists every
    /// path tried, with why each was not taken, and the flags that would help),
    /// `invalid_tensor` (the location names a folder), `io` (a file that exists could not
    /// be opened).
    [[nodiscard]] result<opened_location> resolve(std::string_view location, const data_needs& needs = {});

    /// The checks applied to a location written inside a model, on their own.
    [[nodiscard]] static result<void> check_location_text(std::string_view location);

    /// The canonical folders a file found in the model's folder may really live in.
    [[nodiscard]] const std::vector<std::filesystem::path>& allowed_roots() const noexcept { return allowed_roots_; }

private:
    enum class trust : std::uint8_t { user_given, confined };
    // The candidate opened, or nothing (and a line in `tried` saying why) when it is not
    // there or, for a guess (`guess_label` not empty), does not fit `needs`.
    [[nodiscard]] result<std::optional<io::source_file>> try_candidate(const std::filesystem::path& candidate, trust level,
                                                                       std::string_view guess_label, const data_needs& needs,
                                                                       std::vector<std::string>& tried) const;
    [[nodiscard]] result<opened_location> search(std::string_view location, const data_needs& needs) const;

    std::filesystem::path model_path_;
    std::filesystem::path model_folder_;
    resolve_options options_;
    std::vector<std::filesystem::path> allowed_roots_;
    // The data-like files of the model's folder (step 6), listed once: a model naming
    // thousands of missing files must not list the folder thousands of times.
    mutable std::optional<std::vector<std::filesystem::path>> data_like_;
};

/// Whether `child` is `root` or below it, comparing the paths part by part (both
/// canonical: nothing is resolved here).
[[nodiscard]] bool is_inside(const std::filesystem::path& child, const std::filesystem::path& root);

/// `relative` inside `root`, with the rules of external data locations: refused when
/// absolute, with `..`, with a NUL, or when the existing part of the path leads through a
/// symlink out of `root`. The file need not exist yet (an output). Empty: `root` itself.
/// Returns the canonical path. Errors: `unsafe_location`.
[[nodiscard]] result<std::filesystem::path> contained_path(const std::filesystem::path& root, std::string_view relative);

}  // namespace onnxstream::onnx
