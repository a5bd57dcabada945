// The audit report of a Caffe export, as JSON and as one self-contained HTML page (no
// script, no external resource: it opens from a mail attachment). Every string from the
// model is escaped for its context.
#pragma once

#include <onnxstream/ops/export_caffe.hpp>

#include <filesystem>
#include <string>

namespace onnxstream::ops {

[[nodiscard]] std::string report_json(const export_caffe_report& report);
[[nodiscard]] std::string report_html(const export_caffe_report& report);

/// SHA-256 and size of a file, read in bounded pieces.
[[nodiscard]] result<file_digest> sha256_of_file(const std::filesystem::path& path);

}  // namespace onnxstream::ops
