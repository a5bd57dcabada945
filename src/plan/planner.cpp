#include <onnxstream/plan/planner.hpp>

#include <onnxstream/large_blocks.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/float_conversion.hpp>
#include <onnxstream/proto/tokenizer.hpp>
#include <onnxstream/proto/varint.hpp>

#include <bit>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onnxstream::plan {
namespace {

using onnx::message_tree;
using onnx::new_field;
using onnx::no_index;
using onnx::tree_edits;

// A converted insertion (tree_edits::insert_converted) of at most this many bytes is
// converted here, into the plan's bytes: as a convert operation the writer would read and
// write it with a system call of a few bytes each (a million tiny tensors). Longer ones
// are convert operations, which the writer runs through its bounded buffers.
constexpr std::uint64_t converted_in_plan = 4096;

// A message's field header for a new payload size: the original header when the size
// is unchanged (keeps non-minimal encodings), else a fresh minimal one.
std::uint64_t header_size(const onnx::field_entry& f, std::uint64_t new_size) {
    if (new_size == f.payload_length()) return f.header_length();
    return proto::tag_size(f.number()) + proto::varint_size(new_size);
}

}  // namespace

struct rewrite_stream::state {
    // The new payload size of each message, 4 bytes a message (a million merged tensors): a
    // size of 4 GiB or more (a graph merged past protobuf's limit, whose size is still
    // reported) is kept apart.
    class message_sizes {
    public:
        void assign(std::size_t messages) { small_.assign(messages, 0); }
        [[nodiscard]] std::uint64_t operator[](std::uint32_t m) const {
            return small_[m] != large ? small_[m] : large_sizes_.find(m)->second;
        }
        void set(std::uint32_t m, std::uint64_t bytes) {
            if (bytes < large) {
                small_[m] = static_cast<std::uint32_t>(bytes);
                return;
            }
            small_[m] = large;
            large_sizes_[m] = bytes;
        }

    private:
        static constexpr std::uint32_t large = std::numeric_limits<std::uint32_t>::max();
        large_vector<std::uint32_t> small_;
        std::unordered_map<std::uint32_t, std::uint64_t> large_sizes_;
    };

    const message_tree* tree = nullptr;
    const tree_edits* edits = nullptr;
    std::uint32_t source = 0;
    reading_function behind;  // stream_rewrite's `reading`
    std::vector<bool> dirty;  // the message or something inside it is edited
    message_sizes size;       // new payload size of dirty messages
    std::uint64_t total = 0;

    // The fields of a message whose fields the tree dropped, tokenized again
    // (message_tree::read_fields: its own fields only, into a buffer reused for every body).
    // One at a time: nothing inside a body is a message the walk enters.
    std::vector<onnx::field_entry> body_fields;
    std::uint32_t body_message = no_index;
    std::span<const tree_edits::body_drop> drops;  // the body's drops, by word
    std::size_t next_drop = 0;
    // The body's inline_body row, if it has one: the value's record, the fields it drops
    // (bit i: position i) and the position its raw_data goes before (the first of them).
    std::optional<std::uint32_t> body_record;
    std::uint32_t body_value_drops = 0;
    std::uint32_t body_value_position = 0;

    // Where the emitter is: a message being written, the next of its fields, the next
    // of its insertions. The stack replaces recursion so that it can stop anywhere.
    struct frame {
        std::uint32_t message = 0;
        std::uint32_t field = 0;
        std::uint32_t next_insertion = no_index;
        // A body's inline_body row not yet written: its record, and the position its
        // raw_data goes before (at the end for a body that did not read).
        std::uint32_t inlined_record = no_index;
        std::uint32_t inlined_position = no_index;
    };
    std::vector<frame> stack;
    bool started = false;
    std::vector<std::byte> scratch;  // an external insertion's fields, encoded, or converted bytes
    std::uint64_t saturated = 0;     // by the conversions made here

