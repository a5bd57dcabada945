#include <onnxstream/onnx/model_file.hpp>

#include <onnxstream/onnx/model_input.hpp>

#include <algorithm>

namespace onnxstream::onnx {
namespace {

// Reads the tensor at message `m`; one whose fields the tree dropped from its body read
// again into `body` (the result's field indices are then the body's). Its external
// reference is read into `reference` when given (see read_tensor), else a block of its own.
result<tensor_info> read_tensor_at(const message_tree& tree, std::uint32_t m, std::optional<message_tree>& body,
                                   external_reference* reference) {
    body.reset();
    const auto read_from = [reference](const message_tree& in, std::uint32_t message) {
        return reference != nullptr ? read_tensor(in, message, *reference) : read_tensor(in, message);
    };
    if (tree.stores_fields(m)) return read_from(tree, m);
    ONNXSTREAM_ASSIGN(auto read, message_tree::body(tree, m));
    body.emplace(std::move(read));
    return read_from(*body, 0);
}

}  // namespace

result<model_file> model_file::open(const std::filesystem::path& path, const tree_options& options, tensor_reading reading,
                                    const external_visitor& on_external) {
    model_file model;
    model.path = path;
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
    const auto bulk = find_bulk_payloads(
        file.size(), [&file](std::uint64_t offset, std::span<std::byte> out) { return file.read_at(offset, out).has_value(); });
    if (!bulk.empty()) ONNXSTREAM_TRY(model.file.copy_in_except(bulk));
    auto tree_options = options;
    tree_options.tensors = reading == tensor_reading::on_demand ? tensor_fields::on_demand : tensor_fields::stored;
    // Unless tensors are kept, the pages the parse has read are released behind it, as
    // they are behind the reads below (views of them stay valid: a released page comes
    // back from the page cache when it is read again).
    io::release_behind behind(model.file.mapping());
    const bool releases = reading != tensor_reading::kept;
    if (releases) tree_options.behind = [&behind](std::uint64_t end) { behind.reached(end); };
    auto parsed = message_tree::parse(model.file.bytes(), tree_options);
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
    std::optional<message_tree> body;  // the tensor's fields, when the tree dropped them
    // A tensor not kept is let go before the next is read: its external reference is read
    // into this one, not a block of its own (one a tensor of a million external ones).
    external_reference reference;
    auto* const scratch = reading == tensor_reading::kept ? nullptr : &reference;
    for (const auto t : model.sites.ids()) {
        const auto m = model.sites[t].message;
        if (releases) behind.reached(model.tree.payload_range(m).offset);
        auto tensor = read_tensor_at(model.tree, m, body, scratch);
        if (!tensor) {
            ONNXSTREAM_TRY(model.file.check_unchanged());
            auto e = std::move(tensor).error();
            e.message = path.string() + ": " + e.message;
            return failure(std::move(e));
        }
        if (tensor->storage == tensor_storage::external) {
            model.external_sites.push_back(t);
            if (on_external) on_external(model, t, *tensor, body ? body->fields(0) : model.tree.fields(m));
        }
        if (reading == tensor_reading::kept) model.tensors.push_back(std::move(tensor).value());
    }
    if (releases) behind.finish(model.file.size());
    ONNXSTREAM_TRY(model.file.check_unchanged());
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

}  // namespace onnxstream::onnx
