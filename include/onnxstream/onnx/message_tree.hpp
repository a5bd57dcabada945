// The message tree: every ONNX message onnxstream descends into (see fields.hpp), as flat
// arrays of offsets into the model's bytes. Messages are stored in pre-order (a child's
// index is always greater than its parent's); each message's fields are a contiguous
// run of `field_entry`s, in file order. Nothing is copied: strings and payloads are read
// through the span the tree was built from, which must outlive it.
//
// Fields that are not sub-messages onnxstream knows (value types, unknown fields) stay
// opaque tokens and are copied verbatim by the planner.
#pragma once

#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/proto/field_token.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::onnx {

inline constexpr std::uint32_t no_index = std::numeric_limits<std::uint32_t>::max();

enum class message_kind : std::uint8_t {
    model,
    graph,
    node,
    attribute,
    tensor,
    sparse_tensor,
    training_info,
    function,
    string_entry,
    operator_set,
    value_info,
};

[[nodiscard]] const char* to_string(message_kind kind) noexcept;

struct message {
    message_kind kind = message_kind::model;
    bool repeated = false;    // the parent holds more than one field of this number
    std::uint16_t depth = 0;
    std::uint32_t parent = no_index;        // no_index for the root (the model)
    std::uint32_t parent_field = no_index;  // the field of the parent that holds it
    std::uint32_t first_field = 0;
    std::uint32_t field_count = 0;
    std::uint32_t ordinal = 0;  // its index among the parent's fields of the same number
    std::uint64_t begin = 0;  // payload range in the buffer
    std::uint64_t end = 0;
};

struct field_entry {
    proto::field_token token;
    std::uint32_t child = no_index;  // the message this field holds, when descended into
    std::uint32_t owner = 0;         // the message this field belongs to
};

struct tree_options {
    std::uint32_t max_depth = 96;              // message nesting (3 levels per subgraph)
    std::uint64_t max_fields = 1ULL << 30;     // fields in the whole model
    std::uint64_t max_messages = 1ULL << 28;   // messages in the whole model
};

class message_tree {
public:
    /// Tokenizes a whole ModelProto. Errors: `malformed` (with the offset and the path of
    /// the message being read), `limit_exceeded`, `not_onnx` (valid protobuf without an
    /// ir_version, or a known sub-message field of the wrong wire type).
    [[nodiscard]] static result<message_tree> parse(std::span<const std::byte> bytes, const tree_options& options = {});

    [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
    [[nodiscard]] std::span<const message> messages() const noexcept { return messages_; }
    [[nodiscard]] const message& at(std::uint32_t index) const { return messages_[index]; }
    [[nodiscard]] std::span<const field_entry> all_fields() const noexcept { return fields_; }
    [[nodiscard]] std::span<const field_entry> fields(std::uint32_t message_index) const {
        const auto& m = messages_[message_index];
        return std::span(fields_).subspan(m.first_field, m.field_count);
    }
    [[nodiscard]] const field_entry& field(std::uint32_t field_index) const { return fields_[field_index]; }

    /// The payload of a length-delimited field (or the raw bytes of any other).
    [[nodiscard]] std::span<const std::byte> payload(const field_entry& f) const {
        return bytes_.subspan(f.token.payload_offset, f.token.payload_length);
    }
    [[nodiscard]] std::string_view text(const field_entry& f) const;

    /// The first field numbered `number` in the message, or null.
    [[nodiscard]] const field_entry* find(std::uint32_t message_index, std::uint32_t number) const;
    /// The string of the first such field, empty when absent.
    [[nodiscard]] std::string_view find_text(std::uint32_t message_index, std::uint32_t number) const;

    /// Where a message is, for people: `graph.node[3].attribute[0].g.initializer[1]`.
    [[nodiscard]] std::string path(std::uint32_t message_index) const;

private:
    struct builder;
    std::span<const std::byte> bytes_;
    std::vector<message> messages_;
    std::vector<field_entry> fields_;
};

/// The kind of message field `number` of a `kind` message holds, if onnxstream descends
/// into it.
[[nodiscard]] bool child_kind(message_kind kind, std::uint32_t number, message_kind& out) noexcept;
/// Whether onnx.proto declares field `number` of a `kind` message singular (not
/// `repeated`). message_tree::parse refuses a model that holds such a field twice.
[[nodiscard]] bool is_singular(message_kind kind, std::uint32_t number) noexcept;
/// The .proto name of a field, for paths and messages (`initializer`), or its number.
[[nodiscard]] std::string field_name(message_kind kind, std::uint32_t number);

struct bulk_scan_options {
    std::uint64_t min_length = 64 * 1024;  // payloads smaller than this count as metadata
    std::uint64_t max_ranges = 8192;       // the largest ones are kept (each costs the mapping two areas)
    std::uint32_t max_depth = 96;
};

/// Reads `out.size()` bytes at `offset`; false on failure.
using read_function = std::function<bool(std::uint64_t offset, std::span<std::byte> out)>;

/// The payloads the message tree keeps opaque (raw_data, typed data, unknown fields) of at
/// least `min_length` bytes, in file order, found by reading only field headers through
/// `read` (small windows: the payloads are skipped, never read). It walks the model as
/// `message_tree::parse` does; it is a hint for mapped_file::copy_in_except and reports
/// no errors: on bytes that are not a well-formed model it returns nothing, and the parse
/// says what is wrong.
[[nodiscard]] std::vector<io::byte_range> find_bulk_payloads(std::uint64_t size, const read_function& read,
                                                             const bulk_scan_options& options = {});

}  // namespace onnxstream::onnx
