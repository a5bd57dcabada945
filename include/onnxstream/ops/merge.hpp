// merge: one self-contained .onnx from a model and its external data. Every external
// tensor is found, bounds-checked and size-checked before anything is written; the exact
// output size is computed first and a model that would pass protobuf's 2 GB limit is
// refused before any file is created. The bytes are copied from the data files straight
// into the output (SHA-1 `checksum` keys verified on the way). A model without external
// data is rewritten byte for byte.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/onnx/how_found.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxstream::ops {

struct used_data_file {
    std::string location;
    std::filesystem::path path;
    onnx::how_found how;   // how it was found (front ends word it)
    bool guessed = false;  // not where the location says (data_resolver.hpp): a warning says so too
    std::uint64_t tensors = 0;
    std::uint64_t bytes = 0;
};

struct merge_report {
    std::filesystem::path input;
    std::filesystem::path output;
    std::uint64_t output_size = 0;
    std::uint64_t tensors_inlined = 0;
    std::uint64_t bytes_inlined = 0;
    std::vector<used_data_file> data_files;
    std::vector<error> warnings;  // checksum mismatches, tolerated size mismatches
    const char* writer = "";
};

/// Errors: everything data_resolver, external_data and the writer report, plus
/// `too_large`, `output_exists`, `output_is_input`, `checksum_mismatch` (with --strict).
[[nodiscard]] result<merge_report> merge(const std::filesystem::path& model, const rewrite_options& options);

}  // namespace onnxstream::ops
