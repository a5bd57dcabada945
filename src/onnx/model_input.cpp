#include <onnxstream/onnx/model_input.hpp>

#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/onnx/fields.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <system_error>

namespace onnxstream::onnx {

namespace fs = std::filesystem;

bool starts_like_model(std::span<const std::byte> start) noexcept {
    std::uint64_t tag = 0;
    std::size_t i = 0;
    for (int shift = 0; i < start.size() && shift < 35; shift += 7) {
        const auto byte = static_cast<std::uint8_t>(start[i++]);
        tag |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
        if ((byte & 0x80U) == 0) break;
        if (i == start.size()) return false;
    }
    if (i == 0) return false;
    const auto wire = tag & 7U;
    switch (static_cast<model_field>(tag >> 3)) {
        case model_field::ir_version:
        case model_field::model_version: return wire == 0;  // varint
        case model_field::producer_name:
        case model_field::producer_version:
        case model_field::domain:
        case model_field::doc_string:
        case model_field::graph:
        case model_field::opset_import:
        case model_field::metadata_props:
        case model_field::training_info:
        case model_field::functions: return wire == 2;  // length-delimited
    }
    return false;
}

namespace {

// The model a data file named after it belongs to, when that model is beside it:
// x.onnx.data, x.onnx_data, x.data, x.bin ... -> x.onnx (the names the data search tries).
std::optional<fs::path> owning_model(const fs::path& data) {
    auto name = data.filename().string();
    if (name.ends_with("_data")) name.resize(name.size() - 5);
    else name.resize(name.size() - data.extension().string().size());
    if (name.empty()) return std::nullopt;
    if (!name.ends_with(".onnx")) name += ".onnx";
    auto candidate = data.parent_path() / name;
    std::error_code ec;
    if (candidate == data || !fs::is_regular_file(candidate, ec)) return std::nullopt;
    return candidate;
}

}  // namespace

result<void> check_not_data_file(const fs::path& path, std::span<const std::byte> start) {
    if (!looks_like_data(path) || starts_like_model(start)) return {};
    if (const auto model = owning_model(path))
        return failure(error_code::not_onnx,
                       path.string() + " is the weights file (external data) of " + model->string() + ", not a model",
                       "give " + model->filename().string() + " instead: its weights are found from it");
    return failure(error_code::not_onnx,
                   path.string() + " is named like a weights file (external data) and does not start like an ONNX model",
                   "give the .onnx model that refers to it; its weights are found from it");
}

result<model_input> probe_model_input(const fs::path& path) {
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (!fs::exists(status)) return model_input::missing;
    if (!fs::is_regular_file(status)) return model_input::other;
    ONNXSTREAM_ASSIGN(const auto file, io::source_file::open(path, false));
    std::array<std::byte, 16> start{};
    const auto length = std::min<std::uint64_t>(start.size(), file.size());
    ONNXSTREAM_TRY(file.read_at(0, std::span(start).first(static_cast<std::size_t>(length))));
    const auto read = std::span<const std::byte>(start).first(static_cast<std::size_t>(length));
    ONNXSTREAM_TRY(check_not_data_file(path, read));
    return starts_like_model(read) ? model_input::model : model_input::other;
}

}  // namespace onnxstream::onnx
