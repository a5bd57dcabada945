#include "export_caffe_report.hpp"

#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/report/json_writer.hpp>

#include <cmath>
#include <cstdio>
#include <memory>

namespace onnxstream::ops {
namespace {

// The report shows names from the model: report::json_quote keeps the document valid
// JSON whatever bytes they hold (this copy once wrote them raw, invalid UTF-8 included).
std::string json_string(std::string_view s) { return report::json_quote(s); }

std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", v);
    return text;
}

std::string html(std::string_view s) {
    std::string out;
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char escape[16];
                    std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(c));
                    out += escape;
                } else {
                    out += ch;
                }
        }
    }
    return out;
}

std::string shape_text(const caffe::shape& s, const char* separator) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? separator : "") + std::to_string(s[i]);
    return out;
}

std::string string_array(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + json_string(items[i]);
    return out + "]";
}

}  // namespace

result<file_digest> sha256_of_file(const std::filesystem::path& path) {
    ONNXSTREAM_ASSIGN(const auto file, io::source_file::open(path, false));
    io::sha256_hasher hasher;
    ONNXSTREAM_TRY(io::for_each_chunk(file, 0, file.size(), [&](std::span<const std::byte> piece) { hasher.update(piece); }));
    const auto digest = hasher.finish();
    file_digest out;
    out.path = path;
    out.size = file.size();
    out.sha256 = io::to_hex(digest);
    return out;
}

std::string report_json(const export_caffe_report& r) {
    std::string o = "{\n";
    o += "  \"input\": " + json_string(r.input.string()) + ",\n";
    o += "  \"prototxt\": " + json_string(r.prototxt.string()) + ",\n";
    o += "  \"caffemodel\": " + json_string(r.caffemodel.string()) + ",\n";
    o += "  \"dialect\": " + json_string(r.dialect) + ",\n";
    o += "  \"written\": " + std::string(r.written ? "true" : "false") + ",\n";
    o += "  \"folded_batchnorms\": " + std::to_string(r.folded_batchnorms) + ",\n";
    o += "  \"caffemodel_size\": " + std::to_string(r.caffemodel_size) + ",\n";
    o += "  \"copied_weight_bytes\": " + std::to_string(r.copied_bytes) + ",\n";
    o += "  \"computed_weight_bytes\": " + std::to_string(r.computed_bytes) + ",\n";
    o += "  \"seconds\": " + number(r.seconds) + ",\n";
    o += "  \"files\": [";
    for (std::size_t i = 0; i < r.digests.size(); ++i) {
        const auto& d = r.digests[i];
        o += std::string(i ? "," : "") + "\n    {\"role\": " + json_string(d.role) +
             ", \"path\": " + json_string(d.path.string()) + ", \"size\": " + std::to_string(d.size) +
             ", \"sha256\": " + json_string(d.sha256) + "}";
    }
    o += "\n  ],\n  \"decisions\": [";
    for (std::size_t i = 0; i < r.decisions.size(); ++i) {
        const auto& d = r.decisions[i];
        o += std::string(i ? "," : "") + "\n    {\"kind\": " + json_string(d.kind) + ", \"layer\": " + json_string(d.layer) +
             ", \"detail\": " + json_string(d.detail) + "}";
    }
    o += "\n  ],\n  \"refusals\": [";
    for (std::size_t i = 0; i < r.refusals.size(); ++i) {
        const auto& x = r.refusals[i];
        o += std::string(i ? "," : "") + "\n    {\"op_type\": " + json_string(x.op_type) + ", \"node\": " + json_string(x.node) +
             ", \"why\": " + json_string(x.why) + ", \"hint\": " + json_string(x.hint) + "}";
    }
    o += "\n  ],\n  \"layers\": [";
    for (std::size_t i = 0; i < r.layers.size(); ++i) {
        const auto& l = r.layers[i];
        o += std::string(i ? "," : "") + "\n    {\"name\": " + json_string(l.name) + ", \"type\": " + json_string(l.type) +
             ", \"bottoms\": " + string_array(l.bottoms) + ", \"tops\": " + string_array(l.tops) + ", \"top_shapes\": [";
        for (std::size_t k = 0; k < l.top_shapes.size(); ++k)
            o += std::string(k ? "," : "") + "[" + shape_text(l.top_shapes[k], ",") + "]";
        o += "], \"sources\": " + string_array(l.sources);
        o += ", \"max_abs_error\": " + (l.max_abs_error ? number(*l.max_abs_error) : "null");
        o += ", \"max_rel_error\": " + (l.max_rel_error ? number(*l.max_rel_error) : "null") + "}";
    }
    o += "\n  ],\n  \"check\": ";
    if (!r.check.ran) {
        o += "null";
    } else {
        const auto& c = r.check;
        o += "{\"passed\": " + std::string(c.passed ? "true" : "false") +
             ", \"max_relative_error\": " + number(c.max_relative_error) +
             ", \"compared_blobs\": " + std::to_string(c.compared_blobs) +
             ", \"reference_seconds\": " + number(c.reference_seconds) + ", \"opencv_seconds\": " + number(c.opencv_seconds) +
             ", \"outputs\": [";
        for (std::size_t i = 0; i < c.outputs.size(); ++i) {
            const auto& x = c.outputs[i];
            o += std::string(i ? "," : "") + "{\"name\": " + json_string(x.name) +
                 ", \"max_abs_error\": " + number(x.max_abs_error) + ", \"magnitude\": " + number(x.magnitude) +
                 ", \"relative_error\": " + number(x.relative_error) + "}";
        }
        o += "]}";
    }
    o += "\n}\n";
    return o;
}

