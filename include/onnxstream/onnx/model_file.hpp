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
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace onnxstream::onnx {

/// Whether model_file keeps every tensor_info once read, or reads one when asked. A model
/// of a million small tensors holds 120 MB of them; an operation that walks the tensors
/// once or twice (inspect, verify) reads each again instead. On demand, the tree also
/// drops the fields of every TensorProto body and the external_data entries inside it
/// (tensor_fields::on_demand: 80 MB of a million tensors, 340 MB of a million external
/// ones), and a read tokenizes the body again.
enum class tensor_reading : std::uint8_t {
    kept,       // model_file::tensors holds them all; the tree stores every field
    on_demand,  // model_file::tensors stays empty: model_file::tensor reads one
    // Read when asked as on demand, but the tree stores every field: for the operations
    // that edit tensors (their edits address a body's fields in the model's tree) or walk
    // every message's fields (diff).
    on_demand_full_tree,
};

/// One tensor_info, borrowed from model_file::tensors or read for the occasion. Its views
/// point into the model's mapping, as a kept one's do: they outlive the handle. Its field
/// indices (raw_field, typed_fields) are those of `tree()`: the model's tree, or the
/// tensor's body read again when the model's tree dropped it (message_tree::body; an
/// index of one is out of range in the other). Not movable: it may hold that body.
class tensor_handle {
public:
    tensor_handle(const tensor_info& kept, const message_tree& tree) noexcept : info_(&kept), tree_(&tree) {}
    tensor_handle(tensor_info&& read, const message_tree& tree) : read_(std::move(read)), info_(&*read_), tree_(&tree) {}
    tensor_handle(tensor_info&& read, message_tree&& body)
        : read_(std::move(read)), body_(std::move(body)), info_(&*read_), tree_(&*body_) {}
    tensor_handle(const tensor_handle&) = delete;
    tensor_handle& operator=(const tensor_handle&) = delete;

    [[nodiscard]] const tensor_info& operator*() const noexcept { return *info_; }
    [[nodiscard]] const tensor_info* operator->() const noexcept { return info_; }
    /// The tree the tensor's field indices index.
    [[nodiscard]] const message_tree& tree() const noexcept { return *tree_; }
    /// The tensor message's fields in file order, from the read that made this handle: a
    /// field's position is the one tree_edits::drop and insert address in the model's tree.
    /// Empty for a tensor that no longer reads (see model_file::tensor).
    [[nodiscard]] std::span<const field_entry> fields() const {
        if (body_) return body_->fields(0);
        if (tree_->stores_fields(info_->message)) return tree_->fields(info_->message);
        return {};
    }

private:
    std::optional<tensor_info> read_;
    std::optional<message_tree> body_;
    const tensor_info* info_;
    const message_tree* tree_;
};

struct model_file {
    std::filesystem::path path;
    io::source_file file;
    message_tree tree;
    indexed_vector<site_id, tensor_site> sites;
    indexed_vector<site_id, tensor_info> tensors;  // parallel to sites; empty when read on demand
    tensor_reading reading = tensor_reading::kept;
    large_vector<site_id> external_sites;  // the tensors whose data_location is EXTERNAL, in site order

    /// Called with each tensor whose data_location is EXTERNAL as open reads it, in site
    /// order (on demand, during the parse: the model's sites are not found yet).
    /// `tensors_seen` is at least the number of tensors read so far, usually all of them
    /// (message_tree::tensors_seen: what to reserve room for). `tensor`'s field indices are
    /// those of the read and `fields` its message's fields in file order
    /// (tensor_handle::fields); both are valid during the call only (`tensor`'s external
    /// reference is read into the next tensor's).
    using external_visitor = std::function<void(site_id site, std::uint64_t tensors_seen, const tensor_info& tensor,
                                                std::span<const field_entry> fields)>;

    /// Opens, maps, tokenizes and reads every tensor (on demand: reads each and drops it,
    /// so that a model open in either way has every tensor checked). Errors name the file.
    [[nodiscard]] static result<model_file> open(const std::filesystem::path& path, const tree_options& options = {},
                                                 tensor_reading reading = tensor_reading::kept,
                                                 const external_visitor& on_external = {});

    /// The tensor at `site`, kept or read again (which cannot fail: open read it once).
    [[nodiscard]] tensor_handle tensor(site_id site) const;
    /// tensor(site)->data_type, without reading the rest: read on demand, the type open's
    /// read found (tensor_site::data_type), else the body's fields are walked for
    /// data_type alone, where tensor() tokenizes it into a tree and reads every field (the
    /// external entries' text and numbers too). 0 for such a body that no longer reads,
    /// as tensor()'s empty tensor.
    [[nodiscard]] std::int32_t data_type(site_id site) const;
};

/// A pass over a model's tensors in site (file) order. Read on demand (with the full tree
/// or not), it releases the mapped pages behind it (io::release_behind), so that a pass
/// over a million small tensors does not keep the whole file mapped; for kept tensors it
/// only reads them.
class tensor_pass {
public:
    explicit tensor_pass(const model_file& model) noexcept
        : model_(&model), behind_(model.file.mapping()), releases_(model.reading != tensor_reading::kept) {}
    tensor_pass(const tensor_pass&) = delete;
    tensor_pass& operator=(const tensor_pass&) = delete;
    ~tensor_pass() {
        if (releases_) behind_.finish(model_->file.size());
    }

    /// The tensor at `site` (model_file::tensor), the pass being there now.
    [[nodiscard]] tensor_handle read(site_id site) {
        reached(site);
        return model_->tensor(site);
    }
    /// The pass is at `site` now, for a caller that reads its body another way (an edit
    /// of its fields).
    void reached(site_id site) noexcept {
        if (!releases_) return;
        const auto range = model_->tree.payload_range(model_->sites[site].message);
        behind_.reached(range.offset, range.offset + range.length);
    }

private:
    const model_file* model_;
    io::release_behind behind_;
    bool releases_;
};

}  // namespace onnxstream::onnx
