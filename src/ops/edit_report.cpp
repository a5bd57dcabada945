// The edit report as JSON and as text. Names come from the model or the command line:
// the text form passes them through terminal_safe.
#include <onnxstream/ops/edit.hpp>
#include <onnxstream/report/byte_size.hpp>
#include <onnxstream/report/json_writer.hpp>
#include <onnxstream/report/safe_text.hpp>

namespace onnxstream::ops {

std::string edit_report_json(const edit_report& r) {
    report::json_writer json;
    json.begin_object();
    json.field("input", r.input.generic_string()).field("output", r.output.generic_string());
    json.field("output_size", r.output_size);
    json.key("changes").begin_array();
    for (const auto& c : r.changes)
        json.begin_object().field("kind", c.kind).field("name", c.name).field("detail", c.detail).end_object();
    json.end_array().key("warnings").begin_array();
    for (const auto& w : r.warnings) json.value(w.message);
    json.end_array().field("writer", r.writer).end_object();
    return json.text();
}

std::string edit_report_text(const edit_report& r) {
    std::string out;
    for (const auto& c : r.changes) {
        out += c.kind;
        if (!c.name.empty()) out += " '" + report::terminal_safe(c.name) + "'";
        if (!c.detail.empty()) out += ": " + report::terminal_safe(c.detail);
        out += "\n";
    }
    out += "wrote " + report::terminal_safe(r.output.string()) + " (" + report::human_bytes(r.output_size) + ")\n";
    return out;
}

}  // namespace onnxstream::ops
