// The infer-shapes report as JSON and as text. Op types come from the model: the text
// form passes them through terminal_safe.
#include <onnxstream/ops/infer_shapes.hpp>
#include <onnxstream/report/byte_size.hpp>
#include <onnxstream/report/json_writer.hpp>
#include <onnxstream/report/safe_text.hpp>

#include <cstdio>

namespace onnxstream::ops {

std::string infer_shapes_report_json(const infer_shapes_report& r) {
    report::json_writer json;
    json.begin_object();
    json.field("input", r.input.generic_string()).field("output", r.output.generic_string());
    json.field("output_size", r.output_size).field("values", r.values).field("inferred", r.inferred);
    json.field("partial", r.partial).field("unknown", r.unknown);
    json.key("not_inferred_by_op").begin_object();
    for (const auto& [op, count] : r.unknown_by_op) json.field(op, count);
    json.end_object();
    json.field("value_info_written", r.value_info_written).field("value_info_replaced", r.value_info_replaced);
    json.field("inputs_fixed", r.inputs_fixed).field("seconds", r.seconds);
    json.key("warnings").begin_array();
    for (const auto& w : r.warnings) json.value(w.message);
    json.end_array().field("writer", r.writer).end_object();
    return json.text();
}

std::string infer_shapes_report_text(const infer_shapes_report& r) {
    std::string out;
    char line[200];
    std::snprintf(line, sizeof line, "%llu value(s): %llu inferred, %llu in part, %llu unknown (%.2f s)\n",
                  static_cast<unsigned long long>(r.values), static_cast<unsigned long long>(r.inferred),
                  static_cast<unsigned long long>(r.partial), static_cast<unsigned long long>(r.unknown), r.seconds);
    out += line;
    for (const auto& [op, count] : r.unknown_by_op)
        out += "  not inferred: " + std::to_string(count) + " from " + report::terminal_safe(op) + "\n";
    if (r.inputs_fixed > 0) out += std::to_string(r.inputs_fixed) + " input(s) given the dims asked for\n";
    out += std::to_string(r.value_info_written) + " value_info entries written";
    if (r.value_info_replaced > 0) out += " (" + std::to_string(r.value_info_replaced) + " replaced)";
    out += "\nwrote " + report::terminal_safe(r.output.string()) + " (" + report::human_bytes(r.output_size) + ")\n";
    return out;
}

}  // namespace onnxstream::ops
