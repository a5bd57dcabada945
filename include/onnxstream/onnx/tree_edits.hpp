// Edits over a message tree: drop a field, insert a new field before a position in a
// message (replace = drop + insert at the same place). The tree itself never changes; the
// planner reads the tree and its edits together. Untouched fields stay slices of the
// input and are copied verbatim, in their original order.
//
// A new field's payload is a varint, bytes owned by the edits (new strings, computed
// tensors, new nodes encoded in memory), or a slice of a source file (external weights)
// that the writer copies without the bytes passing through the heap.
//
// The fields that point a tensor at external data (its external_data entries and
// data_location) are one insertion, a record number the planner turns into bytes only
// when it writes them: a split of 1M tensors then costs 16 bytes an edit, not five
// encoded fields a tensor. The way back (merge) is one insertion too: a record number the
// caller's table turns into the slice of a data file that holds the tensor's bytes.
#pragma once

#include <onnxstream/io/write_operation.hpp>
#include <onnxstream/onnx/float_conversion.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/proto/varint.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxstream::onnx {

struct new_field {
    // encoded: `length` bytes at `offset` of the pool that are whole fields already (their
    // tags and length prefixes included), written as they are (tree_edits::encoded_fields).
    enum class payload_kind : std::uint8_t { varint, bytes, slice, encoded };

    std::uint32_t number = 0;
    payload_kind kind = payload_kind::bytes;
    std::uint64_t value = 0;             // varint
    std::uint64_t offset = 0;            // bytes: offset in the edits' pool; slice: in the source
    std::uint64_t length = 0;            // bytes, slice
    std::uint32_t source = 0;            // slice: index into the writer's source table
    std::uint32_t check = io::no_check;  // slice: index into tree_edits::checks()
    /// slice: none copies; otherwise the payload is `length` bytes converted from the
    /// `2 * length` float32 bytes at `offset` (a converted weight, see float_conversion.hpp).
    float_conversion conversion = float_conversion::none;
    std::uint32_t label = io::no_check;  // slice: index into tree_edits::labels() (progress), or none

    /// Bytes this field takes in the output (tag, length prefix, payload).
    [[nodiscard]] std::uint64_t encoded_size() const noexcept;
};

/// Where a tensor's value goes in a data file, as its external_data entries say it.
struct external_entry {
    std::string location;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::optional<std::string> checksum;  // SHA-1 hex, written when present
    /// As inlined_value's: when not 0, the fields the caller drops from the tensor's
    /// message for these entries (bit i: the field at position i of a body) and the bytes
    /// they take, so that a body whose only edits are those drops and this insertion is
    /// sized without being read again. The planner trusts the bytes.
    std::uint32_t dropped_positions = 0;
    std::uint32_t dropped_bytes = 0;
};

/// The entry of record `record` (see tree_edits::insert_external).
using external_entries = std::function<external_entry(std::uint32_t record)>;

/// Where the bytes of an inlined tensor are (tree_edits::insert_inlined): `length` bytes at
/// `offset` of writer source `source`.
struct inlined_value {
    std::uint32_t source = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    /// When not 0, the fields the caller drops from the tensor's message for this value
    /// (bit i: the field at position i; a body's drops) and `dropped_bytes`, the bytes they
    /// take: a body whose only edits are those drops and this insertion is then sized
    /// without being read again (a million merged tensors' bodies were a pass of their own).
    /// They must be what a read of the body finds: the planner trusts the bytes.
    std::uint32_t dropped_positions = 0;
    std::uint32_t dropped_bytes = 0;
    /// Those fields are the body's last: the planner copies the bytes before them whole for
    /// an inline_body row, without reading the body (that read was a tenth of merging a
    /// million tiny tensors). It trusts this as it trusts the bytes.
    bool dropped_last = false;
    friend bool operator==(const inlined_value&, const inlined_value&) = default;
};

/// The value of record `record` (see tree_edits::insert_inlined).
using inlined_values = std::function<inlined_value(std::uint32_t record)>;

