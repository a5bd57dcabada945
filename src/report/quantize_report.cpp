// The quantize report as JSON and as text (json.hpp, text.hpp), in its own file as the
// Caffe export's is. Tensor names come from the model: the text form passes them through
// terminal_safe.
#include <onnxstream/ops/quantize.hpp>
#include <onnxstream/report/byte_size.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/json_writer.hpp>
#include <onnxstream/report/safe_text.hpp>
#include <onnxstream/report/text.hpp>

#include <cstdio>

namespace onnxstream::report {

std::string to_json(const ops::quantize_report& r) {
    json_writer json;
    json.begin_object();
    json.field("input", r.input.generic_string()).field("output", r.output.generic_string());
    json.field("output_size", r.output_size).field("weights", r.weights).field("block_size", r.block_size);
    json.field("symmetric", r.symmetric).field("format", r.format);
    json.field("opset_before", r.opset_before).field("opset_after", r.opset_after);
    json.field("ir_version_before", r.ir_version_before).field("ir_version_after", r.ir_version_after);
    json.field("nodes_upgraded", r.nodes_upgraded);
    json.field("tensors_quantized", static_cast<std::uint64_t>(r.quantized.size()));
    json.field("tensors_skipped", static_cast<std::uint64_t>(r.skipped.size()));
    json.field("bytes_before", r.bytes_before).field("bytes_after", r.bytes_after);
    json.field("max_relative_error", r.max_relative_error);
    json.key("quantized").begin_array();
    for (const auto& q : r.quantized) {
        json.begin_object().field("name", q.name).key("dims").begin_array();
        for (const auto d : q.dims) json.value(d);
        json.end_array().field("axis", q.axis).field("bytes_before", q.bytes_before).field("bytes_after", q.bytes_after);
        json.field("max_relative_error", q.max_relative_error).end_object();
    }
    json.end_array().key("skipped").begin_array();
    for (const auto& s : r.skipped) json.begin_object().field("name", s.name).field("reason", s.reason).end_object();
    json.end_array().key("data_files").begin_array();
    for (const auto& f : r.data_files)
        json.begin_object().field("path", f.path.generic_string()).field("size", f.size).field("tensors", f.tensors).end_object();
    json.end_array().key("warnings").begin_array();
    for (const auto& w : r.warnings) json.value(w.message);
    json.end_array().field("writer", r.writer).end_object();
    return json.text();
}

std::string to_text(const ops::quantize_report& r) {
    std::string out;
    char line[160];
    out += "quantized " + std::to_string(r.quantized.size()) + " weight(s) to " + r.weights + " (block " +
           std::to_string(r.block_size) + ", " + (r.symmetric ? "symmetric" : "asymmetric") +
           "): " + human_bytes(r.bytes_before) + " -> " + human_bytes(r.bytes_after) + "\n";
    std::snprintf(line, sizeof line, "largest error: %.3g of a tensor's largest magnitude\n", r.max_relative_error);
    out += line;
    if (r.opset_after != r.opset_before)
        out += "opset " + std::to_string(r.opset_before) + " -> " + std::to_string(r.opset_after) + "\n";
    if (r.ir_version_after != r.ir_version_before)
        out += "ir_version " + std::to_string(r.ir_version_before) + " -> " + std::to_string(r.ir_version_after) + "\n";
    if (r.nodes_upgraded > 0)
        out += std::to_string(r.nodes_upgraded) + " reduction(s) given their axes as an input (the opset 18 form)\n";
    for (const auto& s : r.skipped) out += "skipped " + terminal_safe(s.name) + ": " + terminal_safe(s.reason) + "\n";
    out += "wrote " + terminal_safe(r.output.string()) + " (" + human_bytes(r.output_size) + ")\n";
    for (const auto& f : r.data_files) out += "wrote " + terminal_safe(f.path.string()) + " (" + human_bytes(f.size) + ")\n";
    return out;
}

}  // namespace onnxstream::report
