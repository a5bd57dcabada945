// Where to look for external data besides the model's folder, and whether a file found
// only by a guess may be taken (data_resolver.hpp has the search order).
#pragma once

#include <filesystem>
#include <vector>

namespace onnxstream::onnx {

struct resolve_options {
    std::vector<std::filesystem::path> data_files{};  // --data: files that hold the data, matched by file name
    std::vector<std::filesystem::path> data_dirs{};   // --data-dir: folders to look in, in this order
    bool allow_guesses = true;                        // false with --strict
};

}  // namespace onnxstream::onnx
