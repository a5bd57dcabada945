// The extract report as JSON and as text. Value names come from the model: the text form
// passes them through terminal_safe.
#include <onnxstream/ops/extract.hpp>
#include <onnxstream/report/byte_size.hpp>
#include <onnxstream/report/json_writer.hpp>
#include <onnxstream/report/safe_text.hpp>

namespace onnxstream::ops {

namespace {

void write_values(report::json_writer& json, const std::vector<extracted_value>& values) {
    json.begin_array();
    for (const auto& v : values) json.begin_object().field("name", v.name).field("type_from", to_string(v.type)).end_object();
    json.end_array();
}

std::string value_list(const std::vector<extracted_value>& values) {
    std::string out;
    for (const auto& v : values) {
        if (!out.empty()) out += ", ";
        out += report::terminal_safe(v.name);
        if (v.type != io_type_source::graph_input && v.type != io_type_source::graph_output)
            out += std::string(" (type: ") + to_string(v.type) + ")";
    }
    return out;
}

}  // namespace

std::string extract_report_json(const extract_report& r) {
    report::json_writer json;
    json.begin_object();
    json.field("input", r.input.generic_string()).field("output", r.output.generic_string());
    json.field("output_size", r.output_size).field("storage", r.storage);
    json.key("inputs");
    write_values(json, r.inputs);
    json.key("outputs");
    write_values(json, r.outputs);
    json.field("nodes_kept", r.nodes_kept).field("nodes_dropped", r.nodes_dropped);
    json.field("functions_kept", r.functions_kept).field("functions_dropped", r.functions_dropped);
    json.field("initializers_kept", r.initializers_kept).field("initializers_dropped", r.initializers_dropped);
    json.field("initializer_bytes_kept", r.initializer_bytes_kept).field("bytes_copied", r.bytes_copied);
    json.key("data_files").begin_array();
    for (const auto& f : r.data_files)
        json.begin_object().field("path", f.path.generic_string()).field("size", f.size).field("tensors", f.tensors).end_object();
    json.end_array().key("warnings").begin_array();
    for (const auto& w : r.warnings) json.value(w.message);
    json.end_array().field("writer", r.writer).end_object();
    return json.text();
}

std::string extract_report_text(const extract_report& r) {
    std::string out;
    out += "kept " + std::to_string(r.nodes_kept) + " node(s) of the main graph, dropped " + std::to_string(r.nodes_dropped);
    if (r.functions_kept + r.functions_dropped > 0)
        out += "; functions: " + std::to_string(r.functions_kept) + " kept, " + std::to_string(r.functions_dropped) + " dropped";
    out += "\n";
    out += "initializers: " + std::to_string(r.initializers_kept) + " kept (" + report::human_bytes(r.initializer_bytes_kept) +
           "), " + std::to_string(r.initializers_dropped) + " dropped\n";
    out += "inputs: " + value_list(r.inputs) + "\n";
    out += "outputs: " + value_list(r.outputs) + "\n";
    if (r.storage == "external") out += "copied " + report::human_bytes(r.bytes_copied) + " of external data\n";
    if (r.storage == "reuse-data") out += "the output points at the input's data files\n";
    out += "wrote " + report::terminal_safe(r.output.string()) + " (" + report::human_bytes(r.output_size) + ")\n";
    for (const auto& f : r.data_files)
        out += "wrote " + report::terminal_safe(f.path.string()) + " (" + report::human_bytes(f.size) + ")\n";
    return out;
}

}  // namespace onnxstream::ops
