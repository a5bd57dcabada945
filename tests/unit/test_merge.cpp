// merge against the reference serializer: the model python-onnx wrote (reference_model.hpp)
// merged by onnxstream is byte for byte what python-onnx serializes after inlining the
// external tensor itself (protobuf's field order puts raw_data where external_data was).
#include <onnxstream/ops/merge.hpp>

#include "reference_model.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

ops::rewrite_options to(const std::filesystem::path& output, io::writer_backend backend) {
    ops::rewrite_options options;
    options.output = output;
    options.backend = backend;
    options.threads = 1;
    return options;
}

}  // namespace

TEST_CASE("merge writes the bytes python-onnx writes for the inlined model, with either writer") {
    for (const auto backend : {io::writer_backend::portable, io::writer_backend::automatic}) {
        CAPTURE(static_cast<int>(backend));
        temp_folder dir;
        const auto model = test_support::write_reference_model(dir);
        const auto output = dir.path() / "merged.onnx";
        const auto report = ops::merge(model, to(output, backend));
        REQUIRE(report);
        CHECK(test_support::read_file(output) == test_support::text_of(test_support::reference_merged));
        CHECK(report->output_size == sizeof test_support::reference_merged);
        CHECK(report->tensors_inlined == 1);
        CHECK(report->bytes_inlined == 64);
        REQUIRE(report->data_files.size() == 1);
        CHECK(report->data_files[0].location == "w.bin");
        CHECK(report->data_files[0].tensors == 1);
        CHECK(report->warnings.empty());
    }
}

TEST_CASE("merging the merged model changes nothing: a model without external data is copied") {
    temp_folder dir;
    const auto merged = dir.write("merged.onnx", test_support::text_of(test_support::reference_merged));
    const auto output = dir.path() / "again.onnx";
    const auto report = ops::merge(merged, to(output, io::writer_backend::portable));
    REQUIRE(report);
    CHECK(report->tensors_inlined == 0);
    CHECK(test_support::read_file(output) == test_support::text_of(test_support::reference_merged));
}

TEST_CASE("merge refuses before writing: a missing data file, an existing output, the input itself") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto output = dir.path() / "merged.onnx";

    std::filesystem::create_directory(dir.path() / "aside");  // a folder no search looks in
    std::filesystem::rename(dir.path() / "w.bin", dir.path() / "aside" / "w.bin");
    const auto missing = ops::merge(model, to(output, io::writer_backend::portable));
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == error_code::missing_data);
    CHECK_FALSE(std::filesystem::exists(output));
    std::filesystem::rename(dir.path() / "aside" / "w.bin", dir.path() / "w.bin");

    dir.write("merged.onnx", "keep me");
    const auto exists = ops::merge(model, to(output, io::writer_backend::portable));
    REQUIRE_FALSE(exists);
    CHECK(exists.error().code == error_code::output_exists);
    CHECK(test_support::read_file(output) == "keep me");

    auto over_input = to(model, io::writer_backend::portable);
    over_input.force = true;
    const auto self = ops::merge(model, over_input);
    REQUIRE_FALSE(self);
    CHECK(self.error().code == error_code::output_is_input);
    CHECK(test_support::read_file(model) == test_support::text_of(test_support::reference_model));
}
