// The part of onnx.proto onnxstream knows, as one table: for every field of the messages
// it reads (fields.hpp has their numbers), the field's .proto name, whether it is
// `repeated`, and what it holds: a plain value, a message kept opaque (TypeProto, a
// graph's metadata_props...), or a message onnxstream descends into (message_tree.hpp).
// child_kind, is_singular and field_name (message_tree.hpp), paths in errors and diff's
// descriptions all read this table, so a field is described once.
#pragma once

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_tree.hpp>

#include <cstdint>
#include <span>

namespace onnxstream::onnx {

enum class field_holds : std::uint8_t {
    value,    // a number, a string, bytes, packed numbers
    message,  // a sub-message onnxstream keeps as opaque bytes
    child,    // a sub-message onnxstream descends into: `field_schema::child` says which
};

struct field_schema {
    message_kind owner = message_kind::model;
    std::uint32_t number = 0;
    const char* name = "";
    bool repeated = false;
    field_holds holds = field_holds::value;
    message_kind child = message_kind::model;  // when holds == child
};

/// Every known field, by owner then number.
[[nodiscard]] std::span<const field_schema> schema() noexcept;

/// Field `number` of an `owner` message, or null when onnx.proto (as far as onnxstream
/// knows it) has no such field. Constant time: message_tree::parse asks for every field.
[[nodiscard]] const field_schema* find_field(message_kind owner, std::uint32_t number) noexcept;

}  // namespace onnxstream::onnx
