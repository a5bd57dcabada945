// The data files a rewrite writes (ops/written_data_file.hpp): the layout defaults as a
// split lays out a model with them, and what the report says of each file against the
// file on disk.
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/ops/externalize.hpp>
#include <onnxstream/ops/written_data_file.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"

#include <algorithm>
#include <map>

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

struct placed {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

// Where each external tensor of `model` is, by name (read back from the written model).
std::map<std::string, placed> placements(const fs::path& model) {
    auto file = onnx::model_file::open(model);
    REQUIRE(file);
    std::map<std::string, placed> out;
    for (const auto& tensor : file->tensors)
        if (tensor.storage == onnx::tensor_storage::external)
            out[std::string(tensor.name)] = {tensor.external->offset.value_or(0), tensor.external->length.value_or(0)};
    return out;
}

ops::externalize_options split_to(const fs::path& output) {
    auto options = ops::externalize_defaults(ops::externalize_kind::split);
    options.output = output;
    options.threads = 1;
    options.backend = io::writer_backend::portable;
    return options;
}

}  // namespace

TEST_CASE("the defaults: 1 KiB threshold, 4 KiB alignment from 1 MiB up, and split starts from them") {
    CHECK(ops::default_threshold == 1024);
    CHECK(ops::default_alignment == 4096);
    CHECK(ops::aligned_tensor_minimum == 1024 * 1024);
    for (const auto kind : {ops::externalize_kind::split, ops::externalize_kind::repack}) {
        const auto options = ops::externalize_defaults(kind);
        CHECK(options.threshold == ops::default_threshold);
        CHECK(options.alignment == ops::default_alignment);
        CHECK(options.align_threshold == ops::aligned_tensor_minimum);
    }
}

TEST_CASE("a split with the defaults: small tensors stay, large ones aligned, the report is the file on disk") {
    temp_folder dir;
    const auto model = write_bytes(dir.path() / "m.onnx",
                                   small_models::model({raw_tensor("small", {255}, ramp(255)),        // 1020 B: stays
                                                        raw_tensor("edge", {256}, ramp(256)),         // 1024 B: moves, dense
                                                        raw_tensor("medium", {3001}, ramp(3001)),     // 12004 B: dense
                                                        raw_tensor("large", {262144}, ramp(262144)),  // 1 MiB: aligned
                                                        raw_tensor("last", {300}, ramp(300))}));      // dense
    const auto output = dir.path() / "out" / "split.onnx";
    fs::create_directories(output.parent_path());
    const auto report = ops::externalize(model, split_to(output));
    REQUIRE(report);
    CHECK(report->kept_small == 1);

    // One data file, named <output file name>.data beside the output, as the report says.
    REQUIRE(report->data_files.size() == 1);
    const auto& written = report->data_files[0];
    CHECK(written.path == output.parent_path() / "split.onnx.data");
    CHECK(written.tensors == 4);
    CHECK(written.size == fs::file_size(written.path));

    const auto where = placements(output);
    REQUIRE(where.size() == 4);
    CHECK(where.count("small") == 0);
    CHECK(where.at("large").offset % ops::default_alignment == 0);
    CHECK(where.at("large").length == 262144 * 4);
    std::uint64_t stored = 0;
    std::uint64_t end = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (const auto& [name, p] : where) {
        stored += p.length;
        end = std::max(end, p.offset + p.length);
        ranges.emplace_back(p.offset, p.offset + p.length);
    }
    CHECK(end == written.size);
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i) CHECK(ranges[i - 1].second <= ranges[i].first);
    // Only the one aligned tensor may be preceded by padding, less than one alignment.
    CHECK(written.size - stored < ops::default_alignment);
}

TEST_CASE("alignment 0 writes the data dense: the file is exactly the tensors' bytes") {
    temp_folder dir;
    const auto model = write_bytes(
        dir.path() / "m.onnx", small_models::model({raw_tensor("a", {300}, ramp(300)), raw_tensor("b", {262144}, ramp(262144)),
                                                    raw_tensor("c", {700}, ramp(700))}));
    auto options = split_to(dir.path() / "dense.onnx");
    options.alignment = 0;
    const auto report = ops::externalize(model, options);
    REQUIRE(report);
    REQUIRE(report->data_files.size() == 1);
    CHECK(report->data_files[0].size == (300 + 262144 + 700) * 4);
    CHECK(report->data_files[0].size == fs::file_size(report->data_files[0].path));
    CHECK(report->data_files[0].tensors == 3);
}
