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
#include <onnxstream/large_blocks.hpp>
#include <onnxstream/proto/field_token.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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

// One message of the tree in 24 bytes, one per TensorProto of a model among others. Its
// payload range is not stored: it is the payload of `parent_field` (the whole buffer for
// the root), as message_tree::payload_range says.
struct message {
    message_kind kind = message_kind::model;
    bool repeated : 1 = false;  // the parent holds more than one field of this number
    /// Its fields were tokenized and checked but not stored (a TensorProto body of a tree
    /// parsed with tensor_fields::on_demand, a NodeProto body with node_fields::on_demand):
    /// field_count is 0, message_tree::body or read_fields reads them.
    bool fields_dropped : 1 = false;
    std::uint16_t depth = 0;
    std::uint32_t parent = no_index;        // no_index for the root (the model)
    std::uint32_t parent_field = no_index;  // the field of the parent that holds it
    std::uint32_t first_field = 0;
    std::uint32_t field_count = 0;
    std::uint32_t ordinal = 0;  // its index among the parent's fields of the same number
};
static_assert(sizeof(message) == 24);

// One field of the tree in 20 bytes (a proto::field_token takes 40): the header offset
// and the payload length in 44 bits each (16 TiB; message_tree::parse refuses a larger
// field with limit_exceeded), the header length in 5 bits (a tag and a length prefix of
// at most 10 bytes each), number and wire type packed as in the tag. A varint's value is
// not stored: message_tree::value decodes it from the bytes. The message a field belongs
// to is message_tree::owner.
class field_entry {
public:
    static constexpr std::uint64_t max_offset = (1ULL << 44) - 1;  // header offsets and payload lengths

    field_entry() = default;
    /// The token's place, number and type; the token must `fit`.
    explicit constexpr field_entry(const proto::field_token& token, std::uint32_t child_index = no_index) noexcept
        : child(child_index),
          offset_low_(static_cast<std::uint32_t>(token.header_offset)),
          length_low_(static_cast<std::uint32_t>(token.payload_length)),
          key_(token.number << 3 | static_cast<std::uint32_t>(token.type)),
          high_(static_cast<std::uint32_t>(token.header_offset >> 32) |
                static_cast<std::uint32_t>(token.payload_length >> 32) << 12 |
                static_cast<std::uint32_t>(token.header_length()) << 24) {}
    /// Whether a token can be stored: its offset and length fit 44 bits, its header 31 bytes.
    [[nodiscard]] static constexpr bool fits(const proto::field_token& token) noexcept {
        return token.header_offset <= max_offset && token.payload_length <= max_offset && token.header_length() <= 31 &&
               token.number <= proto::max_field_number;
    }

    [[nodiscard]] constexpr std::uint64_t header_offset() const noexcept {
        return (static_cast<std::uint64_t>(high_ & 0xFFFU) << 32) | offset_low_;
    }
    [[nodiscard]] constexpr std::uint64_t header_length() const noexcept { return (high_ >> 24) & 0x1FU; }
    [[nodiscard]] constexpr std::uint64_t payload_offset() const noexcept { return header_offset() + header_length(); }
    [[nodiscard]] constexpr std::uint64_t payload_length() const noexcept {
        return (static_cast<std::uint64_t>((high_ >> 12) & 0xFFFU) << 32) | length_low_;
    }
    [[nodiscard]] constexpr std::uint64_t end_offset() const noexcept { return payload_offset() + payload_length(); }
    [[nodiscard]] constexpr std::uint64_t total_length() const noexcept { return header_length() + payload_length(); }
    [[nodiscard]] constexpr std::uint32_t number() const noexcept { return key_ >> 3; }
    [[nodiscard]] constexpr proto::wire_type type() const noexcept { return static_cast<proto::wire_type>(key_ & 7U); }

    std::uint32_t child = no_index;  // the message this field holds, when descended into

private:
    std::uint32_t offset_low_ = 0;
    std::uint32_t length_low_ = 0;
    std::uint32_t key_ = 0;
    std::uint32_t high_ = 0;  // offset bits 32-43, length bits 32-43, header length
};
static_assert(sizeof(field_entry) == 20);