std::string report_html(const export_caffe_report& r) {
    std::string o =
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Caffe export of " +
        html(r.input.filename().string()) +
        "</title>\n<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#eee}"
        "code{font:12px monospace}.ok{color:#070;font-weight:bold}.bad{color:#b00;font-weight:bold}</style></head><body>\n";
    o += "<h1>Caffe export of <code>" + html(r.input.string()) + "</code></h1>\n";
    o += "<p>Dialect <b>" + html(r.dialect) + "</b>; " + std::to_string(r.layers.size()) + " layers; " +
         std::to_string(r.folded_batchnorms) + " BatchNormalization folded; " + std::to_string(r.copied_bytes) +
         " weight bytes copied, " + std::to_string(r.computed_bytes) + " computed; " + number(r.seconds) + " s.</p>\n";
    if (r.check.ran) {
        o += std::string("<h2>Check: <span class=\"") + (r.check.passed ? "ok\">passed" : "bad\">failed") + "</span></h2>\n";
        o += "<p>Largest error relative to the output's magnitude: " + number(r.check.max_relative_error) + "; " +
             std::to_string(r.check.compared_blobs) + " blobs compared. Forward time: reference " +
             number(r.check.reference_seconds) + " s, OpenCV " + number(r.check.opencv_seconds) +
             " s.</p>\n<table><tr><th>output</th><th>max abs error</th><th>magnitude</th><th>relative</th></tr>\n";
        for (const auto& x : r.check.outputs)
            o += "<tr><td><code>" + html(x.name) + "</code></td><td>" + number(x.max_abs_error) + "</td><td>" +
                 number(x.magnitude) + "</td><td>" + number(x.relative_error) + "</td></tr>\n";
        o += "</table>\n";
    }
    o += "<h2>Files</h2>\n<table><tr><th>role</th><th>path</th><th>size</th><th>SHA-256</th></tr>\n";
    for (const auto& d : r.digests)
        o += "<tr><td>" + html(d.role) + "</td><td><code>" + html(d.path.string()) + "</code></td><td>" + std::to_string(d.size) +
             "</td><td><code>" + html(d.sha256) + "</code></td></tr>\n";
    o += "</table>\n<h2>Decisions</h2>\n<table><tr><th>kind</th><th>layer</th><th>detail</th></tr>\n";
    for (const auto& d : r.decisions)
        o += "<tr><td>" + html(d.kind) + "</td><td><code>" + html(d.layer) + "</code></td><td>" + html(d.detail) + "</td></tr>\n";
    o += "</table>\n<h2>Layers</h2>\n<table><tr><th>#</th><th>name</th><th>type</th><th>bottoms</th><th>tops</th><th>shape</th>"
         "<th>ONNX nodes</th><th>max abs error</th><th>relative</th></tr>\n";
    for (std::size_t i = 0; i < r.layers.size(); ++i) {
        const auto& l = r.layers[i];
        auto list = [](const std::vector<std::string>& items) {
            std::string s;
            for (std::size_t k = 0; k < items.size(); ++k)
                s += (k ? "<br>" : "") + std::string("<code>") + html(items[k]) + "</code>";
            return s;
        };
        std::string shapes;
        for (std::size_t k = 0; k < l.top_shapes.size(); ++k)
            shapes += (k ? "<br>" : "") + shape_text(l.top_shapes[k], "&times;");
        o += "<tr><td>" + std::to_string(i) + "</td><td><code>" + html(l.name) + "</code></td><td>" + html(l.type) + "</td><td>" +
             list(l.bottoms) + "</td><td>" + list(l.tops) + "</td><td>" + shapes + "</td><td>" + list(l.sources) + "</td><td>" +
             (l.max_abs_error ? number(*l.max_abs_error) : "") + "</td><td>" + (l.max_rel_error ? number(*l.max_rel_error) : "") +
             "</td></tr>\n";
    }
    o += "</table>\n</body></html>\n";
    return o;
}

}  // namespace onnxstream::ops
