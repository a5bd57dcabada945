// export --to safetensors: every weight of the model (main graph and subgraphs: the
// initializers; in a model without any, the values of its Constant nodes named by their
// output, as Paddle2ONNX writes weights) into a safetensors file, by name, dtype and
// shape, its bytes copied as
// slices (copy_file_range
// where the file systems allow; no tensor passes through the heap unless it was stored in
// typed fields). The format: an 8-byte little-endian header length N, N bytes of JSON
// `{"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {..}}` padded with spaces so that the data starts on an 8-byte
// boundary, then the tensors' bytes, contiguous, in header order.
//
// With `shard_size`, the Hugging Face sharded layout: `<stem>-00001-of-0000N.safetensors`
// and `<stem>.safetensors.index.json` ({"metadata": {"total_size": N}, "weight_map":
// {name: file}}). With `link`, also `<model stem>.linked.onnx` beside the output, whose
// initializers are external data pointing into the safetensors file(s) at
// `8 + N + begin`, so one copy of the weights serves ONNX Runtime and safetensors readers
// (Constant values stay in their nodes).
//
// Refused, before anything is written: names safetensors cannot hold (empty,
// `__metadata__`, control characters, invalid UTF-8), two weights with one name,
// types safetensors has no dtype for (strings, complex, 4-bit, fnuz float8).
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

struct safetensors_options : rewrite_options {
    std::uint64_t shard_size = 0;  // 0: one file
    bool link = false;
};

struct safetensors_report {
    std::filesystem::path input;
    std::vector<written_data_file> files;         // the .safetensors file(s)
    std::optional<std::filesystem::path> index;   // sharded: the index json
    std::optional<std::filesystem::path> linked;  // --link: the linked model
    std::uint64_t linked_size = 0;
    std::uint64_t kept_embedded = 0;  // --link: initializers a runtime reads while loading, embedded as split keeps them
    std::uint64_t tensors = 0;
    std::uint64_t bytes = 0;
    std::vector<error> warnings;
    const char* writer = "";
};

/// The safetensors dtype of an ONNX TensorProto.DataType ("F32", "BF16" ...), or null.
[[nodiscard]] const char* safetensors_dtype(std::int32_t onnx_type) noexcept;

/// Errors: everything merge reports, plus `unsupported` (names, duplicates, types) and
/// `too_large` (the linked model past 2 GB).
[[nodiscard]] result<safetensors_report> export_safetensors(const std::filesystem::path& model,
                                                            const safetensors_options& options);

}  // namespace onnxstream::ops