    // Reads message m's body (the tree dropped its fields). A body that no longer
    // tokenizes (the file changed under a page released behind a pass) is false: the
    // message is then kept as it was, and the writer's check that the sources are
    // unchanged refuses the output.
    bool open_body(std::uint32_t m) {
        if (body_message == m) return true;
        // The last body's state goes first: nothing of it holds for a body that fails.
        body_message = no_index;
        drops = {};
        body_record.reset();
        body_value_drops = 0;
        body_value_position = std::numeric_limits<std::uint32_t>::max();
        const auto range = tree->payload_range(m);
        if (behind) behind(range.offset);
        // Only an empty payload has no fields.
        if (tree->read_fields(m, body_fields).empty() && range.length != 0) return false;
        body_message = m;
        drops = drops_of(m);
        body_record = inlined_body_of(m);
        body_value_drops = body_record ? edits->inlined_value_of(*body_record).dropped_positions : 0;
        body_value_position = body_value_drops != 0 ? static_cast<std::uint32_t>(std::countr_zero(body_value_drops))
                                                    : std::numeric_limits<std::uint32_t>::max();
        return true;
    }

    // The index of message m's first insertion, or no_index: a cursor over the sorted
    // insertions, where a table of 4 bytes a message was (a million merged tensors). The
    // passes ask in increasing message order, or decreasing (the sizes of the messages the
    // tree stores, children first): each moves it over the insertions once.
    std::size_t insertion_cursor = 0;
    std::uint32_t first_insertion(std::uint32_t m) {
        const auto insertions = edits->insertions();
        while (insertion_cursor > 0 && insertions[insertion_cursor - 1].message >= m) --insertion_cursor;
        while (insertion_cursor < insertions.size() && insertions[insertion_cursor].message < m) ++insertion_cursor;
        return insertion_cursor < insertions.size() && insertions[insertion_cursor].message == m
                   ? static_cast<std::uint32_t>(insertion_cursor)
                   : no_index;
    }

    // Message m's inline_body row (its record), by a cursor as drops_of: the passes ask
    // in increasing message order.
    std::span<const tree_edits::inlined_body> all_bodies;
    std::size_t body_cursor = 0;
    std::optional<std::uint32_t> inlined_body_of(std::uint32_t m) {
        if (body_cursor > 0 && (body_cursor > all_bodies.size() || all_bodies[body_cursor - 1].message > m)) body_cursor = 0;
        while (body_cursor < all_bodies.size() && all_bodies[body_cursor].message < m) ++body_cursor;
        if (body_cursor < all_bodies.size() && all_bodies[body_cursor].message == m) return all_bodies[body_cursor].record;
        return std::nullopt;
    }

    // Message m's drops in its body. Each pass reads the bodies in increasing message order:
    // a cursor moves over the sorted drops (a search for each of a million bodies costs more).
    // Asked twice for one message (sized by its drops, then read), it answers from the last.
    std::span<const tree_edits::body_drop> all_drops;
    std::size_t drop_cursor = 0;
    std::uint32_t drops_message = no_index;
    std::span<const tree_edits::body_drop> last_drops;
    std::span<const tree_edits::body_drop> drops_of(std::uint32_t m) {
        if (m == drops_message) return last_drops;
        if (drop_cursor > 0 && (drop_cursor > all_drops.size() || all_drops[drop_cursor - 1].message >= m)) drop_cursor = 0;
        while (drop_cursor < all_drops.size() && all_drops[drop_cursor].message < m) ++drop_cursor;
        const auto first = drop_cursor;
        while (drop_cursor < all_drops.size() && all_drops[drop_cursor].message == m) ++drop_cursor;
        drops_message = m;
        last_drops = all_drops.subspan(first, drop_cursor - first);
        return last_drops;
    }

    // The new payload size of body m (the tree dropped its fields) when its only edits are
    // an inlined value's insertion and the drops that value says it replaces, with their
    // bytes (tree_edits::inlined_value::dropped_bytes): a merged tensor, sized without
    // tokenizing its body again. Nothing otherwise (the body is read).
    std::optional<std::uint64_t> sized_by_drops(std::uint32_t m) {
        const auto insertions = edits->insertions();
        const auto i = first_insertion(m);
        if (const auto record = inlined_body_of(m)) {
            // An inline_body row: the drops are its value's by construction.
            if (i != no_index || !drops_of(m).empty()) return std::nullopt;
            return sized_from(m, edits->inlined_value_of(*record));
        }
        if (i == no_index) return std::nullopt;
        const auto& ins = insertions[i];
        const bool inlined = tree_edits::is_inlined(ins);
        if (!inlined && !tree_edits::is_external(ins)) return std::nullopt;
        if (i + 1 < insertions.size() && insertions[i + 1].message == m) return std::nullopt;
        const auto rows = drops_of(m);
        if (rows.size() != 1 || rows[0].word != 0) return std::nullopt;
        if (inlined) {
            const auto value = edits->inlined(ins);
            if (rows[0].bits != value.dropped_positions) return std::nullopt;
            return sized_from(m, value);
        }
        // A tensor moved out (store_external with its value fields known): the entries'
        // bytes replace those the drops name.
        const auto entry = edits->external(ins);
        const auto payload = tree->payload_range(m).length;
        if (entry.dropped_positions == 0 || rows[0].bits != entry.dropped_positions || entry.dropped_bytes > payload)
            return std::nullopt;
        return payload - entry.dropped_bytes + tree_edits::encoded_size(entry);
    }

