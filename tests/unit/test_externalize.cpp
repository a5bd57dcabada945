// The split/repack engine on hand-made models: dedupe, shards, checksums, in-place safety.
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/ops/externalize.hpp>
#include <onnxstream/ops/verify.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

ops::externalize_options repack_options(const fs::path& output) {
    ops::externalize_options options;
    options.output = output;
    options.output_suffix = "repacked";
    options.threads = 1;
    options.backend = io::writer_backend::portable;
    return options;
}

ops::verify_report verified(const fs::path& model) {
    auto report = ops::verify(model, {});
    REQUIRE(report);
    return std::move(report).value();
}

}  // namespace

TEST_CASE("dedupe shares identical tensors only: same type and every byte") {
    temp_folder dir;
    // 96 KiB tensors: the first 64 KiB of `b` equal `a`'s, the rest differs.
    const auto a = ramp(24 * 1024);
    auto b = a;
    b.back() ^= std::byte{1};
    const auto model = write_bytes(
        dir.path() / "m.onnx", small_models::model({raw_tensor("a", {24 * 1024}, a), raw_tensor("a_copy", {24 * 1024}, a),
                                                    raw_tensor("b", {24 * 1024}, b), typed_tensor("a_typed", {24 * 1024}, a)}));
    auto options = repack_options(dir.path() / "out.onnx");
    options.dedupe = true;
    const auto report = ops::externalize(model, options);
    REQUIRE(report);
    CHECK(report->deduplicated == 2);  // a_copy and a_typed share a's bytes; b does not
    CHECK(report->bytes_saved == 2 * a.size());
    REQUIRE(report->data_files.size() == 1);
    CHECK(report->data_files[0].size == 2 * a.size());
    CHECK(verified(dir.path() / "out.onnx").clean());
}

TEST_CASE("shards hold whole tensors, at most the shard size unless one tensor is larger") {
    temp_folder dir;
    std::vector<proto_builder> tensors;
    for (int i = 0; i < 5; ++i) tensors.push_back(raw_tensor("t" + std::to_string(i), {1000}, ramp(1000, static_cast<float>(i))));
    tensors.push_back(raw_tensor("big", {5000}, ramp(5000)));
    const auto model = write_bytes(dir.path() / "m.onnx", small_models::model(tensors));
    auto options = repack_options(dir.path() / "out.onnx");
    options.shard_size = 8500;  // two 4000-byte tensors fit, a third does not
    options.alignment = 0;
    const auto report = ops::externalize(model, options);
    REQUIRE(report);
    REQUIRE(report->data_files.size() == 4);
    CHECK(report->data_files[0].path.filename() == "out.onnx-00001-of-00004.data");
    CHECK(report->data_files[3].path.filename() == "out.onnx-00004-of-00004.data");
    for (const auto& f : report->data_files) CHECK((f.size <= 8500 || f.tensors == 1));
    CHECK(report->data_files[3].size == 20000);
    CHECK(ops::shard_name("w.data", 11, 12) == "w-00012-of-00012.data");
    CHECK(verified(dir.path() / "out.onnx").clean());
}

