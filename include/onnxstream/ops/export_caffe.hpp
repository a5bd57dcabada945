// export --to caffe: an ONNX model as PREFIX.prototxt (text NetParameter: layers and
// their parameters) + PREFIX.caffemodel (binary NetParameter: per layer with weights,
// its blobs). Dead code, Identity and inference Dropout go first, and BatchNormalization
// is folded into the Conv/ConvTranspose/Gemm before it where that is exact (the
// optimize passes); then layer_mapping turns the graph into Caffe layers with static
// shapes. Unchanged FLOAT weights are copied straight from the model (or its external
// data) into BlobProto.data by the planner and writer; computed weights (folded,
// transposed, converted) go through a spill file, one tensor at a time.
//
// Nothing is written when any node cannot be exported exactly: the report lists them
// all. Both outputs are temporary files until both are complete, then renamed.
//
// `check` runs the export in OpenCV's dnn module (when the library was built with it)
// and the original model in reference_evaluator on the same seeded input, and compares
// every graph output and every Caffe top that has an ONNX counterpart.
#pragma once

#include <onnxstream/caffe/mapping_notes.hpp>
#include <onnxstream/caffe/reference_evaluator.hpp>
#include <onnxstream/error.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/passes/finding.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxstream::ops {

struct export_caffe_options : rewrite_options {
    // `output` is the PREFIX: PREFIX.prototxt, PREFIX.caffemodel (default: the model's
    // folder and stem).
    caffe::dialect dialect = caffe::dialect::opencv;
    std::map<std::string, caffe::shape> input_shapes;  // --input-shape, by input name
    bool fold_batchnorm = true;
    // Largest tensor the export's own constant folding creates (it becomes a weight).
    std::uint64_t fold_bytes = 1ULL << 30;
    bool check = false;
    double tolerance = 1e-4;  // largest error allowed, relative to the output's magnitude
    bool report = false;      // also PREFIX.caffe-report.json and .html
    std::uint64_t seed = 1;   // of the check's random input
    // What the check's reference evaluation may hold; past it the check is refused (an
    // error) rather than run out of memory.
    caffe::evaluation_limits check_limits;
    // With check: writes the input (float32) and the reference evaluator's graph outputs
    // (float64) here, each folder a manifest.json of {name, dtype, dims, file} plus raw
    // little-endian files, so tests can hold the evaluator against another runtime.
    std::filesystem::path check_dump;
};

struct caffe_layer_row {
    std::string name;
    std::string type;
    std::vector<std::string> bottoms;
    std::vector<std::string> tops;
    std::vector<caffe::shape> top_shapes;
    std::vector<std::string> sources;
    std::optional<double> max_abs_error;  // with check, where the top has an ONNX counterpart
    std::optional<double> max_rel_error;  // max abs error / max |reference|
};

struct caffe_output_check {
    std::string name;
    double max_abs_error = 0;
    double magnitude = 0;  // max |reference|
    double relative_error = 0;
};

struct caffe_check_result {
    bool ran = false;
    std::vector<caffe_output_check> outputs;
    double max_relative_error = 0;
    bool passed = false;
    double reference_seconds = 0;
    double opencv_seconds = 0;
    std::uint64_t compared_blobs = 0;
};

struct file_digest {
    std::filesystem::path path;
    std::string role;  // "model", "data", "prototxt", "caffemodel"
    std::uint64_t size = 0;
    std::string sha256;
};

struct export_caffe_report {
    std::filesystem::path input;
    std::filesystem::path prototxt;
    std::filesystem::path caffemodel;
    std::filesystem::path report_json;  // empty without --report
    std::filesystem::path report_html;
    std::string dialect;
    bool written = false;  // false when refused (see refusals) or the check failed
    std::vector<caffe::refusal> refusals;
    std::vector<std::string> blocked;  // nodes not checked: their inputs come from refused nodes
    std::vector<caffe::decision> decisions;
    std::vector<passes::finding> pass_findings;
    std::uint64_t folded_batchnorms = 0;
    std::vector<caffe_layer_row> layers;
    std::vector<std::string> outputs;
    std::uint64_t caffemodel_size = 0;
    std::uint64_t copied_bytes = 0;    // weight bytes copied as slices
    std::uint64_t computed_bytes = 0;  // weight bytes computed
    std::vector<file_digest> digests;  // SHA-256 of every input and output; only with --report
    caffe_check_result check;
    std::vector<error> warnings;
    double seconds = 0;
};

/// The file-name prefix `output` names, checked: a prefix that is a folder, ends in a
/// separator, or whose last part is empty, "." or ".." would write hidden files
/// (DIR/.prototxt) or files beside the folder it names. Errors: `invalid_argument`.
[[nodiscard]] result<void> check_caffe_prefix(const std::filesystem::path& output);

/// Errors: as optimize (finding external data, writing), `invalid_argument` for an
/// input without a shape, an unknown --input-shape name or a bad prefix
/// (check_caffe_prefix), `unsupported` for an input shape no Caffe blob can hold and when
/// --check is asked of a build without OpenCV, `limit_exceeded` when --check's reference
/// evaluation would pass `check_limits`. Refused nodes and a failed check are in the report
/// (`written` false, or `check.passed` false), not errors.
[[nodiscard]] result<export_caffe_report> export_caffe(const std::filesystem::path& model, const export_caffe_options& options);

/// Whether this build can run --check (OpenCV's dnn module was found).
[[nodiscard]] bool caffe_check_available() noexcept;

}  // namespace onnxstream::ops
