#include <onnxstream/onnx/model_file.hpp>

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/model_input.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>

namespace onnxstream::onnx {
namespace {

// Reads the tensors of a model being opened, one at a time in site order: each is checked,
// the external ones are passed on, and kept ones stored. On demand they are read during
// the parse, while the tree still holds the body it drops next (tree_options::on_tensor),
// so that no body is tokenized twice; otherwise from the finished tree.
class tensor_reads {
public:
    tensor_reads(model_file& model, const model_file::external_visitor& on_external) : model_(model), on_external_(on_external) {}

    // Reads the tensor at message `m` of `tree` (the model's, whole or as far as parsed),
    // the next site. The first that fails is kept (failed()), and nothing is read after it.
    void read(const message_tree& tree, std::uint32_t m) {
        if (failure_) return;
        const site_id t(next_++);
        const bool kept = model_.reading == tensor_reading::kept;
        // A tensor not kept is let go before the next is read: its external reference is
        // read into this one, not a block of its own (one a tensor of a million external ones).
        auto tensor = kept ? read_tensor(tree, m) : read_tensor(tree, m, reference_);
        if (!tensor) {
            failure_ = std::move(tensor).error();
            failed_message_ = m;
            return;
        }
        const auto type = tensor->data_type;
        types_.push_back(type >= 0 && type < tensor_site::unrecorded_type ? static_cast<std::uint8_t>(type)
                                                                          : tensor_site::unrecorded_type);
        if (tensor->storage == tensor_storage::external) {
            model_.external_sites.push_back(t);
            if (on_external_) on_external_(t, tree.tensors_seen(), *tensor, tree.fields(m));
        }
        if (kept) model_.tensors.push_back(std::move(tensor).value());
    }

    // Gives each site the data_type its read found (sites in read order).
    void record_types(indexed_vector<site_id, tensor_site>& sites) {
        for (std::size_t i = 0; i < types_.size() && i < sites.size(); ++i)
            sites[site_id(static_cast<std::uint32_t>(i))].data_type = types_[i];
    }

