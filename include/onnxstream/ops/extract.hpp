// extract: the part of a model that computes some of its values from others, as
// onnx.utils.extract_model defines it, without reading a weight. The kept nodes are those
// of the main graph that --outputs need, found by walking back from them and stopping at
// --inputs (default: the model's graph inputs that are not initializers); a kept If, Loop
// or Scan keeps its subgraphs whole, and the outer values they read are needed too. A
// local function is kept when a kept node (or a kept function's node) calls it.
// Initializers are kept when a kept node reads them; value_info when it still names a
// value. The opset imports are kept as they are (python-onnx does the same).
//
// The new graph inputs and outputs are, in the order given, the ValueInfoProto the model
// has for each name (its graph input or output, else its value_info), else the type of an
// initializer, else the type and shape graph::infer_shapes finds (the element type alone
// when the shape is not known). A model below IR version 4 keeps the kept initializers
// that were graph inputs as graph inputs too, as that IR needs.
//
// Storage: an embedded model stays embedded; a model with external data gets a new data
// file beside the output, `<output file name>.data`, holding only the kept external
// tensors laid out as repack lays them out; with `reuse_data` the output points at the
// original data files instead (they must be inside the output's folder).
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/ops/written_data_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxstream::ops {

struct extract_options : rewrite_options {
    std::vector<std::string> outputs;  // at least one
    std::vector<std::string> inputs;   // empty: the model's graph inputs (not initializers)
    bool reuse_data = false;           // point at the input's data files instead of copying them
};

/// Where a new graph input's or output's type came from.
enum class io_type_source : std::uint8_t { graph_input, graph_output, value_info, initializer, inferred, element_type_only };
[[nodiscard]] const char* to_string(io_type_source source) noexcept;

struct extracted_value {
    std::string name;
    io_type_source type = io_type_source::graph_input;
};

struct extract_report {
    std::filesystem::path input;
    std::filesystem::path output;
    std::string storage;  // "embedded", "external" or "reuse-data"
    std::uint64_t output_size = 0;
    std::vector<written_data_file> data_files;
    std::vector<extracted_value> inputs;
    std::vector<extracted_value> outputs;
    std::uint64_t nodes_kept = 0;  // of the main graph
    std::uint64_t nodes_dropped = 0;
    std::uint64_t functions_kept = 0;
    std::uint64_t functions_dropped = 0;
    std::uint64_t initializers_kept = 0;  // of the main graph
    std::uint64_t initializers_dropped = 0;
    std::uint64_t initializer_bytes_kept = 0;
    std::uint64_t bytes_copied = 0;  // external tensor bytes written to the new data file
    std::vector<error> warnings;
    const char* writer = "";
};

/// Errors: everything optimize reports, plus `invalid_argument` for no --outputs, a name
/// that is no value of the main graph, an output nothing computes (neither a node output,
/// a graph input nor an initializer), inputs that do not cut the graph (the kept part
/// reads a graph input that is not one of them: the error names it), and a new input or
/// output whose element type is known nowhere. Nothing is written on error.
[[nodiscard]] result<extract_report> extract(const std::filesystem::path& model, const extract_options& options);

/// The report as JSON and for people (what the command line and the page print).
[[nodiscard]] std::string extract_report_json(const extract_report& report);
[[nodiscard]] std::string extract_report_text(const extract_report& report);

}  // namespace onnxstream::ops
