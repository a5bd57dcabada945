// The edits that move a TensorProto's value, written once for every operation: out to
// external data (split, repack, convert, export --link) or back in from it (merge, and
// the tensors the others keep embedded). Either way the fields that hold or locate the
// value (holds_tensor_value) are dropped and every other field is kept, in its order.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/tree_edits.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace onnxstream::onnx {

/// Drops the value fields of tensor message `message`; returns the position of the first
/// of them, or the message's field count when it has none. When the tree dropped the
/// message's fields (message::fields_dropped) its body is read again and the drops are
/// addressed by position (tree_edits::drop picks the form).
std::uint32_t drop_value_fields(const message_tree& tree, std::uint32_t message, tree_edits& edits);
/// The same for a tensor of `tree` as model_file::tensor read it: its fields are those of
/// that read (its body is not read a third time).
std::uint32_t drop_value_fields(const message_tree& tree, const tensor_handle& tensor, tree_edits& edits);
/// The same for a message whose fields are `fields`, as one read found them
/// (message_fields::read): an operation that edits more than the value reads the body once.
std::uint32_t drop_value_fields(const message_tree& tree, std::uint32_t message, std::span<const field_entry> fields,
                                tree_edits& edits);

/// Points tensor message `message` at `where`: its value fields dropped, then after every
/// other field the entries location, offset, length (and checksum) and data_location = EXTERNAL.
void store_external(const message_tree& tree, std::uint32_t message, const external_entry& where, tree_edits& edits);
/// The same for a message whose fields are `fields`, as one read found them.
void store_external(const message_tree& tree, std::uint32_t message, std::span<const field_entry> fields,
                    const external_entry& where, tree_edits& edits);
/// The same for entry `record` of the table given to edits.set_external_entries.
void store_external(const message_tree& tree, std::uint32_t message, std::uint32_t record, tree_edits& edits);
/// The same for a tensor whose value fields are those at `value_positions` (bit i: the
/// field at position i, as external_tensor::value_positions holds them): its body is not
/// read again (a split or repack of a million external tensors read each once more). The
/// table may give the entry those positions and their bytes (external_entry::dropped_*),
/// so that the planner sizes the message without reading it either.
void store_external(const message_tree& tree, std::uint32_t message, std::uint32_t value_positions, std::uint32_t record,
                    tree_edits& edits);

/// Whether `binding` comes back into the model as one tree_edits::inline_body row (8
/// bytes, its body not read again): the positions of its value fields are known, it has
/// some, and no checksum is to be checked. inline_external and convert (a tensor it keeps
/// as it is) decide by this one rule.
[[nodiscard]] bool inlined_by_row(const external_tensor& binding);
/// The table tree_edits::set_inlined_values takes when a record is a binding id of
/// `model` (its data file as a source, its slice, and the value fields the read that bound
/// it found). `model` must outlive the planning.
[[nodiscard]] inlined_values inlined_bindings(const bound_model& model);

/// Brings the usable tensors among `bindings` (entries of model.data.tensors) back into
/// the model: value fields dropped, raw_data inserted where the first of them was, as a
/// slice of its data file (bound_model::source_of_file). An expected SHA-1 becomes a
/// stream check; a checksum that is not a SHA-1 becomes a warning in `warnings`.
void inline_external(const bound_model& model, std::span<const external_tensor> bindings, tree_edits& edits,
                     std::vector<error>& warnings);

}  // namespace onnxstream::onnx