    // Body m's new payload size when the only edit is `value` in place of the fields it
    // names: nothing if it names none, or more bytes than the body has.
    [[nodiscard]] std::optional<std::uint64_t> sized_from(std::uint32_t m, const onnx::inlined_value& value) const {
        const auto payload = tree->payload_range(m).length;
        if (value.dropped_positions == 0 || value.dropped_bytes > payload) return std::nullopt;
        return payload - value.dropped_bytes + raw_data_size(value);
    }

    [[nodiscard]] static std::uint64_t raw_data_size(const onnx::inlined_value& value) {
        return proto::length_delimited_field_size(onnx::number(onnx::tensor_field::raw_data), value.length);
    }

    // Message m's fields: the tree's, or those of its body (open_body), empty if unreadable.
    [[nodiscard]] std::span<const onnx::field_entry> fields_of(std::uint32_t m) const {
        if (tree->stores_fields(m)) return tree->fields(m);
        return body_message == m ? std::span<const onnx::field_entry>(body_fields) : std::span<const onnx::field_entry>{};
    }

    // The message field f of message m holds, when the walk enters it: never one inside a
    // body read again (a body's child indices number the body's own messages, not the
    // tree's; an external tensor's entries are copied or dropped whole).
    [[nodiscard]] std::uint32_t child_of(std::uint32_t m, const onnx::field_entry& f) const {
        return tree->stores_fields(m) ? f.child : no_index;
    }

    // Whether the field at `position` of message m (read in increasing positions) is dropped.
    bool dropped(std::uint32_t m, std::uint32_t position) {
        if (tree->stores_fields(m)) return edits->dropped(tree->at(m).first_field + position);
        if (position < tree_edits::body_drop::positions && ((body_value_drops >> position) & 1U) != 0) return true;
        const auto word = position / tree_edits::body_drop::positions;
        while (next_drop < drops.size() && drops[next_drop].word < word) ++next_drop;
        return next_drop < drops.size() && drops[next_drop].drops(position);
    }

    // The field a converted insertion reads: the one at its position, none in a body that
    // did not read (sized and written as nothing, consistently).
    static const onnx::field_entry* converted_source(std::span<const onnx::field_entry> fields,
                                                     const tree_edits::insertion& ins) {
        return ins.position < fields.size() ? &fields[ins.position] : nullptr;
    }

    std::uint64_t insertion_size(std::span<const onnx::field_entry> fields, const tree_edits::insertion& ins) const {
        if (!tree_edits::is_converted(ins)) return edits->encoded_size(ins);
        const auto* from = converted_source(fields, ins);
        if (from == nullptr) return 0;
        return proto::length_delimited_field_size(edits->converted(ins).number,
                                                  tree_edits::converted_length(from->payload_length()));
    }

    // The new payload size of dirty message m, its dirty children's sizes known.
    std::uint64_t payload_size(std::uint32_t m) {
        std::uint64_t sum = 0;
        std::span<const onnx::field_entry> fields;
        if (!tree->stores_fields(m) && !open_body(m)) {
            // Kept as it was; an inline_body row's raw_data still follows it (as written).
            sum = tree->payload_range(m).length;
            if (const auto record = inlined_body_of(m)) sum += raw_data_size(edits->inlined_value_of(*record));
        } else {
            if (body_message == m && body_record) sum += raw_data_size(edits->inlined_value_of(*body_record));
            next_drop = 0;
            fields = fields_of(m);
            for (std::uint32_t i = 0; i < fields.size(); ++i) {
                if (dropped(m, i)) continue;
                const auto& f = fields[i];
                const auto child = child_of(m, f);
                if (child != no_index && dirty[child]) sum += header_size(f, size[child]) + size[child];
                else sum += f.total_length();
            }
        }
        const auto insertions = edits->insertions();
        for (auto i = first_insertion(m); i != no_index && i < insertions.size() && insertions[i].message == m; ++i)
            sum += insertion_size(fields, insertions[i]);
        return sum;
    }