namespace detail {

// A growable array of trivially copyable values (resize_block: growing never holds the
// old and the new copy at once, as std::vector's reallocation does, 1.5 x the final size
// at the peak).
template <class T>
class growable_array {
    static_assert(std::is_trivially_copyable_v<T>);

public:
    growable_array() = default;
    growable_array(const growable_array& other) { *this = other; }
    growable_array(growable_array&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)),
          size_(std::exchange(other.size_, 0)),
          capacity_(std::exchange(other.capacity_, 0)) {}
    growable_array& operator=(const growable_array& other) {
        if (this == &other) return *this;
        clear_and_free();
        reserve(other.size_);
        if (other.size_ != 0) std::memcpy(data_, other.data_, other.size_ * sizeof(T));
        size_ = other.size_;
        return *this;
    }
    growable_array& operator=(growable_array&& other) noexcept {
        if (this != &other) {
            clear_and_free();
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
            capacity_ = std::exchange(other.capacity_, 0);
        }
        return *this;
    }
    ~growable_array() { clear_and_free(); }

    void push_back(const T& value) {
        if (size_ == capacity_) reserve(capacity_ < 16 ? 16 : capacity_ * 2);
        data_[size_++] = value;
    }
    void reserve(std::size_t capacity) {
        if (capacity <= capacity_) return;
        if (capacity > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_alloc();
        void* grown = resize_block(data_, capacity_ * sizeof(T), capacity * sizeof(T));
        if (grown == nullptr) throw std::bad_alloc();
        data_ = static_cast<T*>(grown);
        capacity_ = capacity;
    }
    /// Drops the values from `size` on (keeps the capacity).
    void truncate(std::size_t size) noexcept {
        if (size < size_) size_ = size;
    }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
    [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data_[i]; }
    [[nodiscard]] std::span<const T> span() const noexcept { return {data_, size_}; }

private:
    void clear_and_free() noexcept {
        free_block(data_, capacity_ * sizeof(T));
        data_ = nullptr;
        size_ = capacity_ = 0;
    }
    T* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

}  // namespace detail

/// What the tree stores of a TensorProto body.
enum class tensor_fields : std::uint8_t {
    stored,     // every field, as of every other message (what edits and writers address)
    on_demand,  // a body is tokenized and checked as any other, then its fields are
                // dropped (message::fields_dropped), with the messages inside it (its
                // external_data entries) and theirs: 4 of the 5 million field rows of a
                // model of a million small tensors, 13 of 14 million for external ones
};

/// What the tree stores of a NodeProto body.
enum class node_fields : std::uint8_t {
    stored,     // every field
    on_demand,  // a node without attributes (no message inside it) has its fields tokenized,
                // checked and dropped (message::fields_dropped), as a TensorProto body on
                // demand: 4 of the 5 rows of an Add or a Relu (80 MB of a million nodes).
                // Read them with message_tree::read_fields; a node with attributes keeps its
                // fields, so attribute messages are always in the tree.
};

class message_tree;

/// Reads `out.size()` bytes at `offset`; false on failure.
using read_function = std::function<bool(std::uint64_t offset, std::span<std::byte> out)>;

struct tree_options {
    std::uint32_t max_depth = 96;             // message nesting (3 levels per subgraph)
    std::uint64_t max_fields = 1ULL << 30;    // fields in the whole model (dropped ones count)
    std::uint64_t max_messages = 1ULL << 28;  // messages in the whole model
    tensor_fields tensors = tensor_fields::stored;
    node_fields nodes = node_fields::stored;
    /// Called as the parse moves forward through the bytes: while it reads a message's
    /// field headers through the mapping (every few MiB; not when `read` is set), and
    /// after each child message with its end. The parse reads the bytes before `offset`
    /// again only when it goes back to descend into the children of the message whose
    /// headers it read: a caller may release the mapped pages behind (model_file does, on
    /// demand; io::release_behind follows a walk that moves back). Never called for a
    /// message whose bytes end within `step`.
    std::function<void(std::uint64_t offset)> behind;
    static constexpr std::uint64_t behind_step = 4ULL << 20;
    /// When set, reads the parsed bytes as they are in their file (the parse's input is a
    /// mapping of it): the field headers of a message longer than `behind_step` are read
    /// through it, a window at a time, rather than through the mapping, whose pages then
    /// fault in once, as the children are read, instead of twice. Every well-formed header
    /// is read through it (a damaged one is then read through the mapping for its error):
    /// no `behind` call is made during such a scan, so a header read through the mapping
    /// would stay mapped until the children's walk passed it.
    read_function read;
    /// Called with each TensorProto message as soon as the parse has read it and the
    /// messages inside it, before tensor_fields::on_demand drops its fields: in message
    /// order (find_tensors' order), with the tree as far as it is read (the tensor's
    /// fields and their messages in it, its ancestors' field headers: see
    /// message_tree::tensors_seen). model_file reads each tensor here rather than
    /// tokenizing its body again after the parse.
    std::function<void(const message_tree& tree, std::uint32_t message)> on_tensor;
};

/// The default limits with node_fields::on_demand: how the commands that read a node's
/// fields through read_fields (or not at all) open a model.
[[nodiscard]] inline tree_options nodes_on_demand() {
    tree_options options;
    options.nodes = node_fields::on_demand;
    return options;
}

class message_tree {
public:
    /// Tokenizes a whole ModelProto. Errors: `malformed` (with the offset and the path of
    /// the message being read), `limit_exceeded`, `not_onnx` (valid protobuf without an
    /// ir_version, or a known sub-message field of the wrong wire type).
    [[nodiscard]] static result<message_tree> parse(std::span<const std::byte> bytes, const tree_options& options = {});

