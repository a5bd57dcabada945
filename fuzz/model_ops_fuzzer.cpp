// Fuzz target: the whole of inspect, merge and split on a model written to a scratch
// folder beside two small data files (model.onnx.data and weights.data, 4 KiB each).
//
// Invariants: no crash whatever the model says; a failure leaves no output and no
// temporary file behind; a merged model parses and has no external tensor left, and its
// size is the one reported; a split model's data is found again by inspect, and merging it
// succeeds; and merge(split(model)) holds the same tensors (names, dims, types, value
// bytes) as merge(model).
#include "fuzz_support.hpp"

#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/ops/externalize.hpp>
#include <onnxstream/ops/inspect.hpp>
#include <onnxstream/ops/merge.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace onnxstream;
namespace fs = std::filesystem;

const fs::path& folder() {
    static const fs::path path = fuzz::folder_with_data_files("ops");
    return path;
}

void require_self_contained(const fs::path& path, std::uint64_t reported_size) {
    auto merged = onnx::model_file::open(path);
    if (!merged) std::fprintf(stderr, "merged output does not open: %s\n", merged.error().describe().c_str());
    ONNXSTREAM_REQUIRE(merged.has_value());
    ONNXSTREAM_REQUIRE(merged->file.size() == reported_size);
    for (const auto& tensor : merged->tensors) ONNXSTREAM_REQUIRE(tensor.storage != onnx::tensor_storage::external);
}

struct tensor_values {
    std::string name;
    std::int32_t data_type = 0;
    std::vector<std::int64_t> dims;
    std::optional<std::vector<std::byte>> bytes;  // raw form, when it has one
};

std::vector<tensor_values> values_of(const fs::path& path) {
    auto model = onnx::model_file::open(path);
    ONNXSTREAM_REQUIRE(model.has_value());
    std::vector<tensor_values> out;
    for (const auto& tensor : model->tensors) {
        tensor_values v{std::string(tensor.name), tensor.data_type, tensor.dims.to_vector(), std::nullopt};
        if (tensor.storage == onnx::tensor_storage::raw) {
            const auto payload = model->tree.payload(model->tree.field(tensor.raw_field));
            v.bytes.emplace(payload.begin(), payload.end());
        } else if (tensor.storage == onnx::tensor_storage::typed) {
            if (auto raw = onnx::typed_to_raw(model->tree, tensor)) v.bytes = std::move(raw).value();
        } else if (tensor.storage == onnx::tensor_storage::empty && tensor.expected_bytes == 0U) {
            v.bytes.emplace();
        }
        out.push_back(std::move(v));
    }
    return out;
}

void require_same_tensors(const fs::path& expected_path, const fs::path& got_path) {
    const auto expected = values_of(expected_path);
    const auto got = values_of(got_path);
    ONNXSTREAM_REQUIRE(expected.size() == got.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& a = expected[i];
        const auto& b = got[i];
        ONNXSTREAM_REQUIRE(a.name == b.name && a.data_type == b.data_type && a.dims == b.dims);
        if (a.bytes && b.bytes && *a.bytes != *b.bytes) {
            std::fprintf(stderr, "tensor %zu '%s': %zu bytes before split, %zu after\n", i, a.name.c_str(), a.bytes->size(),
                         b.bytes->size());
            ONNXSTREAM_FAIL("a split and merged tensor keeps its bytes");
        }
    }
}

void remove_outputs(const fs::path& dir) {
    std::error_code ignored;
    for (const auto* name : {"merged.onnx", "split.onnx", "split.onnx.data", "remerged.onnx"}) fs::remove(dir / name, ignored);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto& dir = folder();
    const auto model = dir / "model.onnx";
    fuzz::write_file(model, fuzz::as_bytes(data, size));
    remove_outputs(dir);

    const auto report = ops::inspect(model, {});
    if (!report) {
        ONNXSTREAM_REQUIRE(!report.error().message.empty());
        return 0;  // merge and split open the model the same way
    }
    ONNXSTREAM_REQUIRE(report->file_size == size);
    ONNXSTREAM_REQUIRE(!report->problems.empty() || report->merged_size.has_value());

    ops::rewrite_options merge_options;
    merge_options.output = dir / "merged.onnx";
    merge_options.threads = 1;
    const auto merged = ops::merge(model, merge_options);
    fuzz::require_no_leftovers(dir, "merge");
    if (merged) {
        require_self_contained(merge_options.output, merged->output_size);
        if (report->merged_size) ONNXSTREAM_REQUIRE(*report->merged_size == merged->output_size);
    } else {
        ONNXSTREAM_REQUIRE(!fs::exists(merge_options.output));
        ONNXSTREAM_REQUIRE(!merged.error().message.empty());
    }

    ops::externalize_options split_options;
    split_options.output = dir / "split.onnx";
    split_options.threads = 1;
    split_options.threshold = 16;
    split_options.alignment = size % 2 == 0 ? 0 : 64;
    const auto split = ops::externalize(model, split_options);
    fuzz::require_no_leftovers(dir, "split");
    if (!split) {
        ONNXSTREAM_REQUIRE(!fs::exists(split_options.output));
        ONNXSTREAM_REQUIRE(!fs::exists(dir / "split.onnx.data"));
        return 0;
    }
    const auto again = ops::inspect(split_options.output, {});
    if (!again) std::fprintf(stderr, "split output does not inspect: %s\n", again.error().describe().c_str());
    ONNXSTREAM_REQUIRE(again.has_value());
    for (const auto& problem : again->problems) std::fprintf(stderr, "split output problem: %s\n", problem.c_str());
    ONNXSTREAM_REQUIRE(again->problems.empty());

    ops::rewrite_options remerge_options = merge_options;
    remerge_options.output = dir / "remerged.onnx";
    const auto remerged = ops::merge(split_options.output, remerge_options);
    fuzz::require_no_leftovers(dir, "merge of the split output");
    if (merged && !remerged) std::fprintf(stderr, "the split output does not merge: %s\n", remerged.error().describe().c_str());
    if (merged) ONNXSTREAM_REQUIRE(remerged.has_value());
    if (remerged) require_self_contained(remerge_options.output, remerged->output_size);
    if (merged && remerged) require_same_tensors(merge_options.output, remerge_options.output);
    return 0;
}