    void compute_sizes() {
        const auto messages = tree->messages();
        dirty.assign(messages.size(), false);
        size.assign(messages.size());
        const auto insertions = edits->insertions();
        for (const auto& ins : insertions) dirty[ins.message] = true;
        for (const auto field_index : edits->dropped_fields()) dirty[tree->owner(field_index)] = true;
        all_drops = edits->body_drops();
        for (const auto& drop : all_drops) dirty[drop.message] = true;
        all_bodies = edits->inlined_bodies();
        for (const auto& body : all_bodies)
            if (body.message < messages.size() && !tree->stores_fields(body.message)) dirty[body.message] = true;
        // The bodies read again first, in file order (a walk forward, whose pages the
        // caller may release behind it); none holds a message.
        for (std::uint32_t m = 0; m < messages.size(); ++m) {
            if (!dirty[m] || tree->stores_fields(m)) continue;
            const auto known = sized_by_drops(m);
            size.set(m, known ? *known : payload_size(m));
        }
        // Children come after their parents: one reverse sweep settles dirtiness and sizes.
        for (std::size_t m = messages.size(); m-- > 0;) {
            if (!dirty[m]) continue;
            if (tree->stores_fields(static_cast<std::uint32_t>(m)))
                size.set(static_cast<std::uint32_t>(m), payload_size(static_cast<std::uint32_t>(m)));
            if (messages[m].parent != no_index) dirty[messages[m].parent] = true;
        }
        total = dirty[0] ? size[0] : tree->bytes().size();
        body_message = no_index;
        drops_message = no_index;
        body_cursor = 0;
        insertion_cursor = 0;
    }

    void push(write_plan& plan, std::uint32_t m) {
        if (!tree->stores_fields(m) && copied_before_value(plan, m)) return;
        stack.push_back({m, 0, first_insertion(m)});
        next_drop = 0;
        if (tree->stores_fields(m)) return;
        auto& top = stack.back();
        if (open_body(m)) {
            if (body_record) {
                top.inlined_record = *body_record;
                top.inlined_position = body_value_position;
            }
            return;
        }
        if (const auto record = inlined_body_of(m)) top.inlined_record = *record;
        const auto range = tree->payload_range(m);
        plan.copy(source, range.offset, range.length);
    }

    // Body m written without reading it when its one edit is an inline_body row whose
    // value fields are its last (inlined_value::dropped_last): the bytes before them, then
    // the raw_data, labelled by its message (last_name reads the name `inlined` labels
    // with, if progress asks). Sized the same way (sized_by_drops). False, with nothing
    // written, for any other body.
    bool copied_before_value(write_plan& plan, std::uint32_t m) {
        const auto record = inlined_body_of(m);
        if (!record || first_insertion(m) != no_index || !drops_of(m).empty()) return false;
        const auto value = edits->inlined_value_of(*record);
        const auto range = tree->payload_range(m);
        if (!value.dropped_last || value.dropped_positions == 0 || value.dropped_bytes > range.length) return false;
        if (behind) behind(range.offset);
        plan.copy(source, range.offset, range.length - value.dropped_bytes);
        plan.label_message(m);
        raw_data(plan, value, io::no_check);
        return true;
    }

    // The last name field of tensor m whose fields the tree dropped, read from its bytes
    // (empty when it has none): copied_before_value's label. Its value fields, the body's
    // last, hold no name field, so the whole body gives the name the bytes before them do.
    [[nodiscard]] std::string_view last_name(std::uint32_t m) const {
        const auto range = tree->payload_range(m);
        const auto end = range.offset + range.length;
        std::string_view name;
        for (auto position = range.offset; position < end;) {
            proto::field_token read;
            if (!proto::next_field(tree->bytes(), position, end, read)) break;
            if (read.number == onnx::number(onnx::tensor_field::name) && read.type == proto::wire_type::length_delimited)
                name = {reinterpret_cast<const char*>(tree->bytes().data() + read.payload_offset),
                        static_cast<std::size_t>(read.payload_length)};
            position = read.end_offset();
        }
        return name;
    }

