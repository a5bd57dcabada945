// inspect's report on a model python-onnx wrote (reference_model.hpp): the facts python-onnx
// reads from the same bytes, and a merged size equal to what python-onnx serializes once
// the external tensor is inlined. The text and JSON renderings of the report are pinned by
// tests/e2e/test_inspect_golden.py.
#include <onnxstream/ops/inspect.hpp>

#include "reference_model.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace onnxstream;
using test_support::temp_folder;

TEST_CASE("inspect reports what python-onnx reads, and the size python-onnx gives the merged model") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto report = ops::inspect(model, {});
    REQUIRE(report);
    CHECK(report->file_size == sizeof test_support::reference_model);
    CHECK(report->ir_version == 8);
    CHECK(report->producer_name == "reference");
    CHECK(report->producer_version == "1");
    CHECK(report->graph_name == "g");
    REQUIRE(report->opsets.size() == 1);
    CHECK(report->opsets[0] == std::pair<std::string, std::int64_t>{"", 13});
    CHECK(report->inputs.empty());
    REQUIRE(report->outputs.size() == 1);
    CHECK(report->outputs[0].name == "Y");
    CHECK(report->outputs[0].type == "FLOAT");
    CHECK(report->outputs[0].shape == std::vector<std::string>{"4", "4"});
    CHECK(report->nodes == 1);
    CHECK(report->main_graph_nodes == 1);
    CHECK(report->op_types == std::map<std::string, std::uint64_t>{{"Add", 1}});
    CHECK(report->subgraphs == 0);
    CHECK(report->functions.empty());

    CHECK(report->tensors == 2);
    CHECK(report->tensor_bytes == 80);  // 16 + 4 floats
    CHECK(report->by_type.at("FLOAT").tensors == 2);
    CHECK(report->by_storage.at("external").bytes == 64);
    CHECK(report->by_storage.at("raw").bytes == 16);

    REQUIRE(report->data_files.size() == 1);
    const auto& file = report->data_files[0];
    CHECK(file.location == "w.bin");
    REQUIRE(file.path);
    CHECK(std::filesystem::equivalent(*file.path, dir.path() / "w.bin"));
    CHECK_FALSE(file.guessed);
    CHECK(file.size == 64);
    CHECK(file.tensors == 1);
    CHECK(file.bytes_needed == 64);
    CHECK(file.problems.empty());
    CHECK(report->problems.empty());

    CHECK(report->merged_size == sizeof test_support::reference_merged);
    CHECK(report->fits_in_one_file);
}

TEST_CASE("a missing data file is a problem in the report, not an error; the merged size is unknown") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    std::filesystem::remove(dir.path() / "w.bin");
    const auto report = ops::inspect(model, {});
    REQUIRE(report);
    REQUIRE(report->data_files.size() == 1);
    CHECK_FALSE(report->data_files[0].path);
    CHECK_FALSE(report->data_files[0].size);
    CHECK(report->data_files[0].bytes_needed == 64);  // known from the model alone
    CHECK_FALSE(report->data_files[0].problems.empty());
    CHECK_FALSE(report->problems.empty());
    CHECK_FALSE(report->merged_size);
    CHECK_FALSE(report->fits_in_one_file);
}

TEST_CASE("a file that is not a model is an error") {
    temp_folder dir;
    const auto report = ops::inspect(dir.write("text.onnx", "this is not protobuf\n"), {});
    REQUIRE_FALSE(report);
    CHECK((report.error().code == error_code::malformed || report.error().code == error_code::not_onnx));
    const auto missing = ops::inspect(dir.path() / "absent.onnx", {});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == error_code::io);
}
