// A model opened for rewriting: the mapped file, its message tree and every tensor in
// it, read and validated once. Move-only; the tree's views point into the mapping, which
// moves with it.
#pragma once

#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

namespace onnxstream::onnx {

/// Whether model_file keeps every tensor_info once read, or reads one when asked. A model
/// of a million small tensors holds 120 MB of them; an operation that walks the tensors
/// once or twice (inspect, verify) reads each again instead.
enum class tensor_reading : std::uint8_t {
    kept,       // model_file::tensors holds them all
    on_demand,  // model_file::tensors stays empty: model_file::tensor reads one
};

/// One tensor_info, borrowed from model_file::tensors or read for the occasion. Its views
/// point into the model's mapping, as a kept one's do: they outlive the handle.
class tensor_handle {
public:
    explicit tensor_handle(const tensor_info& kept) noexcept : info_(&kept) {}
    explicit tensor_handle(tensor_info&& read) : read_(std::move(read)), info_(&*read_) {}
    tensor_handle(const tensor_handle&) = delete;
    tensor_handle& operator=(const tensor_handle&) = delete;

    [[nodiscard]] const tensor_info& operator*() const noexcept { return *info_; }
    [[nodiscard]] const tensor_info* operator->() const noexcept { return info_; }

private:
    std::optional<tensor_info> read_;
    const tensor_info* info_;
};

struct model_file {
    std::filesystem::path path;
    io::source_file file;
    message_tree tree;
    indexed_vector<site_id, tensor_site> sites;
    indexed_vector<site_id, tensor_info> tensors;  // parallel to sites; empty when read on demand
    tensor_reading reading = tensor_reading::kept;
    std::vector<site_id> external_sites;  // the tensors whose data_location is EXTERNAL, in site order

    /// Opens, maps, tokenizes and reads every tensor (on demand: reads each and drops it,
    /// so that a model open in either way has every tensor checked). Errors name the file.
    [[nodiscard]] static result<model_file> open(const std::filesystem::path& path, const tree_options& options = {},
                                                 tensor_reading reading = tensor_reading::kept);

    /// The tensor at `site`, kept or read again (which cannot fail: open read it once).
    [[nodiscard]] tensor_handle tensor(site_id site) const;
};

}  // namespace onnxstream::onnx
