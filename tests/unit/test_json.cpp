#include <onnxstream/report/json.hpp>

#include <doctest/doctest.h>

using namespace onnxstream;

TEST_CASE("an error document carries the code, message and hint, and escapes model text") {
    const error e{error_code::missing_data, "data file 'w\x01.bin' not found", "give it with --data"};
    CHECK(
        report::error_json(e) ==
        R"({"ok":false,"error":{"code":"missing_data","message":"data file 'w\u0001.bin' not found","hint":"give it with --data"}})");
}

TEST_CASE("a merge document holds one entry per model, ok or not") {
    ops::merge_report r;
    r.output = "m.merged.onnx";
    r.output_size = 10;
    r.writer = "portable";
    const auto ok = report::merge_json("m.onnx", r);
    CHECK(ok.find(R"("models":[{"input":"m.onnx","ok":true,"output":"m.merged.onnx","output_size":10)") != std::string::npos);
    CHECK(ok.ends_with(R"("ok":true})"));
    const result<ops::merge_report> failed = failure(error_code::io, "disk full");
    CHECK(report::merge_json("m.onnx", failed).ends_with(R"("ok":false})"));
}

TEST_CASE("found_by is the step's stable name, with what the step was given, whatever the wording") {
    ops::merge_report r;
    r.data_files.push_back(
        {"w.bin", "/store/w.bin", {.step = onnx::found_by::data_dir_file_name, .data_dir = "/store"}, false, 1, 8});
    r.data_files.push_back(
        {"x.bin", "/m/model.data", {.step = onnx::found_by::common_name, .common_name = "model.data"}, true, 1, 8});
    r.data_files.push_back({"y.bin", "/m/y.bin", {.step = onnx::found_by::model_folder}, false, 1, 8});
    const auto words = [](const onnx::how_found&, const std::filesystem::path&) { return std::string("WORDED"); };
    const auto merged = report::merge_json("m.onnx", r, {nullptr, false, words});
    CHECK(merged.find("WORDED") == std::string::npos);
    CHECK(merged.find(R"("path":"/store/w.bin","found_by":"data_dir_file_name","data_dir":"/store","guessed":false)") !=
          std::string::npos);
    CHECK(merged.find(R"("found_by":"common_name","common_name":"model.data","guessed":true)") != std::string::npos);
    CHECK(merged.find(R"("path":"/m/y.bin","found_by":"model_folder","guessed":false)") != std::string::npos);

    ops::inspect_report inspected;
    ops::data_file_summary missing;
    missing.location = "gone.bin";
    inspected.data_files.push_back(missing);
    ops::data_file_summary given;
    given.location = "w.bin";
    given.path = "/elsewhere/w.bin";
    given.how = onnx::how_found{.step = onnx::found_by::data_flag};
    inspected.data_files.push_back(given);
    const auto json = report::to_json(inspected);
    CHECK(json.find(R"({"location":"gone.bin","path":null,"found_by":null,"guessed":false)") != std::string::npos);
    CHECK(json.find(R"({"location":"w.bin","path":"/elsewhere/w.bin","found_by":"data_flag","guessed":false)") !=
          std::string::npos);
}

TEST_CASE("optimize pass totals sum what each finding removed") {
    ops::pass_result pass;
    pass.name = "dce";
    pass.findings.add({passes::finding_kind::dead_node, "", "Relu", {"r"}, 2, 0, 1, ""});
    pass.findings.add({passes::finding_kind::unused_initializer, "", "", {"w"}, 0, 64, 1, ""});
    const auto t = report::totals(pass);
    CHECK(t.nodes == 2);
    CHECK(t.initializers == 1);
    CHECK(t.bytes == 64);
}

TEST_CASE("an optimize document streamed through a sink is the document to_json makes") {
    ops::optimize_report r;
    r.input = "in.onnx";
    r.output = "out.onnx";
    r.rounds = 1;
    ops::pass_result pass;
    pass.name = "dce";
    pass.changes = 3;
    pass.findings.add({passes::finding_kind::unused_initializer, "graph", "", {"w\"1"}, 0, 64, 1, ""});
    pass.findings.add({passes::finding_kind::removed_value_info, "graph", "", {}, 0, 0, 2, ""});
    pass.findings.add({passes::finding_kind::skipped, "graph", "Conv", {"c", "d"}, 0, 0, 1, "why"});
    r.passes.push_back(std::move(pass));
    const auto whole = report::to_json(r);
    CHECK(whole.find(R"({"kind":"unused_initializer","scope":"graph","names":["w\"1"],"nodes":0,"bytes":64})") !=
          std::string::npos);
    CHECK(whole.find(R"("count":2)") != std::string::npos);
    CHECK(whole.find(
              R"({"kind":"skipped","scope":"graph","op_type":"Conv","names":["c","d"],"nodes":0,"bytes":0,"detail":"why"})") !=
          std::string::npos);
    std::string streamed;
    std::size_t pieces = 0;
    {
        report::json_writer json(
            [&](std::string_view piece) {
                streamed += piece;
                ++pieces;
            },
            16);
        report::write_json(json, r);
        json.flush();
    }
    CHECK(streamed == whole);
    CHECK(pieces > 1);
}