class tree_edits {
public:
    /// Drops field `field_index` of the tree (a field the tree stores).
    void drop(std::uint32_t field_index);
    /// Drops the field at `position` (0..field count - 1) of message `message_index` of
    /// `tree`, in the form the planner applies: by field index when the tree stores the
    /// message's fields, else as a drop in its body (message::fields_dropped), which the
    /// planner applies as it reads the body again (message_tree::body): a bit in a 12-byte
    /// row of the message's drops (body_drops), where a tree that stored the body's fields
    /// would cost 20 bytes a field of every body (and a row a drop 8 a drop: a merged
    /// tensor drops four, its external_data entries and data_location).
    void drop(const message_tree& tree, std::uint32_t message_index, std::uint32_t position);
    /// Room for `insertions` more insertions, of which `new_fields` add a new_field (or a
    /// shared one) and `labels` a label, for `body_drops` more messages with drops in
    /// their bodies (one row each, for drops at positions under 32) and for
    /// `pool_bytes` more bytes of new payloads: a caller that knows how many it adds (one
    /// per tensor of a model of a million) spares the tables' growth slack, up to half of
    /// their size (and a growing table holds its old and new copy at once).
    void reserve(std::size_t insertions, std::size_t new_fields = 0, std::size_t labels = 0, std::size_t body_drops = 0,
                 std::size_t pool_bytes = 0);
    /// A position past every field: an insertion there appends, after those at real
    /// positions (field_count included), for a caller that does not know the count.
    static constexpr std::uint32_t end_position = ~std::uint32_t{0};
    /// Inserts before the field at `position` of `message_index` (0..field_count;
    /// field_count or end_position appends). Several insertions at one position keep their
    /// call order.
    void insert(std::uint32_t message_index, std::uint32_t position, new_field field);
    /// A field to insert in many places (insert_shared), held once: a million tensors
    /// retyped by convert share one data_type field rather than hold one each.
    [[nodiscard]] std::uint32_t add_shared(new_field field);
    /// Inserts shared field `shared` (add_shared) before `position` of `message_index`, as
    /// insert does.
    void insert_shared(std::uint32_t message_index, std::uint32_t position, std::uint32_t shared);
    /// Inserts before `position` the fields external_data (location, offset, length, and
    /// checksum when present: StringStringEntryProto) and data_location = EXTERNAL of
    /// `record`: an index into the edits' own entries (add_external) or, once
    /// set_external_entries was called, the number the caller's table answers for.
    void insert_external(std::uint32_t message_index, std::uint32_t position, std::uint32_t record);
    [[nodiscard]] std::uint32_t add_external(external_entry entry);
    /// Inserts before `position` of `message_index` field `number` holding the payload of
    /// the message's own field at `position` converted from float32 by `conversion` (half
    /// as many bytes), which the planner reads and converts when it writes the message.
    /// The edits hold neither the bytes nor a new_field: 16 bytes an insertion, where a
    /// converted copy costs 48 and its bytes (convert of a model of a million tiny
    /// tensors). The caller drops that field (it is read, not kept) and has checked that
    /// its payload is a whole number of float32 values (a remainder is not written).
    void insert_converted(std::uint32_t message_index, std::uint32_t position, std::uint32_t number, float_conversion conversion);
    /// Entries come from `table` from now on, for every insert_external (a caller that
    /// keeps where each tensor goes need not copy it; `table` must outlive the planning).
    void set_external_entries(external_entries table) { external_table_ = std::move(table); }
    /// Inserts before `position` of tensor message `message_index` its raw_data, holding the
    /// bytes `table` (set_inlined_values) says for `record` (< 2^30), copied by the writer
    /// (a slice: the bytes never pass through the heap) and checked by `check` (add_check)
    /// unless none; while they are written, progress names the tensor by the message's own
    /// name field. 16 bytes an insertion (and 8 a check), where a slice new_field and its
    /// label cost 64: merge of a million tiny tensors.
    void insert_inlined(std::uint32_t message_index, std::uint32_t position, std::uint32_t record,
                        std::uint32_t check = io::no_check);
    /// Values come from `table` for every insert_inlined and inline_body (`table` must
    /// outlive the planning).
    void set_inlined_values(inlined_values table) { inlined_table_ = std::move(table); }
    /// Tensor message `message_index` of `tree` gets the raw_data of `record` in place of
    /// its value fields: the fields at the value's `dropped_positions` (from the table,
    /// set_inlined_values first; not 0), which it drops, and raw_data goes where the first
    /// of them was, before any insertion at that position. `dropped_bytes` must be the
    /// bytes they take (the planner sizes a body with no other edits from it, unread). No
    /// check; progress names the tensor by its own name field. Once a message.
    /// For a message whose fields the tree dropped (a body) it is one 8-byte row
    /// (inlined_bodies), where the drops and insert_inlined cost 28: merge of a million
    /// tiny tensors. Otherwise it is those drops and that insertion.
    void inline_body(const message_tree& tree, std::uint32_t message_index, std::uint32_t record);
    /// Room for `bodies` more inline_body rows.
    void reserve_inlined_bodies(std::size_t bodies);

