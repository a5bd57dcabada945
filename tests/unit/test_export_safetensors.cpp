// export_safetensors read back by the format's own definition (huggingface/safetensors,
// "Format"): an 8-byte little-endian header size N, a JSON header of
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}} with offsets relative to the
// byte after the header, then the data. The model is the one python-onnx wrote
// (reference_model.hpp), so the expected bytes are numpy's float32 arrays.
#include <onnxstream/ops/export_safetensors.hpp>

#include "reference_model.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <regex>
#include <string>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

struct entry {
    std::string dtype;
    std::string shape;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

// The header's entry for `name`, in the key order the format's examples use.
std::optional<entry> find_entry(const std::string& header, const std::string& name) {
    const std::regex pattern("\"" + name +
                             R"re("\s*:\s*\{\s*"dtype"\s*:\s*"([A-Z0-9_]+)"\s*,\s*"shape"\s*:\s*\[([0-9, ]*)\]\s*,)re"
                             R"re(\s*"data_offsets"\s*:\s*\[\s*([0-9]+)\s*,\s*([0-9]+)\s*\]\s*\})re");
    std::smatch m;
    if (!std::regex_search(header, m, pattern)) return std::nullopt;
    return entry{m[1], std::regex_replace(m[2].str(), std::regex(" "), ""), std::stoull(m[3]), std::stoull(m[4])};
}

}  // namespace

TEST_CASE("the file is header size, JSON header padded to 8 bytes, then each tensor's bytes at its offsets") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    ops::safetensors_options options;
    options.output = dir.path() / "model.safetensors";
    options.backend = io::writer_backend::portable;
    const auto report = ops::export_safetensors(model, options);
    REQUIRE(report);
    CHECK(report->tensors == 2);
    CHECK(report->bytes == 80);

    const auto file = test_support::read_file(options.output);
    REQUIRE(file.size() >= 8);
    std::uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | static_cast<unsigned char>(file[static_cast<std::size_t>(i)]);
    REQUIRE(8 + header_size <= file.size());
    CHECK((8 + header_size) % 8 == 0);
    const auto header = file.substr(8, header_size);
    CHECK(header.front() == '{');
    const auto last = header.find_last_not_of(' ');
    REQUIRE(last != std::string::npos);
    CHECK(header[last] == '}');  // padding is spaces only
    const auto data = file.substr(8 + header_size);
    CHECK(data.size() == 80);

    const auto w = find_entry(header, "W");
    const auto b = find_entry(header, "B");
    REQUIRE(w);
    REQUIRE(b);
    CHECK(w->dtype == "F32");
    CHECK(w->shape == "4,4");
    CHECK(b->dtype == "F32");
    CHECK(b->shape == "4");
    CHECK(w->end - w->begin == 64);
    CHECK(b->end - b->begin == 16);
    CHECK(std::min(w->begin, b->begin) == 0);
    CHECK(std::max(w->end, b->end) == data.size());  // contiguous, nothing else in between
    CHECK(data.substr(w->begin, 64) == test_support::text_of(test_support::reference_w_bin));
    const float bias[] = {0.5F, -1.0F, 2.0F, 3.0F};
    CHECK(data.substr(b->begin, 16) == std::string(reinterpret_cast<const char*>(bias), 16));
}

TEST_CASE("safetensors dtypes: the format's names for the ONNX types it can hold, none for the rest") {
    const std::pair<std::int32_t, const char*> names[] = {
        {1, "F32"},  {2, "U8"},   {3, "I8"},   {4, "U16"},  {5, "I16"},   {6, "I32"},      {7, "I64"},      {9, "BOOL"},
        {10, "F16"}, {11, "F64"}, {12, "U32"}, {13, "U64"}, {16, "BF16"}, {17, "F8_E4M3"}, {19, "F8_E5M2"},
    };
    for (const auto& entry : names) {
        const auto onnx_type = entry.first;  // not a structured binding: CAPTURE's lambda reads it
        const auto* const name = entry.second;
        CAPTURE(onnx_type);
        REQUIRE(ops::safetensors_dtype(onnx_type) != nullptr);
        CHECK(std::string(ops::safetensors_dtype(onnx_type)) == name);
    }
    // STRING, COMPLEX64/128, the fnuz float8 variants, 4-bit types and unknown numbers.
    for (const std::int32_t onnx_type : {0, 8, 14, 15, 18, 20, 21, 22, 23, 99}) {
        CAPTURE(onnx_type);
        CHECK(ops::safetensors_dtype(onnx_type) == nullptr);
    }
}
