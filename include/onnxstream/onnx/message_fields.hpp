// The fields of one message of a message tree, wherever the tree keeps them: its own rows,
// or a TensorProto body it dropped (message::fields_dropped) read again.
#pragma once

#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <optional>
#include <span>

namespace onnxstream::onnx {

/// The fields of message `index` of a tree: the tree's own, or its body read again
/// (message_tree::body) when the tree dropped them. Either way a field's position is the
/// one tree_edits::drop(tree, message, position) and tree_edits::insert address, and the
/// tree's payload(), value() and text() read the field; field indices differ (the tree's
/// index_of holds only for stored fields). Move-only: the fields may be the body's, which
/// stay where they are when it moves.
class message_fields {
public:
    message_fields() = default;
    message_fields(const message_fields&) = delete;
    message_fields& operator=(const message_fields&) = delete;
    message_fields(message_fields&&) noexcept = default;
    message_fields& operator=(message_fields&&) noexcept = default;
    ~message_fields() = default;

    /// `tree` must outlive the result. Errors: those of message_tree::body (the bytes no
    /// longer tokenize: the file changed under a released page).
    [[nodiscard]] static result<message_fields> read(const message_tree& tree, std::uint32_t index);

    [[nodiscard]] std::span<const field_entry> fields() const noexcept { return fields_; }

private:
    std::optional<message_tree> body_;  // set when the tree dropped the fields
    std::span<const field_entry> fields_;
};

}  // namespace onnxstream::onnx