    [[nodiscard]] new_field varint(std::uint32_t number, std::uint64_t value) const;
    [[nodiscard]] new_field bytes(std::uint32_t number, std::span<const std::byte> payload);
    [[nodiscard]] new_field text(std::uint32_t number, std::string_view payload);
    /// An empty run of fields encoded here, to insert in one place as one insertion: many
    /// small fields at one position (infer-shapes' million value_info entries at the end of
    /// a graph) cost their bytes alone, where a new_field each costs 48 more. Fill it with
    /// append_encoded before the pool takes anything else (bytes, text, another run).
    [[nodiscard]] new_field encoded_fields();
    /// Appends field `number` with `payload` (length-delimited) to the run `fields` (which
    /// must end the pool: the last thing added to it).
    void append_encoded(new_field& fields, std::uint32_t number, std::span<const std::byte> payload);
    [[nodiscard]] new_field slice(std::uint32_t number, std::uint32_t source, std::uint64_t offset, std::uint64_t length,
                                  std::uint32_t check = io::no_check) const;
    /// A payload of `length` bytes converted from `2 * length` float32 bytes of `source`.
    [[nodiscard]] new_field converted_slice(std::uint32_t number, std::uint32_t source, std::uint64_t offset,
                                            std::uint64_t length, float_conversion conversion,
                                            std::uint32_t check = io::no_check) const;
    /// A stream check to attach to a slice (see io::stream_check).
    [[nodiscard]] std::uint32_t add_check(io::stream_check value);
    /// A name for a slice's bytes (the tensor), shown as progress while they are written.
    /// A view, not a copy (a merge of a million tensors would hold a million strings): the
    /// text (the tensor's name in the model's bytes) must outlive the edits.
    [[nodiscard]] std::uint32_t add_label(std::string_view name);

