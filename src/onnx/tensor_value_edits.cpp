#include <onnxstream/onnx/tensor_value_edits.hpp>

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_fields.hpp>
#include <onnxstream/onnx/model_file.hpp>

#include <algorithm>
#include <bit>

namespace onnxstream::onnx {

namespace {

struct value_fields {
    std::uint32_t first = 0;        // the position of the first value field, or field_count
    std::uint32_t field_count = 0;  // the message's
};

// A body the tree dropped is read again and its drops addressed by position. One that no
// longer tokenizes (the file changed under a released page) is left as it is: every
// writer checks its sources unchanged before it keeps an output.
value_fields drop_values(const message_tree& tree, std::uint32_t message, std::span<const field_entry> fields,
                         tree_edits& edits) {
    value_fields out{static_cast<std::uint32_t>(fields.size()), static_cast<std::uint32_t>(fields.size())};
    for (std::uint32_t i = 0; i < fields.size(); ++i) {
        if (!holds_tensor_value(fields[i].number())) continue;
        edits.drop(tree, message, i);
        out.first = std::min(out.first, i);
    }
    return out;
}

value_fields drop_values(const message_tree& tree, std::uint32_t message, tree_edits& edits) {
    const auto read = message_fields::read(tree, message);
    if (!read) return {};
    return drop_values(tree, message, read->fields(), edits);
}

}  // namespace

std::uint32_t drop_value_fields(const message_tree& tree, std::uint32_t message, tree_edits& edits) {
    return drop_values(tree, message, edits).first;
}

std::uint32_t drop_value_fields(const message_tree& tree, const tensor_handle& tensor, tree_edits& edits) {
    return drop_values(tree, tensor->message, tensor.fields(), edits).first;
}

void store_external(const message_tree& tree, std::uint32_t message, const external_entry& where, tree_edits& edits) {
    store_external(tree, message, edits.add_external(where), edits);
}

void store_external(const message_tree& tree, std::uint32_t message, std::uint32_t record, tree_edits& edits) {
    edits.insert_external(message, drop_values(tree, message, edits).field_count, record);
}

void inline_external(const bound_model& model, std::span<const external_tensor> bindings, tree_edits& edits,
                     std::vector<error>& warnings) {
    std::size_t usable = 0;
    std::size_t in_bodies = 0;  // of those, the tensors whose fields the tree dropped
    for (const auto& b : bindings) {
        if (!b.usable) continue;
        ++usable;
        if (!model.model.tree.stores_fields(model.model.sites[b.site].message)) ++in_bodies;
    }
    // A tensor whose fields the tree dropped has its value fields dropped in its body: its
    // external_data entries (location, offset, length) and data_location, one row for most
    // (tree_edits::body_drop). Reserved up front, the table of a million tensors' drops
    // does not grow by doubling (holding its old and new copy at once, then up to twice
    // what it needs).
    edits.reserve(usable, 0, 0, in_bodies);
    // A record is the binding's index in model.data.tensors (`bindings` may be a copy of
    // some of them, gone before the edits are planned): the bound model outlives them.
    edits.set_inlined_values([&model](std::uint32_t record) {
        const auto& b = model.data.tensors[binding_id{record}];
        inlined_value value{bound_model::source_of_file(b.file).value, b.offset, b.length};
        // The drops below, by the kept positions or by a read that finds the same ones.
        if (b.positions_known) {
            value.dropped_positions = b.value_positions;
            value.dropped_bytes = b.value_bytes;
        }
        return value;
    });
    // Bindings come in site (file) order: read on demand, the pages behind go (a million
    // bodies read again would otherwise map the whole file).
    tensor_pass pass(model.model);
    for (const auto& binding : bindings) {
        if (!binding.usable) continue;
        if (binding.positions_known && !binding.has_checksum) {
            // Its value fields as the read that bound it found them: the body is not read
            // again (a million tiny tensors' bodies were a pass of their own).
            const auto message = model.model.sites[binding.site].message;
            for (auto bits = binding.value_positions; bits != 0; bits &= bits - 1)
                edits.drop(model.model.tree, message, static_cast<std::uint32_t>(std::countr_zero(bits)));
            const auto position = static_cast<std::uint32_t>(std::countr_zero(binding.value_positions));
            edits.insert_inlined(message, position, model.binding_of(binding.site).value, io::no_check);
            continue;
        }
        const auto handle = pass.read(binding.site);
        const auto& tensor = *handle;
        // Its fields as the read found them: the body is not tokenized a second time.
        const auto position = drop_value_fields(model.model.tree, handle, edits);
        const auto expected = expected_sha1(tensor, warnings);
        const auto check = expected ? edits.add_check({.tensor = std::string(tensor.name), .expected_sha1 = expected})
                                    : io::no_check;
        edits.insert_inlined(tensor.message, position, model.binding_of(binding.site).value, check);
    }
}

}  // namespace onnxstream::onnx
