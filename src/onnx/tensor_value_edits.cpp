#include <onnxstream/onnx/tensor_value_edits.hpp>

#include <onnxstream/onnx/fields.hpp>

#include <algorithm>

namespace onnxstream::onnx {

std::uint32_t drop_value_fields(const message_tree& tree, std::uint32_t message, tree_edits& edits) {
    const auto& msg = tree.at(message);
    std::uint32_t position = msg.field_count;
    for (std::uint32_t i = 0; i < msg.field_count; ++i) {
        if (!holds_tensor_value(tree.field(msg.first_field + i).number())) continue;
        edits.drop(msg.first_field + i);
        position = std::min(position, i);
    }
    return position;
}

void store_external(const message_tree& tree, std::uint32_t message, const external_entry& where, tree_edits& edits) {
    store_external(tree, message, edits.add_external(where), edits);
}

void store_external(const message_tree& tree, std::uint32_t message, std::uint32_t record, tree_edits& edits) {
    drop_value_fields(tree, message, edits);
    edits.insert_external(message, tree.at(message).field_count, record);
}

void inline_external(const bound_model& model, std::span<const external_tensor> bindings, tree_edits& edits,
                     std::vector<error>& warnings) {
    const auto usable = static_cast<std::size_t>(
        std::count_if(bindings.begin(), bindings.end(), [](const external_tensor& b) { return b.usable; }));
    edits.reserve(usable, usable, usable);
    for (const auto& binding : bindings) {
        if (!binding.usable) continue;
        const auto handle = model.model.tensor(binding.site);
        const auto& tensor = *handle;
        const auto position = drop_value_fields(model.model.tree, tensor.message, edits);
        const auto expected = expected_sha1(tensor, warnings);
        const auto check = expected ? edits.add_check({.tensor = std::string(tensor.name), .expected_sha1 = expected})
                                    : io::no_check;
        auto raw_data = edits.slice(number(tensor_field::raw_data), bound_model::source_of_file(binding.file).value,
                                    binding.offset, binding.length, check);
        raw_data.label = edits.add_label(tensor.name);
        edits.insert(tensor.message, position, raw_data);
    }
}

}  // namespace onnxstream::onnx
