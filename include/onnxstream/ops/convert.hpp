// convert: float32 weights and computations to float16 or bfloat16, streaming. Every
// float32 tensor the model computes with (initializers, sparse initializers, Constant and
// ConstantOfShape values, in subgraphs and functions too) is converted slice by slice
// while it is written, through the writers' bounded buffers (round to nearest even;
// NaN and infinities kept). value_info, graph inputs and outputs and Cast targets follow.
// float16 cannot hold values beyond +-65504: a tensor holding any stays float32 and the
// nodes that read it compute in float32 (as blocked nodes do), unless `allow_saturation`
// (then they saturate to +-65504 and are counted). The Cast of an int32/int64 to float
// (a ConvInteger's sums) stays float32 the same way.
//
// The converted graph is type-checked against ONNX's operator schemas before anything
// is written: a node whose converted types would not check computes in float32; one that
// still would not is refused by name. A model already in 16 bits (no float32 tensor to
// convert, 16-bit float tensors present) is refused: nothing to convert.
//
// Nodes that must compute in float32 (the block list, operators whose schema only allows
// float32, unknown domains) are fed through inserted Cast nodes, and their outputs cast
// back. Tensors that must stay float32 stay: Resize/Upsample scales and roi, constants
// only float32 consumers read. `keep_io_types` keeps the main graph's inputs and outputs
// float32, with Casts at the boundary.
//
// Layout: like repack (fresh aligned data files, shards) when the input had external data
// or the converted model would not fit in 2 GB; one embedded .onnx otherwise. The input
// is never modified.
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

enum class half_type : std::uint8_t { float16, bfloat16 };

struct convert_options : rewrite_options {
    half_type target = half_type::float16;
    bool keep_io_types = false;
    std::optional<std::vector<std::string>> block_ops;  // empty: default_convert_block_ops()
    std::string data_name;                              // empty: <output file name>.data
    std::optional<std::uint64_t> alignment;             // empty: 4096 for tensors >= 1 MiB, dense below
    std::uint64_t shard_size = 0;                       // 0: one data file
    std::uint64_t threshold = default_threshold;        // external layout: smaller tensors stay embedded
    bool allow_saturation = false;                      // float16: convert tensors with values beyond +-65504 anyway
};

/// A float32 tensor float16 would saturate, kept float32.
struct wide_tensor {
    std::string name;
    std::uint64_t values = 0;  // how many values lie beyond +-65504
    float largest = 0;         // the largest magnitude among them
};

struct convert_report {
    std::filesystem::path input;
    std::filesystem::path output;
    std::uint64_t output_size = 0;
    bool external_layout = false;
    std::vector<written_data_file> data_files;
    std::uint64_t tensors_converted = 0;
    std::uint64_t tensors_kept_float32 = 0;  // float32 tensors left as they were (scales, float32-only consumers)
    std::uint64_t bytes_before = 0;          // of the converted tensors
    std::uint64_t bytes_after = 0;
    std::uint64_t saturated = 0;           // float16 values clamped to +-65504 (allow_saturation, function constants)
    std::vector<wide_tensor> kept_wide;    // tensors float16 would saturate, kept float32 (in file order)
    std::uint64_t bytes_kept_float32 = 0;  // of the float32 tensors left as they were
    std::uint64_t nodes_type_checked = 0;  // of nodes_blocked: computing in float32 for the schemas' sake
    std::uint64_t casts_inserted = 0;
    std::uint64_t nodes_blocked = 0;
    std::uint64_t types_changed = 0;  // inputs, outputs and value_info retyped
    std::uint64_t cast_targets_changed = 0;
    std::uint64_t casts_made_identity = 0;  // Casts of the model left with nothing to do: written as Identity
    std::vector<error> warnings;
    const char* writer = "";
};

/// The operators kept in float32 unless `block_ops` replaces the list.
[[nodiscard]] std::vector<std::string> default_convert_block_ops();

/// Errors: everything merge and repack report, plus `invalid_argument` (a bad --data-name)
/// and `unsupported` (a model with no float32 tensor or value, one already in 16 bits,
/// bfloat16 below opset 13, a node that would not type-check).
[[nodiscard]] result<convert_report> convert(const std::filesystem::path& model, const convert_options& options);

}  // namespace onnxstream::ops