TEST_CASE("checksums: written on request, kept when present, a wrong one kept as it was") {
    temp_folder dir;
    const auto good = ramp(512);
    const auto bad = ramp(512, 3.0f);
    std::vector<std::byte> file(good);
    file.insert(file.end(), bad.begin(), bad.end());
    write_bytes(dir.path() / "w.bin", file);
    const auto good_sum = io::to_hex(io::sha1_of(good));
    const std::string wrong_sum(40, 'a');
    const auto model = write_bytes(dir.path() / "m.onnx",
                                   small_models::model({external_tensor("good", {512}, "w.bin", "0", "2048", good_sum),
                                                        external_tensor("bad", {512}, "w.bin", "2048", "2048", wrong_sum),
                                                        raw_tensor("plain", {512}, good)}));
    SUBCASE("kept without --write-checksums") {
        const auto report = ops::externalize(model, repack_options(dir.path() / "out.onnx"));
        REQUIRE(report);
        CHECK(report->warnings.size() == 1);  // the wrong one, found while copying
        const auto v = verified(dir.path() / "out.onnx");
        CHECK(v.checksums == 2);
        REQUIRE(v.problems.size() == 1);
        CHECK(v.problems[0].tensor == "bad");
    }
    SUBCASE("written with --write-checksums, except over a wrong one") {
        auto options = repack_options(dir.path() / "out.onnx");
        options.write_checksums = true;
        options.dedupe = true;  // `plain` becomes a duplicate of `good`
        const auto report = ops::externalize(model, options);
        REQUIRE(report);
        const auto v = verified(dir.path() / "out.onnx");
        CHECK(v.checksums == 3);
        CHECK(v.checksums_matched == 2);
        REQUIRE(v.problems.size() == 1);
        CHECK(v.problems[0].tensor == "bad");
    }
    SUBCASE("refused with --strict") {
        auto options = repack_options(dir.path() / "out.onnx");
        options.strict = true;
        const auto report = ops::externalize(model, options);
        REQUIRE_FALSE(report);
        CHECK(report.error().code == error_code::checksum_mismatch);
        CHECK_FALSE(fs::exists(dir.path() / "out.onnx"));
        CHECK_FALSE(fs::exists(dir.path() / "out.onnx.data"));
    }
}

TEST_CASE("writing over the inputs needs allow_in_place and force, and then is safe") {
    temp_folder dir;
    const auto values = ramp(4096);
    std::vector<std::byte> file(100, std::byte{0x55});  // orphaned bytes before the tensor
    file.insert(file.end(), values.begin(), values.end());
    write_bytes(dir.path() / "m.onnx.data", file);
    const auto model = write_bytes(dir.path() / "m.onnx",
                                   small_models::model({external_tensor("w", {4096}, "m.onnx.data", "100", "16384")}));
    auto options = repack_options(model);
    options.data_name = "m.onnx.data";
    auto report = ops::externalize(model, options);
    REQUIRE_FALSE(report);
    CHECK(report.error().code == error_code::output_is_input);
    options.force = true;
    report = ops::externalize(model, options);
    REQUIRE_FALSE(report);
    CHECK(report.error().code == error_code::output_is_input);  // split never replaces its inputs
    options.allow_in_place = true;
    options.force = false;
    report = ops::externalize(model, options);
    REQUIRE_FALSE(report);
    CHECK(report.error().remedies.front().change == remedy::replace_output);  // the CLI words it "pass --force"
    options.force = true;
    report = ops::externalize(model, options);
    REQUIRE(report);
    CHECK(fs::file_size(dir.path() / "m.onnx.data") == values.size());  // the orphans are gone
    CHECK(read_file(dir.path() / "m.onnx.data") == std::string(reinterpret_cast<const char*>(values.data()), values.size()));
    CHECK(verified(model).clean());
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
    CHECK(entries == 2);  // no temporary file left
}

TEST_CASE("an external tensor of a type onnxstream cannot size still moves") {
    temp_folder dir;
    const auto values = ramp(16);
    write_bytes(dir.path() / "old.bin", values);
    proto_builder odd;
    odd.varint_field(onnx_fields::tensor_dims, 4)
        .varint_field(onnx_fields::tensor_type, 99)
        .string_field(onnx_fields::tensor_name, "odd");
    odd.message_field(onnx_fields::tensor_external, string_entry("location", "old.bin"));
    odd.varint_field(onnx_fields::tensor_location, 1);
    const auto model = write_bytes(dir.path() / "m.onnx", small_models::model({odd}));
    auto options = repack_options(dir.path() / "out.onnx");
    options.threshold = 0;
    const auto report = ops::externalize(model, options);
    REQUIRE(report);
    CHECK(report->tensors_external == 1);
    fs::remove(dir.path() / "old.bin");
    const auto v = verified(dir.path() / "out.onnx");
    CHECK(v.problems.empty());
    CHECK(v.files.size() == 1);
    CHECK(v.files[0].location == "out.onnx.data");
}