    /// The fields of message `index` of `tree` (see message::fields_dropped) tokenized
    /// again into a tree of that message (index 0) and the messages inside it, as parse
    /// stores them: its fields are numbered after all of `tree`'s (an index of either tree
    /// is out of range in the other, and field() says so), its messages' path()s and
    /// payload_range(0) are those in `tree`, which must outlive it and not move. Errors:
    /// `malformed` if the bytes no longer tokenize (they did when `tree` was parsed: the
    /// file changed).
    [[nodiscard]] static result<message_tree> body(const message_tree& tree, std::uint32_t index);

    [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
    [[nodiscard]] std::span<const message> messages() const noexcept { return messages_.span(); }
    [[nodiscard]] const message& at(std::uint32_t index) const { return messages_[index]; }
    /// Whether message `index`'s fields are in the tree (see message::fields_dropped).
    [[nodiscard]] bool stores_fields(std::uint32_t index) const { return !messages_[index].fields_dropped; }
    /// Where message `index`'s payload (its fields) lies in bytes(): the payload of the
    /// field that holds it, or the whole buffer for the root (the message's, for a body).
    [[nodiscard]] io::byte_range payload_range(std::uint32_t index) const {
        const auto& m = messages_[index];
        if (m.parent_field == no_index) return root_range_;
        const auto& holder = field(m.parent_field);
        return {holder.payload_offset(), holder.payload_length()};
    }
    /// The stored fields; field index i is all_fields()[i - first_index()].
    [[nodiscard]] std::span<const field_entry> all_fields() const noexcept { return fields_.span(); }
    /// The index of the first stored field: 0, or for a body() the origin's field count.
    [[nodiscard]] std::uint32_t first_index() const noexcept { return field_base_; }
    /// The index of a field of this tree.
    [[nodiscard]] std::uint32_t index_of(const field_entry& f) const noexcept {
        return field_base_ + static_cast<std::uint32_t>(&f - fields_.span().data());
    }
    /// Message `message_index`'s fields; throws std::logic_error for one whose fields were
    /// dropped (read them with body()).
    [[nodiscard]] std::span<const field_entry> fields(std::uint32_t message_index) const {
        const auto& m = messages_[message_index];
        if (m.fields_dropped) fields_not_stored(message_index);
        return fields_.span().subspan(m.first_field - field_base_, m.field_count);
    }
    /// Message `message_index`'s fields in file order: the stored ones, or, when the tree
    /// dropped them, read again from the bytes into `scratch` (then a field's `child` is
    /// no_index and index_of does not apply; use message_fields for a body's messages).
    /// Empty if dropped bytes no longer tokenize: the file changed under a released page,
    /// which the operation's final check_unchanged reports.
    [[nodiscard]] std::span<const field_entry> read_fields(std::uint32_t message_index, std::vector<field_entry>& scratch) const;
    /// Throws std::out_of_range for an index of another tree (a body's, or its origin's).
    [[nodiscard]] const field_entry& field(std::uint32_t field_index) const {
        if (field_index - field_base_ >= fields_.size()) field_out_of_range(field_index);
        return fields_[field_index - field_base_];
    }
    /// The message field `field_index` belongs to (a binary search over the messages).
    [[nodiscard]] std::uint32_t owner(std::uint32_t field_index) const;

    /// The payload of a length-delimited field (or the raw bytes of any other).
    [[nodiscard]] std::span<const std::byte> payload(const field_entry& f) const {
        return bytes_.subspan(f.payload_offset(), f.payload_length());
    }
    /// The value of a varint field, decoded from its bytes; 0 for other wire types.
    [[nodiscard]] std::uint64_t value(const field_entry& f) const noexcept;
    /// The field as the tokenizer saw it (its value included).
    [[nodiscard]] proto::field_token token(const field_entry& f) const noexcept;
    [[nodiscard]] std::string_view text(const field_entry& f) const;

    /// The first field numbered `number` in the message, or null (fields() of the message).
    [[nodiscard]] const field_entry* find(std::uint32_t message_index, std::uint32_t number) const;
    /// The string of the first such field, empty when absent; read from the bytes when
    /// the message's fields were dropped.
    [[nodiscard]] std::string_view find_text(std::uint32_t message_index, std::uint32_t number) const;

    /// Where a message is, for people: `graph.node[3].attribute[0].g.initializer[1]`.
    [[nodiscard]] std::string path(std::uint32_t message_index) const;

    /// The fields holding a TensorProto whose headers the parse has read so far: during
    /// the parse (tree_options::on_tensor), at least the tensors it has read, and all of a
    /// graph's initializers from its first one on (a message's headers are read before
    /// its children). What a reader of every tensor reserves room for.
    [[nodiscard]] std::uint64_t tensors_seen() const noexcept { return tensors_seen_; }

private:
    struct builder;
    [[noreturn]] void fields_not_stored(std::uint32_t message_index) const;
    [[noreturn]] void field_out_of_range(std::uint32_t field_index) const;

    std::span<const std::byte> bytes_;
    io::byte_range root_range_;
    detail::growable_array<message> messages_;
    detail::growable_array<field_entry> fields_;
    std::uint32_t field_base_ = 0;
    std::uint64_t tensors_seen_ = 0;
    // A body(): the tree and message it was read from (for path()).
    const message_tree* origin_ = nullptr;
    std::uint32_t origin_message_ = no_index;
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

/// The payloads the message tree keeps opaque (raw_data, typed data, unknown fields) of at
/// least `min_length` bytes, in file order, found by reading only field headers through
/// `read` (small windows: the payloads are skipped, never read). It walks the model as
/// `message_tree::parse` does, but not into messages shorter than `min_length` (they hold
/// no such payload); it is a hint for mapped_file::copy_in_except and reports no errors:
/// on bytes that are not a well-formed model it returns nothing (or, when the damage lies
/// inside a message it skipped, what it found elsewhere), and the parse says what is wrong.
[[nodiscard]] std::vector<io::byte_range> find_bulk_payloads(std::uint64_t size, const read_function& read,
                                                             const bulk_scan_options& options = {});

}  // namespace onnxstream::onnx
