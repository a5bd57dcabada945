// diff: are two models the same model, whatever their storage? Compared:
//   graph      every message onnxstream knows (model, graphs at any depth, nodes,
//              attributes, functions, training info, inputs/outputs/value_info, opsets,
//              metadata) field by field, unknown fields included;
//   tensors    name, data type, dims, other fields, and values: an XXH3-64 over the raw
//              little-endian bytes, streamed from wherever they are.
// Ignored: where bytes live (raw_data, typed fields, external files, offsets, alignment,
// checksum keys), the order of different fields inside a message, and encoding
// variants (packed or unpacked repeated numbers, non-minimal varints). The order of
// repeated fields counts (nodes, inputs), except initializers and attributes, which are
// paired by name.
//
// Each model is hashed bottom-up once (a digest per message); only messages whose
// digests differ are walked, so equal parts cost nothing to compare.
#pragma once

#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/ops/progress_event.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace onnxstream::ops {

enum class difference_kind : std::uint8_t {
    tensor,     // a tensor differs (values, type, dims, name or other fields)
    node,       // a node differs (op, inputs, outputs, attributes other than tensors)
    only_in_a,  // a tensor, node or field present in A only
    only_in_b,
    field,  // anything else: graph inputs/outputs, opsets, metadata, model fields
};

[[nodiscard]] const char* to_string(difference_kind kind) noexcept;

struct difference {
    difference_kind kind = difference_kind::field;
    std::string what;    // "tensor", "node", or the field's name
    std::string name;    // the tensor's or node's name, when it has one
    std::string path;    // where, in A (in B for only_in_b): "graph.node[12]"
    std::string detail;  // "values differ", "dims [4, 8] vs [8, 4]", "op_type Relu vs Sigmoid"
};

struct diff_report {
    std::filesystem::path a;
    std::filesystem::path b;
    bool equivalent = false;
    bool byte_identical = false;  // the two .onnx files hold the same bytes
    std::uint64_t tensors_a = 0;
    std::uint64_t tensors_b = 0;
    std::uint64_t nodes_a = 0;
    std::uint64_t nodes_b = 0;
    std::uint64_t bytes_hashed = 0;       // tensor bytes read from both models
    std::uint64_t differing_tensors = 0;  // tensors that differ or are only in one model
    std::uint64_t differing_nodes = 0;    // nodes that differ or are only in one model
    std::uint64_t other_differences = 0;
    std::vector<difference> differences;  // the first `max_listed` of each of the three classes
    std::vector<error> warnings;          // data files found only by a guess
};

struct diff_options : onnx::open_options {                   // how both models are opened
    unsigned threads = 0;                                    // hashing workers; 0: the number of cores
    std::size_t buffer_size = 1U << 20;                      // bytes per worker buffer
    std::size_t max_listed = 10;                             // differences listed per class (all are counted)
    const std::atomic<bool>* cancel = nullptr;               // set to stop; the run fails with `interrupted`
    std::function<void(const progress_event&)> on_progress;  // tensor bytes hashed
};

/// Compares `a` and `b`, each with its external data found as merge would (`data` applies
/// to both).
/// Errors (the `cmp` "trouble" status): a model that cannot be read or parsed, external
/// data that is missing, refused or too short, `interrupted`.
[[nodiscard]] result<diff_report> diff(const std::filesystem::path& a, const std::filesystem::path& b,
                                       const diff_options& options);

}  // namespace onnxstream::ops
