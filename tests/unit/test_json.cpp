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

TEST_CASE("optimize pass totals sum what each finding removed") {
    ops::pass_result pass;
    pass.name = "dce";
    pass.findings.push_back({passes::finding_kind::dead_node, "", "Relu", {"r"}, 2, 0, 1, ""});
    pass.findings.push_back({passes::finding_kind::unused_initializer, "", "", {"w"}, 0, 64, 1, ""});
    const auto t = report::totals(pass);
    CHECK(t.nodes == 2);
    CHECK(t.initializers == 1);
    CHECK(t.bytes == 64);
}
