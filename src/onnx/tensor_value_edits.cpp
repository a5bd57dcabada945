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

std::uint32_t drop_value_fields(const message_tree& tree, std::uint32_t message, std::span<const field_entry> fields,
                                tree_edits& edits) {
    return drop_values(tree, message, fields, edits).first;
}

void store_external(const message_tree& tree, std::uint32_t message, const external_entry& where, tree_edits& edits) {
    store_external(tree, message, edits.add_external(where), edits);
}

void store_external(const message_tree& tree, std::uint32_t message, std::uint32_t record, tree_edits& edits) {
    edits.insert_external(message, drop_values(tree, message, edits).field_count, record);
}

void store_external(const message_tree& tree, std::uint32_t message, std::span<const field_entry> fields,
                    const external_entry& where, tree_edits& edits) {
    const auto record = edits.add_external(where);
    edits.insert_external(message, drop_values(tree, message, fields, edits).field_count, record);
}

void store_external(const message_tree& tree, std::uint32_t message, std::uint32_t value_positions, std::uint32_t record,
                    tree_edits& edits) {
    for (auto bits = value_positions; bits != 0; bits &= bits - 1)
        edits.drop(tree, message, static_cast<std::uint32_t>(std::countr_zero(bits)));
    edits.insert_external(message, tree_edits::end_position, record);
}

bool inlined_by_row(const external_tensor& binding) {
    return binding.positions_known && !binding.has_checksum && binding.value_positions != 0;
}

inlined_values inlined_bindings(const bound_model& model) {
    return [&model](std::uint32_t record) {
        const auto& b = model.data.tensors[binding_id{record}];
        inlined_value value{bound_model::source_of_file(b.file).value, b.offset, b.length};
        // The drops of a row, or of an insert_inlined by a read that finds the same ones.
        if (b.positions_known) {
            value.dropped_positions = b.value_positions;
            value.dropped_bytes = b.value_bytes;
            value.dropped_last = b.values_last;
        }
        return value;
    };
}

void inline_external(const bound_model& model, std::span<const external_tensor> bindings, tree_edits& edits,
                     std::vector<error>& warnings) {
    // Most tensors are one inline_body row (8 bytes: their value fields' positions are
    // known, no checksum); the rest an insertion, and a row of drops for one whose fields
    // the tree dropped (tree_edits::body_drop). Reserved up front, the tables of a million
    // tensors do not grow by doubling (holding their old and new copy at once, then up to
    // twice what they need).
    std::size_t rows = 0;
    std::size_t read = 0;  // the tensors read again: an insertion each, and their drops
    for (const auto& b : bindings) {
        if (!b.usable) continue;
        if (inlined_by_row(b)) ++rows;
        else ++read;
    }
    edits.reserve(read, 0, 0, read);
    edits.reserve_inlined_bodies(rows);
    // A record is the binding's index in model.data.tensors (`bindings` may be a copy of
    // some of them, gone before the edits are planned): the bound model outlives them.
    edits.set_inlined_values(inlined_bindings(model));
    // Bindings come in site (file) order: read on demand, the pages behind go (a million
    // bodies read again would otherwise map the whole file).
    tensor_pass pass(model.model);
    for (const auto& binding : bindings) {
        if (!binding.usable) continue;
        if (inlined_by_row(binding)) {
            // Its value fields as the read that bound it found them: the body is not read
            // again (a million tiny tensors' bodies were a pass of their own).
            edits.inline_body(model.model.tree, model.model.sites[binding.site].message, model.binding_of(binding.site).value);
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
