// split and repack: one engine that moves tensor bytes out of the .onnx into fresh data
// files beside the output, from wherever they are (raw_data, typed fields, any number of
// existing data files), with aligned offsets so runtimes can map them. What stays
// embedded: tensors under the threshold, strings, and tensors read while loading (ONNX
// Runtime resolves shapes while loading and refuses external ones). A tensor that was
// external but stays embedded is inlined, so the output never points at the old files.
//
// split and repack differ only in defaults (output suffix, checksums, sharding).
//
// A `checksum` key already in the input is verified while the bytes are copied and kept
// in the output (the bytes are the same); --write-checksums writes a fresh SHA-1 for every
// moved tensor, except that a checksum that did not match is kept as it was, so the damage
// stays visible to `verify` instead of being blessed.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/ops/written_data_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace onnxstream::ops {

struct externalize_options : rewrite_options {
    std::string output_suffix = "split";  // default output <stem>.<suffix>.onnx
    std::string data_name;                // empty: <output file name>.data
    std::uint64_t threshold = default_threshold;
    std::uint64_t alignment = default_alignment;             // offset alignment; 0 or 1: dense
    std::uint64_t align_threshold = aligned_tensor_minimum;  // smaller tensors stay dense whatever the alignment
    std::uint64_t shard_size = 0;                            // 0: one data file
    bool dedupe = false;                                     // store identical tensors once
    bool write_checksums = false;                            // write each tensor's SHA-1 into `checksum`
    /// With `force`, outputs may replace the inputs themselves (repack in place: the
    /// model's own data file). Safe because every input byte is read through descriptors
    /// opened before anything is written, outputs go to temporary files, and all of them
    /// are flushed to disk before the first rename. Without it such an output is refused.
    bool allow_in_place = false;
};

/// split or repack: one engine, two sets of defaults.
enum class externalize_kind : std::uint8_t { split, repack };

/// The options `kind` starts from: split writes <stem>.split.onnx; repack writes
/// <stem>.repacked.onnx and, with `force`, may replace the model's own files.
[[nodiscard]] inline externalize_options externalize_defaults(externalize_kind kind) {
    externalize_options options;
    options.output_suffix = kind == externalize_kind::split ? "split" : "repacked";
    options.allow_in_place = kind == externalize_kind::repack;
    return options;
}

struct externalize_report {
    std::filesystem::path input;
    std::filesystem::path output;
    std::uint64_t output_size = 0;
    std::vector<written_data_file> data_files;
    std::uint64_t tensors_external = 0;
    std::uint64_t bytes_external = 0;
    std::uint64_t kept_small = 0;
    std::uint64_t kept_shape_like = 0;
    std::uint64_t kept_other = 0;  // strings, unknown types, empty tensors
    std::uint64_t converted_typed = 0;
    std::uint64_t inlined = 0;       // external in the input, embedded in the output
    std::uint64_t deduplicated = 0;  // tensors sharing another's bytes
    std::uint64_t bytes_saved = 0;
    std::vector<error> warnings;
    const char* writer = "";
};

/// The data file name of shard `index` (0-based) of `count`: `name-00001-of-00003.data`.
[[nodiscard]] std::string shard_name(const std::string& data_name, std::uint64_t index, std::uint64_t count);

[[nodiscard]] result<externalize_report> externalize(const std::filesystem::path& model, const externalize_options& options);

}  // namespace onnxstream::ops