    void put_varint(write_plan& plan, std::uint64_t value) { plan.emit(proto::encode_varint(value).view()); }

    void insertion(write_plan& plan, std::span<const onnx::field_entry> fields, const tree_edits::insertion& ins) {
        if (tree_edits::is_external(ins)) {
            scratch.clear();
            edits->encode_external(ins, scratch);
            plan.emit(scratch);
            return;
        }
        if (tree_edits::is_converted(ins)) {
            converted(plan, fields, ins);
            return;
        }
        if (tree_edits::is_inlined(ins)) {
            inlined(plan, fields, ins);
            return;
        }
        const new_field& f = edits->field(ins);
        if (f.kind == new_field::payload_kind::encoded) {
            plan.emit(edits->pool().subspan(f.offset, f.length));
            return;
        }
        if (f.kind == new_field::payload_kind::varint) {
            put_varint(plan, proto::make_tag(f.number, proto::wire_type::varint));
            put_varint(plan, f.value);
            return;
        }
        if (f.kind == new_field::payload_kind::slice && f.label < edits->labels().size())
            plan.label(std::string(edits->labels()[f.label]));
        put_varint(plan, proto::make_tag(f.number, proto::wire_type::length_delimited));
        put_varint(plan, f.length);
        if (f.kind == new_field::payload_kind::bytes) plan.emit(edits->pool().subspan(f.offset, f.length));
        else if (f.conversion != onnx::float_conversion::none) plan.convert(f.source, f.offset, f.length, f.conversion, f.check);
        else plan.copy(f.source, f.offset, f.length, f.check);
    }

    // A tensor's raw_data from a slice (tree_edits::insert_inlined), labelled with the
    // tensor's name field (none in a body that did not read).
    void inlined(write_plan& plan, std::span<const onnx::field_entry> fields, const tree_edits::insertion& ins) {
        inlined(plan, fields, edits->inlined(ins), edits->inlined_check(ins));
    }

    void inlined(write_plan& plan, std::span<const onnx::field_entry> fields, const onnx::inlined_value& value,
                 std::uint32_t check) {
        for (auto f = fields.rbegin(); f != fields.rend(); ++f) {
            if (f->number() != onnx::number(onnx::tensor_field::name) || f->type() != proto::wire_type::length_delimited)
                continue;
            plan.label(std::string(tree->text(*f)));
            break;
        }
        raw_data(plan, value, check);
    }

    // The raw_data field holding `value`'s bytes, copied by the writer.
    void raw_data(write_plan& plan, const onnx::inlined_value& value, std::uint32_t check) {
        put_varint(plan, proto::make_tag(onnx::number(onnx::tensor_field::raw_data), proto::wire_type::length_delimited));
        put_varint(plan, value.length);
        plan.copy(value.source, value.offset, value.length, check);
    }

    void converted(write_plan& plan, std::span<const onnx::field_entry> fields, const tree_edits::insertion& ins) {
        const auto* from = converted_source(fields, ins);
        if (from == nullptr) return;
        const auto kind = edits->converted(ins);
        const auto length = tree_edits::converted_length(from->payload_length());
        put_varint(plan, proto::make_tag(kind.number, proto::wire_type::length_delimited));
        put_varint(plan, length);
        if (length > converted_in_plan) {
            plan.convert(source, from->payload_offset(), length, kind.conversion);
            return;
        }
        scratch.resize(static_cast<std::size_t>(length));
        saturated += onnx::convert_float32_bytes(kind.conversion, tree->bytes().subspan(from->payload_offset(), 2 * length),
                                                 scratch);
        plan.emit(scratch);
    }

