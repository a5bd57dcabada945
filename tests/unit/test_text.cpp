// Reports as text (report/text.hpp): the lines the CLI prints, with model text made safe
// and hints worded by the front end.
#include <onnxstream/report/text.hpp>

#include <doctest/doctest.h>

using namespace onnxstream;

namespace {

std::string flagged(const remedy_step& step) {
    return step.change == remedy::give_data_location ? "pass --data FILE" : std::string(to_string(step.change));
}

// How a file was found, as a front end might word it: the step, and the folder it was given.
std::string found_words(const onnx::how_found& how, const std::filesystem::path& file) {
    return std::string(to_string(how.step)) + " " + (how.data_dir.empty() ? file : how.data_dir).string();
}

}  // namespace

TEST_CASE("an inspect report names its model, escapes model text and words the missing file's hint") {
    ops::inspect_report r;
    r.path = "m.onnx";
    r.file_size = 2048;
    r.ir_version = 8;
    r.producer_name = "evil\x1b]0;title\x07";
    r.opsets = {{"", 13}};
    ops::data_file_summary f;
    f.location = "w.bin";
    f.tensors = 2;
    f.bytes_needed = 100;
    f.problems = {"cannot find the external data file 'w.bin'"};
    f.hint = "looked in:\n    m/w.bin\n  {0}";
    f.remedies = {{remedy::give_data_location, {}}};
    r.data_files.push_back(f);
    const auto text = report::to_text(r, {flagged, false});
    CHECK(text.starts_with("m.onnx  (2.0 KiB)\n  IR version 8, produced by evil\\x1b]0;title\\x07\n  opsets: ai.onnx 13\n"));
    CHECK(text.find("  external data 'w.bin'\n    NOT FOUND\n    2 tensors, needs 100 B\n") != std::string::npos);
    CHECK(text.find("    looked in:\n    m/w.bin\n  pass --data FILE\n") != std::string::npos);
    CHECK(text.ends_with("  merged: unknown until the problems above are fixed\n"));
    CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("an inspect report words how each file was found through the front end's wording") {
    ops::inspect_report r;
    r.path = "m.onnx";
    ops::data_file_summary f;
    f.location = "sub/w.bin";
    f.path = "store/sub/w.bin";
    f.how = onnx::how_found{.step = onnx::found_by::data_dir, .data_dir = "store"};
    f.tensors = 1;
    r.data_files.push_back(f);
    CHECK(report::to_text(r, {flagged, false, found_words}).find("    found: store/sub/w.bin (data_dir store)\n") !=
          std::string::npos);
    // A front end that words nothing shows the step's stable name.
    CHECK(report::to_text(r, {flagged, false}).find("    found: store/sub/w.bin (data_dir)\n") != std::string::npos);
    // Text the front end's words carry is made safe like the rest.
    r.data_files[0].how->data_dir = "st\x1bre";
    const auto text = report::to_text(r, {flagged, false, found_words});
    CHECK(text.find("(data_dir st\\x1bre)") != std::string::npos);
    CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("verify text: problems always, the summary only in full") {
    ops::verify_report r;
    r.path = "m.onnx";
    r.structure_ok = true;
    r.tensors = 3;
    ops::verify_problem p;
    p.check = ops::verify_check::checksum;
    p.tensor = "w";
    p.location = "m.data";
    p.what = with_remedies({error_code::checksum_mismatch, "bytes differ"}, "{0} makes this an error",
                           {{remedy::refuse_guesses, {}}});
    r.problems.push_back(p);
    const report::hint_wording wording{flagged, false};
    const auto problems = "problem: [checksum] tensor 'w' in m.data: bytes differ\n  refuse_guesses makes this an error\n";
    CHECK(report::to_text(r, wording, report::text_detail::findings) == problems);
    CHECK(report::to_text(r, wording) ==
          std::string(problems) + "m.onnx: 1 problem (3 tensors, 0 external in 0 files; no checksums)\n");
}

TEST_CASE("an error as text: one message line, then the worded hint") {
    const auto e = with_remedies({error_code::output_exists, "the output o.onnx already exists"}, "{0} to replace it",
                                 {{remedy::replace_output, {}}});
    CHECK(report::error_text(e, report::severity::error, {flagged, false}) ==
          "onnxstream: error: the output o.onnx already exists\n  replace_output to replace it\n");
    const error warning{error_code::checksum_mismatch, "line\nbreak"};
    CHECK(report::error_text(warning, report::severity::warning, {}) == "onnxstream: warning: line\\nbreak\n");
}

TEST_CASE("a merge line says what was inlined, from where") {
    ops::merge_report r;
    r.output = "m.merged.onnx";
    r.output_size = 4096;
    CHECK(report::merged_text("m.onnx", r, {}) == "m.onnx -> m.merged.onnx: no external data; copied unchanged (4.0 KiB)\n");
    r.tensors_inlined = 1;
    r.bytes_inlined = 1024;
    r.data_files.push_back({"m.data", "dir/m.data", {.step = onnx::found_by::data_flag}, false, 1, 1024});
    const report::hint_wording wording{flagged, false, found_words};
    CHECK(report::merged_text("m.onnx", r, wording) ==
          "m.onnx -> m.merged.onnx: inlined 1 tensor (1.0 KiB), output 4.0 KiB\n  from dir/m.data (data_flag dir/m.data): 1 "
          "tensor\n");
}
