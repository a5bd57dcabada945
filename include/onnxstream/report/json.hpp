// Reports as JSON: the one place that turns each operation's report into the document
// `--json` prints and the gui page reads (report/text.hpp holds the text for people).
// Hints are worded by the front end's `wording` (report/hint_text.hpp; the default words
// each remedy by its stable name). Every function returns one JSON value (no
// trailing newline); `write_*` append to a writer for documents that nest reports.
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
#include <onnxstream/report/hint_text.hpp>
#include <onnxstream/report/json_writer.hpp>

#include <span>
#include <string>
#include <string_view>

namespace onnxstream::report {

/// One kind of analyze finding: its JSON key and its title for people.
struct finding_category {
    passes::finding_kind kind;
    const char* key;    // "dead_nodes"
    const char* title;  // "dead nodes"
};
/// The categories analyze reports, in the order they are shown.
[[nodiscard]] std::span<const finding_category> analyze_categories() noexcept;

/// Per-pass totals are the library's (ops/optimize.hpp); reports name them here too.
using ops::pass_totals;
using ops::totals;

/// {"code", "message", "hint"[, "remedies"][, "field_path"][, "offset"]}: the hint as
/// `wording` words it (the remedies listed too when it says so).
void write_error(json_writer& json, const error& e, const hint_wording& wording = {});
/// {"ok": false, "error": {...}}
[[nodiscard]] std::string error_json(const error& e, const hint_wording& wording = {});

[[nodiscard]] std::string to_json(const ops::inspect_report& r, const hint_wording& wording = {});
[[nodiscard]] std::string to_json(const ops::analyze_report& r);
/// The same document written to `json` (a writer with a sink streams it: a report of a
/// million findings is never held as one string).
void write_json(json_writer& json, const ops::analyze_report& r);
/// analyze's findings by scope and by category (the index into analyze_categories()).
[[nodiscard]] ops::finding_list::groups analyze_groups(const ops::analyze_report& r);
[[nodiscard]] std::string to_json(const ops::externalize_report& r);  // split, repack
[[nodiscard]] std::string to_json(const ops::optimize_report& r);
/// The same document written to `json` (streamed with a sink: dce on a million unused
/// initializers lists a million findings).
void write_json(json_writer& json, const ops::optimize_report& r);
[[nodiscard]] std::string to_json(const ops::verify_report& r, const hint_wording& wording = {});
[[nodiscard]] std::string to_json(const ops::diff_report& r);
/// `dtype`: "fp16" or "bf16", as the command line spells the target.
[[nodiscard]] std::string to_json(const ops::convert_report& r, std::string_view dtype);
[[nodiscard]] std::string to_json(const ops::safetensors_report& r);
[[nodiscard]] std::string to_json(const ops::quantize_report& r);
/// `tolerance`: the --check tolerance the comparison used.
[[nodiscard]] std::string to_json(const ops::export_caffe_report& r, double tolerance);

/// One merged model inside merge's {"models": [...]} document: {"input", "ok": true, ...}.
void write_merged(json_writer& json, const std::string& input, const ops::merge_report& r);
/// One model that failed: {"input", "ok": false, "error": {...}}.
void write_merge_failure(json_writer& json, const std::string& input, const error& e, const hint_wording& wording = {});
/// A whole merge document for one model, as `merge --json` prints it.
[[nodiscard]] std::string merge_json(const std::string& input, const result<ops::merge_report>& r,
                                     const hint_wording& wording = {});

}  // namespace onnxstream::report
