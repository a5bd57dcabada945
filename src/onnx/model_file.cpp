#include <onnxstream/onnx/model_file.hpp>

namespace onnxstream::onnx {

result<model_file> model_file::open(const std::filesystem::path& path, const tree_options& options, tensor_reading reading) {
    model_file model;
    model.path = path;
    auto opened = io::source_file::open(path, true);
    if (!opened) {
        auto e = std::move(opened).error();
        if (e.code == error_code::missing_data) e.code = error_code::io;  // a missing model is not missing data
        return failure(std::move(e));
    }
    model.file = std::move(opened).value();
    // The tree reads every field header through the mapping. Reading them first with
    // pread finds the large payloads, and everything else is copied into private memory:
    // the weights' pages are then mapped only when their bytes are needed (see
    // mapped_file::copy_in_except for why a mere header read would map megabytes).
    const auto& file = model.file;
    const auto bulk = find_bulk_payloads(
        file.size(), [&file](std::uint64_t offset, std::span<std::byte> out) { return file.read_at(offset, out).has_value(); });
    if (!bulk.empty()) ONNXSTREAM_TRY(model.file.copy_in_except(bulk));
    auto parsed = message_tree::parse(model.file.bytes(), options);
    // A model cut short while it was read fails to parse for that reason, whatever the
    // parser saw in the zeros that stood in for the missing bytes.
    ONNXSTREAM_TRY(model.file.check_unchanged());
    if (!parsed) {
        auto e = std::move(parsed).error();
        e.message = path.string() + ": " + e.message;
        return failure(std::move(e));
    }
    model.tree = std::move(parsed).value();
    model.sites = find_tensors(model.tree);
    model.reading = reading;
    if (reading == tensor_reading::kept) model.tensors.reserve(model.sites.size());
    for (const auto t : model.sites.ids()) {
        auto tensor = read_tensor(model.tree, model.sites[t].message);
        if (!tensor) {
            ONNXSTREAM_TRY(model.file.check_unchanged());
            auto e = std::move(tensor).error();
            e.message = path.string() + ": " + e.message;
            return failure(std::move(e));
        }
        if (tensor->storage == tensor_storage::external) model.external_sites.push_back(t);
        if (reading == tensor_reading::kept) model.tensors.push_back(std::move(tensor).value());
    }
    ONNXSTREAM_TRY(model.file.check_unchanged());
    return model;
}

tensor_handle model_file::tensor(site_id site) const {
    if (reading == tensor_reading::kept) return tensor_handle(tensors[site]);
    // The tree and its bytes are what open read (the mapping is checked unchanged before
    // anything is reported), so the read that succeeded there succeeds here.
    auto read = read_tensor(tree, sites[site].message);
    return tensor_handle(std::move(read).value());
}

}  // namespace onnxstream::onnx