    // The first tensor that failed, if any, its error's path named in `tree`: the whole
    // one (during the parse, a message's path may lack the index of an ancestor whose
    // siblings were not all read yet).
    [[nodiscard]] std::optional<error> failed(const message_tree& tree) {
        if (failure_) failure_->field_path = tree.path(failed_message_);
        return std::move(failure_);
    }

private:
    model_file& model_;
    const model_file::external_visitor& on_external_;
    external_reference reference_;
    std::uint32_t next_ = 0;
    std::vector<std::uint8_t> types_;  // by site, until record_types
    std::optional<error> failure_;
    std::uint32_t failed_message_ = no_index;
};

}  // namespace

result<model_file> model_file::open(const std::filesystem::path& path, const tree_options& options, tensor_reading reading,
                                    const external_visitor& on_external) {
    model_file model;
    model.path = path;
    model.reading = reading;
    auto opened = io::source_file::open(path, true);
    if (!opened) {
        auto e = std::move(opened).error();
        if (e.code == error_code::missing_data) e.code = error_code::io;  // a missing model is not missing data
        return failure(std::move(e));
    }
    model.file = std::move(opened).value();
    // A weights file given as the model fails to parse at some byte; say what it is instead.
    const auto bytes = model.file.bytes();
    ONNXSTREAM_TRY(check_not_data_file(path, bytes.first(std::min<std::size_t>(bytes.size(), 16))));
    // The tree reads every field header through the mapping. Reading them first with
    // pread finds the large payloads, and everything else is copied into private memory:
    // the weights' pages are then mapped only when their bytes are needed (see
    // mapped_file::copy_in_except for why a mere header read would map megabytes).
    const auto& file = model.file;
    const read_function read = [&file](std::uint64_t offset, std::span<std::byte> out) {
        return file.read_at(offset, out).has_value();
    };
    const auto bulk = find_bulk_payloads(file.size(), read);
    if (!bulk.empty()) ONNXSTREAM_TRY(model.file.copy_in_except(bulk));
    auto tree_options = options;
    const bool on_demand = reading == tensor_reading::on_demand;
    tree_options.tensors = on_demand ? tensor_fields::on_demand : tensor_fields::stored;
    // Unless tensors are kept, the pages the parse has read are released behind it, as
    // they are behind the reads below (views of them stay valid: a released page comes
    // back from the page cache when it is read again).
    io::release_behind behind(model.file.mapping());
    const bool releases = reading != tensor_reading::kept;
    if (releases) tree_options.behind = [&behind](std::uint64_t end) { behind.reached(end); };
    // A large message's headers are read (pread) rather than faulted in and released
    // before its children fault them in again, unless they are private memory already.
    if (releases && bulk.empty()) tree_options.read = read;
    tensor_reads reads(model, on_external);
    if (on_demand) tree_options.on_tensor = [&reads](const message_tree& so_far, std::uint32_t m) { reads.read(so_far, m); };
    auto parsed = message_tree::parse(model.file.bytes(), tree_options);
    // A model cut short while it was read fails to parse for that reason, whatever the
    // parser saw in the zeros that stood in for the missing bytes.
    ONNXSTREAM_TRY(model.file.check_unchanged());
    // A damaged field anywhere is the problem named first, as when every tensor was read
    // after the parse.
    if (!parsed) {
        auto e = std::move(parsed).error();
        e.message = path.string() + ": " + e.message;
        return failure(std::move(e));
    }
    model.tree = std::move(parsed).value();
    model.sites = find_tensors(model.tree);
    if (!on_demand) {
        if (reading == tensor_reading::kept) model.tensors.reserve(model.sites.size());
        for (const auto t : model.sites.ids()) {
            const auto m = model.sites[t].message;
            if (releases) behind.reached(model.tree.payload_range(m).offset);
            reads.read(model.tree, m);
        }
    }
    reads.record_types(model.sites);
    if (releases) behind.finish(model.file.size());
    ONNXSTREAM_TRY(model.file.check_unchanged());
    if (auto e = reads.failed(model.tree)) {
        e->message = path.string() + ": " + e->message;
        return failure(std::move(*e));
    }
    return model;
}

tensor_handle model_file::tensor(site_id site) const {
    if (reading == tensor_reading::kept) return tensor_handle(tensors[site], tree);
    // Open read this tensor and it was sound. A read again sees other bytes only if the
    // file changed under a page released behind a pass (io::release_behind) and faulted
    // back in from the file; every operation checks the file unchanged before it reports
    // anything (io::source_file::check_unchanged), so meanwhile such a tensor reads as an
    // empty one at its message.
    const auto m = sites[site].message;
    tensor_info unreadable;
    unreadable.message = m;
    if (tree.stores_fields(m)) {
        auto read = read_tensor(tree, m);
        return tensor_handle(read ? std::move(read).value() : std::move(unreadable), tree);
    }
    auto body = message_tree::body(tree, m);
    if (!body) return tensor_handle(std::move(unreadable), tree);
    auto read = read_tensor(*body, 0);
    if (!read) return tensor_handle(std::move(unreadable), tree);
    read->message = m;
    return tensor_handle(std::move(read).value(), std::move(body).value());
}

std::int32_t model_file::data_type(site_id site) const {
    if (reading == tensor_reading::kept) return tensors[site].data_type;
    if (sites[site].data_type != tensor_site::unrecorded_type) return sites[site].data_type;
    const auto m = sites[site].message;
    const auto is_type = [](std::uint32_t n, proto::wire_type type) {
        return n == number(tensor_field::data_type) && type == proto::wire_type::varint;
    };
    std::int32_t type = 0;
    if (tree.stores_fields(m)) {
        for (const auto& f : tree.fields(m))
            if (is_type(f.number(), f.type())) type = static_cast<std::int32_t>(tree.value(f));
        return type;
    }
    const auto range = tree.payload_range(m);
    const auto end = range.offset + range.length;
    for (auto at = range.offset; at < end;) {
        proto::field_token field;
        if (!proto::next_field(tree.bytes(), at, end, field)) return 0;
        if (is_type(field.number, field.type)) type = static_cast<std::int32_t>(field.value);
        at = field.end_offset();
    }
    return type;
}

}  // namespace onnxstream::onnx