    // One step of the walk: the insertions before the top message's next field and that
    // field, or the insertions at its end and back to its parent.
    void step(write_plan& plan) {
        auto& top = stack.back();
        const auto m = top.message;
        const auto fields = fields_of(m);
        const auto insertions = edits->insertions();
        if (top.inlined_record != no_index && (top.inlined_position <= top.field || top.field == fields.size())) {
            inlined(plan, fields, edits->inlined_value_of(top.inlined_record), io::no_check);
            top.inlined_record = no_index;
        }
        while (top.next_insertion != no_index && top.next_insertion < insertions.size() &&
               insertions[top.next_insertion].message == m && insertions[top.next_insertion].position <= top.field) {
            insertion(plan, fields, insertions[top.next_insertion]);
            ++top.next_insertion;
        }
        if (top.field == fields.size()) {
            // The rest of the insertions (positions past the end append).
            while (top.next_insertion != no_index && top.next_insertion < insertions.size() &&
                   insertions[top.next_insertion].message == m) {
                insertion(plan, fields, insertions[top.next_insertion]);
                ++top.next_insertion;
            }
            stack.pop_back();
            return;
        }
        const auto position = top.field++;
        if (dropped(m, position)) return;
        const auto& f = fields[position];
        const auto child = child_of(m, f);
        if (child != no_index && dirty[child]) {
            const auto child_size = size[child];
            if (child_size == f.payload_length()) {
                plan.copy(source, f.header_offset(), f.header_length());
            } else {
                put_varint(plan, proto::make_tag(f.number(), proto::wire_type::length_delimited));
                put_varint(plan, child_size);
            }
            push(plan, child);  // `top` is not used past this point
            return;
        }
        plan.copy(source, f.header_offset(), f.total_length());
    }
};

rewrite_stream::rewrite_stream() : state_(std::make_unique<state>()) {}
rewrite_stream::rewrite_stream(rewrite_stream&&) noexcept = default;
rewrite_stream& rewrite_stream::operator=(rewrite_stream&&) noexcept = default;
rewrite_stream::~rewrite_stream() = default;

std::uint64_t rewrite_stream::size() const noexcept { return state_->total; }

std::uint64_t rewrite_stream::saturated() const noexcept { return state_->saturated; }

bool rewrite_stream::next(write_plan& window, std::size_t operations) {
    auto& s = *state_;
    window.next_window();
    window.set_namer([&s](std::uint32_t m) { return s.last_name(m); });
    if (!s.started) {
        s.started = true;
        if (!s.dirty[0]) {
            window.copy(s.source, 0, s.tree->bytes().size());
            return !window.operations().empty();
        }
        s.push(window, 0);
    }
    // Emits merge, so the bytes are bounded too (an edit's bytes may be large).
    constexpr std::size_t pool_bytes = 1U << 20;
    while (!s.stack.empty() && window.operations().size() < operations && window.pool().size() < pool_bytes) s.step(window);
    return !window.operations().empty();
}

std::uint64_t planned_size(const message_tree& tree, const tree_edits& edits, reading_function reading) {
    // Nothing edited: the size is the file's, without the per-message tables (12 bytes a
    // message, for inspect of a model whose tensors are all embedded).
    if (edits.empty()) return tree.bytes().size();
    rewrite_stream::state s;
    s.tree = &tree;
    s.edits = &edits;
    s.behind = std::move(reading);
    s.compute_sizes();
    return s.total;
}

result<rewrite_stream> stream_rewrite(const message_tree& tree, const tree_edits& edits, const plan_options& options,
                                      reading_function reading) {
    rewrite_stream stream;
    auto& s = *stream.state_;
    s.tree = &tree;
    s.edits = &edits;
    s.source = options.tree_source;
    s.behind = std::move(reading);
    s.compute_sizes();
    if (s.total > options.max_size) {
        error e;
        e.code = error_code::too_large;
        e.message = "the output would be " + std::to_string(s.total) + " bytes, over protobuf's limit of " +
                    std::to_string(options.max_size) + " bytes (2 GB) for one .onnx file";
        e.hint = "keep the weights in external data: use {0} to tidy them instead of merging";
        e.remedies = {{remedy::keep_external_data, {}}};
        return failure(std::move(e));
    }
    return stream;
}

result<write_plan> plan_rewrite(const message_tree& tree, const tree_edits& edits, const plan_options& options) {
    ONNXSTREAM_ASSIGN(auto stream, stream_rewrite(tree, edits, options));
    write_plan plan;
    for (const auto& c : edits.checks()) (void)plan.add_check(c);
    // The windows, kept: the plan whole.
    write_plan window;
    while (stream.next(window)) plan.append(window);
    return plan;
}

}  // namespace onnxstream::plan