    [[nodiscard]] bool dropped(std::uint32_t field_index) const noexcept {
        return field_index < dropped_.size() && dropped_[field_index];
    }
    struct insertion {
        std::uint32_t message = 0;
        std::uint32_t position = 0;
        std::uint32_t order = 0;
        std::uint32_t what = 0;  // index into the new fields, or with external_bit an external record
    };
    static constexpr std::uint32_t external_bit = 1U << 31;
    static constexpr std::uint32_t converted_bit = 1U << 30;                     // with an index into the converted kinds
    static constexpr std::uint32_t inlined_bits = external_bit | converted_bit;  // with an inlined record
    struct converted_field {
        std::uint32_t number = 0;
        float_conversion conversion = float_conversion::none;
        friend bool operator==(const converted_field&, const converted_field&) = default;
    };
    /// Drops in the body of message `message`: position 32 * word + b for each bit b set
    /// in `bits` (bit 0 the lowest).
    struct body_drop {
        static constexpr std::uint32_t positions = 32;  // a row's
        std::uint32_t message = 0;
        std::uint32_t word = 0;
        std::uint32_t bits = 0;
        /// Whether the row drops `position` (of its message).
        [[nodiscard]] bool drops(std::uint32_t position) const noexcept {
            return position / positions == word && ((bits >> (position % positions)) & 1U) != 0;
        }
        friend bool operator==(const body_drop&, const body_drop&) = default;
    };
    /// The drops in bodies (drop(tree, ...) of a message whose fields the tree dropped),
    /// sorted by (message, word), one row each.
    [[nodiscard]] std::span<const body_drop> body_drops() const;
    /// Those of message `message_index`, sorted by word.
    [[nodiscard]] std::span<const body_drop> body_drops(std::uint32_t message_index) const;
    /// Insertions sorted by (message, position, call order).
    [[nodiscard]] std::span<const insertion> insertions() const;
    struct inlined_body {
        std::uint32_t message = 0;
        std::uint32_t record = 0;
        friend bool operator==(const inlined_body&, const inlined_body&) = default;
    };
    /// inline_body's rows, sorted by message.
    [[nodiscard]] std::span<const inlined_body> inlined_bodies() const;
    /// The value of an inlined record (insert_inlined's or inline_body's), from the table.
    [[nodiscard]] inlined_value inlined_value_of(std::uint32_t record) const { return inlined_table_(record); }
    /// The field an insertion adds; only for one neither external, converted nor inlined.
    [[nodiscard]] const new_field& field(const insertion& i) const noexcept { return fields_[i.what]; }
    [[nodiscard]] static bool is_external(const insertion& i) noexcept { return (i.what & inlined_bits) == external_bit; }
    /// Whether an insertion is insert_inlined's (a tensor's raw_data, from a slice).
    [[nodiscard]] static bool is_inlined(const insertion& i) noexcept { return (i.what & inlined_bits) == inlined_bits; }
    /// The slice an inlined insertion copies, from the table.
    [[nodiscard]] inlined_value inlined(const insertion& i) const { return inlined_value_of(i.what & ~inlined_bits); }
    /// The check of an inlined insertion's bytes (index into checks()), or io::no_check.
    [[nodiscard]] std::uint32_t inlined_check(const insertion& i) const noexcept;
    /// Whether an insertion is insert_converted's (its bytes come from its position's field).
    [[nodiscard]] static bool is_converted(const insertion& i) noexcept {
        return (i.what & (external_bit | converted_bit)) == converted_bit;
    }
    /// The field number and conversion of a converted insertion.
    [[nodiscard]] converted_field converted(const insertion& i) const noexcept { return converted_[i.what & ~converted_bit]; }
    /// The payload length of a converted insertion whose source field's payload is
    /// `float32_bytes` long: 2 bytes a whole float32 value.
    [[nodiscard]] static std::uint64_t converted_length(std::uint64_t float32_bytes) noexcept { return float32_bytes / 4 * 2; }
    /// The entry of an external insertion.
    [[nodiscard]] external_entry external(const insertion& i) const;
    /// Bytes an insertion takes in the output; not for a converted one (its size is its
    /// source field's, which the planner reads).
    [[nodiscard]] std::uint64_t encoded_size(const insertion& i) const;
    /// Bytes an external insertion with entry `entry` takes in the output: for a caller
    /// that has the entry in hand (external(i) builds it each time it is asked).
    [[nodiscard]] static std::uint64_t encoded_size(const external_entry& entry);
    /// Appends the fields of an external insertion, encoded, to `out`.
    void encode_external(const insertion& i, std::vector<std::byte>& out) const;
    [[nodiscard]] std::span<const std::uint32_t> dropped_fields() const noexcept { return drop_list_; }
    [[nodiscard]] std::span<const std::byte> pool() const noexcept { return pool_; }
    [[nodiscard]] std::span<const io::stream_check> checks() const noexcept { return checks_; }
    [[nodiscard]] std::span<const std::string_view> labels() const noexcept { return labels_; }
    [[nodiscard]] bool empty() const noexcept {
        return drop_list_.empty() && body_drops_.empty() && insertions_.empty() && inlined_bodies_.empty();
    }

private:
    void drop_in_body(std::uint32_t message_index, std::uint32_t position);
    void push_insertion(std::uint32_t message_index, std::uint32_t position, std::uint32_t what);

    std::vector<bool> dropped_;
    std::vector<std::uint32_t> drop_list_;
    mutable large_vector<body_drop> body_drops_;
    mutable bool body_drops_sorted_ = true;
    mutable large_vector<insertion> insertions_;
    mutable bool sorted_ = true;
    mutable large_vector<inlined_body> inlined_bodies_;
    mutable bool inlined_bodies_sorted_ = true;
    std::vector<new_field> fields_;
    std::vector<external_entry> externals_;
    std::vector<converted_field> converted_;  // the kinds insert_converted was asked for, each once
    external_entries external_table_;
    inlined_values inlined_table_;
    // (record, check) of the inlined insertions that have a check: few (a checksum key is
    // rare), sorted by record when first read.
    mutable std::vector<std::pair<std::uint32_t, std::uint32_t>> inlined_checks_;
    mutable bool inlined_checks_sorted_ = true;
    std::vector<std::byte> pool_;
    std::vector<io::stream_check> checks_;
    std::vector<std::string_view> labels_;
};

}  // namespace onnxstream::onnx
