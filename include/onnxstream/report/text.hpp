// Reports as text for people: the one place that turns each operation's report into the
// lines `onnxstream COMMAND` prints on stdout and the page shows under a finished job.
// Every function returns whole lines, each ending in '\n' (empty when there is nothing to
// say), already safe to show: every piece passes through terminal_safe(..., keep_lines),
// so a front end writes the text as it is. Hints inside a report (a verify problem, a
// missing data file) are worded by the `wording` the front end passes (report/hint_text.hpp).
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/ops/analyze.hpp>
#include <onnxstream/ops/convert.hpp>
#include <onnxstream/ops/diff.hpp>
#include <onnxstream/ops/export_caffe.hpp>
#include <onnxstream/ops/export_safetensors.hpp>
#include <onnxstream/ops/externalize.hpp>
#include <onnxstream/ops/inspect.hpp>
#include <onnxstream/ops/merge.hpp>
#include <onnxstream/ops/optimize.hpp>
#include <onnxstream/ops/quantize.hpp>
#include <onnxstream/ops/verify.hpp>
#include <onnxstream/report/byte_size.hpp>
#include <onnxstream/report/hint_text.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace onnxstream::report {

/// "1 tensor", "3 tensors".
[[nodiscard]] std::string plural(std::uint64_t n, std::string_view word);

/// How much of a report to show: `full`, or `findings` (what --quiet keeps: verify's problems).
enum class text_detail : std::uint8_t { full, findings };

[[nodiscard]] std::string to_text(const ops::inspect_report& r, const hint_wording& wording);
[[nodiscard]] std::string to_text(const ops::analyze_report& r);
[[nodiscard]] std::string to_text(const ops::externalize_report& r);  // split, repack
[[nodiscard]] std::string to_text(const ops::optimize_report& r);
[[nodiscard]] std::string to_text(const ops::verify_report& r, const hint_wording& wording,
                                  text_detail detail = text_detail::full);
[[nodiscard]] std::string to_text(const ops::diff_report& r);
/// `dtype`: "float16" or "bfloat16".
[[nodiscard]] std::string to_text(const ops::convert_report& r, std::string_view dtype);
[[nodiscard]] std::string to_text(const ops::safetensors_report& r);
[[nodiscard]] std::string to_text(const ops::quantize_report& r);
/// What was written (the refusals, when there are some, are `refusals_text`).
[[nodiscard]] std::string to_text(const ops::export_caffe_report& r);
/// One merged model, as merge prints it for each MODEL (`wording` says how each data file was found).
[[nodiscard]] std::string merged_text(const std::string& input, const ops::merge_report& r, const hint_wording& wording);

/// The nodes an export refused, one line each, after a first line saying nothing was
/// written, and a last one saying what to do (`wording` names the optimize command).
[[nodiscard]] std::string refusals_text(const ops::export_caffe_report& r, const hint_wording& wording);

/// How serious a message is: its prefix ("onnxstream: error: ", "onnxstream: warning: ").
enum class severity : std::uint8_t { error, warning };
/// "onnxstream: error: <what>\n" and, when there is one, "  <hint>\n".
[[nodiscard]] std::string error_text(const error& e, severity level, const hint_wording& wording);

}  // namespace onnxstream::report
