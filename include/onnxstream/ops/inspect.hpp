// inspect: what a model is and what it needs. Reads only metadata: weights are never
// touched (their sizes come from the tokens and the data files' sizes).
#pragma once

#include <onnxstream/onnx/how_found.hpp>
#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxstream::ops {

struct value_summary {
    std::string name;
    std::string type;                // "FLOAT", "INT64", or "" when not a tensor type
    std::vector<std::string> shape;  // "1", "batch", "?" per dimension
    bool has_shape = false;
};

struct type_count {
    std::uint64_t tensors = 0;
    std::uint64_t bytes = 0;
};

struct data_file_summary {
    std::string location;
    std::optional<std::filesystem::path> path;
    std::optional<onnx::how_found> how;  // how it was found (front ends word it); empty when it was not
    bool guessed = false;                // not where the location says: a warning says so too
    std::optional<std::uint64_t> size;
    std::uint64_t tensors = 0;
    std::uint64_t bytes_needed = 0;  // largest offset + length
    std::uint64_t bytes_referenced = 0;
    std::vector<std::string> problems;
    std::string hint;                   // where it looked and what helps, when missing (slots: error.hpp)
    std::vector<remedy_step> remedies;  // what the hint's slots name
};

struct function_summary {
    std::string domain;
    std::string name;
    std::uint64_t nodes = 0;
};

struct inspect_report {
    std::filesystem::path path;
    std::uint64_t file_size = 0;
    std::int64_t ir_version = 0;
    std::string producer_name;
    std::string producer_version;
    std::string domain;
    std::int64_t model_version = 0;
    std::string graph_name;
    std::vector<std::pair<std::string, std::int64_t>> opsets;  // domain ("" = ai.onnx), version
    std::vector<value_summary> inputs;
    std::vector<value_summary> outputs;
    std::uint64_t nodes = 0;  // in every graph, subgraph and function
    std::uint64_t main_graph_nodes = 0;
    std::map<std::string, std::uint64_t> op_types;  // "Conv" or "domain:Op" -> count
    std::uint64_t subgraphs = 0;                    // GraphProtos inside nodes
    std::vector<function_summary> functions;
    std::uint64_t training_infos = 0;
    std::uint64_t tensors = 0;
    std::uint64_t tensor_bytes = 0;
    std::map<std::string, type_count> by_type;     // "FLOAT" -> count, bytes
    std::map<std::string, type_count> by_storage;  // "raw", "external", ...
    std::vector<data_file_summary> data_files;
    std::vector<std::string> problems;         // everything that would stop a merge
    std::vector<error> warnings;               // data files found only by a guess
    std::optional<std::uint64_t> merged_size;  // empty when data is missing
    bool fits_in_one_file = false;             // merged_size <= 2^31 - 1

    /// Nothing would stop a merge: no problem with the model or any of its data files
    /// (what a JSON document's "ok" says).
    [[nodiscard]] bool clean() const noexcept {
        if (!problems.empty()) return false;
        for (const auto& f : data_files)
            if (!f.problems.empty()) return false;
        return true;
    }
};

/// Errors only when the model itself cannot be read; problems with its data are reported.
[[nodiscard]] result<inspect_report> inspect(const std::filesystem::path& model, const onnx::open_options& options);

}  // namespace onnxstream::ops
