#include <onnxstream/onnx/message_tree.hpp>

#include "header_window.hpp"
#include "schema_rows.hpp"

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/schema.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

namespace onnxstream::onnx {

const char* to_string(message_kind kind) noexcept {
    switch (kind) {
        case message_kind::model: return "ModelProto";
        case message_kind::graph: return "GraphProto";
        case message_kind::node: return "NodeProto";
        case message_kind::attribute: return "AttributeProto";
        case message_kind::tensor: return "TensorProto";
        case message_kind::sparse_tensor: return "SparseTensorProto";
        case message_kind::training_info: return "TrainingInfoProto";
        case message_kind::function: return "FunctionProto";
        case message_kind::string_entry: return "StringStringEntryProto";
        case message_kind::operator_set: return "OperatorSetIdProto";
        case message_kind::value_info: return "ValueInfoProto";
    }
    return "message";
}

// The three questions about a field the parser asks, answered by the schema table.
bool child_kind(message_kind kind, std::uint32_t n, message_kind& out) noexcept {
    const auto* f = detail::schema_rows::get().child(kind, n);
    if (f == nullptr) return false;
    out = f->child;
    return true;
}

bool is_singular(message_kind kind, std::uint32_t n) noexcept {
    // Every field onnx.proto does not declare `repeated` (oneof members included:
    // protobuf keeps the last of them too).
    const auto* f = find_field(kind, n);
    return f != nullptr && !f->repeated;
}

std::string field_name(message_kind kind, std::uint32_t n) {
    const auto* f = find_field(kind, n);
    return f != nullptr ? std::string(f->name) : "field" + std::to_string(n);
}

struct message_tree::builder {
    message_tree& tree;
    const tree_options& options;
    const detail::schema_rows& schema = detail::schema_rows::get();
    std::uint64_t dropped = 0;           // fields tokenized but not stored (bodies on demand)
    std::uint64_t dropped_messages = 0;  // messages inside the bodies dropped

    failure fail(error_code code, std::string what, std::uint64_t offset, std::uint32_t message_index) {
        error e;
        e.code = code;
        e.message = std::move(what);
        e.hint = code == error_code::limit_exceeded
                     ? "the model is far larger than any real one; raise the limit only if you trust it"
                     : "the file is damaged or is not an ONNX model";
        e.offset = offset;
        e.field_path = tree.path(message_index);
        return failure(std::move(e));
    }

    // A singular field written twice means something else to protobuf than to any code
    // that reads one occurrence: it keeps the last scalar or string and merges messages
    // (two `graph` fields are one graph holding the nodes of both). Rather than teach
    // every reader those rules, a model that relies on them is refused here, once.
    // (number, wire type) of the singular fields seen, one bit each: every known field
    // number is below 32, so a message of millions of fields costs nothing more.
    class singular_fields {
    public:
        // Whether `f`, one more field of the message, repeats a singular field (`row`: the
        // schema's row for its number, or null).
        bool repeats(const field_schema* row, const proto::field_token& f) noexcept {
            if (row == nullptr || row->repeated) return false;
            // A field of another wire type is an unknown field to protobuf, not a copy.
            auto& seen_of_type = seen_[static_cast<std::size_t>(f.type) & 7U];
            const auto bit = 1U << (f.number & 31U);
            if ((seen_of_type & bit) != 0) return true;
            seen_of_type |= bit;
            return false;
        }

    private:
        std::array<std::uint32_t, 8> seen_{};  // per wire type, bit n: field n seen
    };

    failure repeated_field(std::uint32_t index, message_kind kind, const field_entry& f) {
        const auto* row = schema.at(kind, f.number());  // not null: the field repeats a known one
        const bool is_message = row != nullptr && row->holds != field_holds::value;
        error e(error_code::not_onnx,
                std::string(to_string(kind)) + " field '" + field_name(kind, f.number()) +
                    "' appears more than once; protobuf would " +
                    (is_message ? "merge the copies into one message" : "keep only the last one") +
                    ", and onnxstream refuses to guess which one a runtime reads",
                "re-save the model with onnx (python3 -c \"import onnx,sys; onnx.save(onnx.load(sys.argv[1]), sys.argv[2])\" "
                "IN OUT), "
                "which writes each field once");
        e.offset = f.header_offset();
        e.field_path = tree.path(index);
        return failure(std::move(e));
    }

    // After a TensorProto body was tokenized and checked: its fields are dropped, and with
    // them the messages inside it (external_data entries) and their fields, all stored
    // after it: message_tree::body reads them again.
    void drop_fields(std::uint32_t index) {
        auto& m = tree.messages_[index];
        dropped += tree.fields_.size() - m.first_field;
        dropped_messages += tree.messages_.size() - (index + 1U);
        tree.fields_.truncate(m.first_field);
        tree.messages_.truncate(index + 1U);
        m.field_count = 0;
        m.fields_dropped = true;
    }

    // Tokenizes message `index` (already registered), then descends into its children.
    result<void> build(std::uint32_t index) {
        const auto range = tree.payload_range(index);
        const auto begin = range.offset;
        const auto end = range.offset + range.length;
        const auto first = tree.fields_.size();
        const auto kind = tree.messages_[index].kind;
        singular_fields singular;
        // The first field that repeats a singular one: reported once every field has read,
        // so that a damaged field later in the message is the problem named first.
        constexpr auto none_yet = std::numeric_limits<std::size_t>::max();
        auto first_repeat = none_yet;
        std::size_t children = 0;  // fields that hold a message the tree descends into
        // Below 16 TiB every field fits a field_entry (read_field's headers are at most 20
        // bytes, its numbers in range): only a message that reaches past it needs the check.
        const bool far = end > field_entry::max_offset;
        // What is left of the field limit (dropped fields count; none is dropped before the
        // children are read, below).
        const std::uint64_t field_limit = options.max_fields > dropped ? options.max_fields - dropped : 0;
        const auto bytes = tree.bytes_;
        // Fields go straight into the tree: a message of a million fields needs no
        // scratch copy of them. The headers of a message of many megabytes (a graph of a
        // million initializers or nodes) are read across all of it before its children
        // are: through options.read when it is set (the mapping is not touched), else
        // through the mapping, whose pages behind the scan may go (options.behind) and
        // come back from the page cache as the children are read, rather than the whole
        // file being mapped.
        const bool large = end - begin > tree_options::behind_step;
        std::unique_ptr<detail::header_window> window;
        if (large && options.read) window = std::make_unique<detail::header_window>(bytes.size(), options.read);
        const bool reports = options.behind && large;
        auto reported = begin;
        for (auto position = begin; position < end;) {
            if (reports && !window && position - reported >= tree_options::behind_step) {
                options.behind(position);
                reported = position;
            }
            proto::field_token token;
            // Through the window, every well-formed field (read_field is then asked only
            // for the error, which touches a page of the mapping).
            const bool fast = window ? window->field(position, end, token)
                                     : proto::read_field_fast_in(bytes, position, end, token);
            if (!fast) {
                auto read = proto::read_field(bytes, position, end);
                if (!read) {
                    auto e = std::move(read).error();
                    e.field_path = tree.path(index);
                    return failure(std::move(e));
                }
                token = read.value();
            }
            if (tree.fields_.size() >= field_limit)
                return fail(error_code::limit_exceeded,
                            "the model has more than " + std::to_string(options.max_fields) + " fields", begin, index);
            if (far && !field_entry::fits(token))
                return fail(error_code::limit_exceeded, "a field lies beyond 16 TiB or holds more than 16 TiB",
                            token.header_offset, index);
            const auto* row = schema.at(kind, token.number);
            if (row != nullptr) {
                if (row->holds == field_holds::child) {
                    ++children;
                    if (row->child == message_kind::tensor) ++tree.tensors_seen_;
                }
                if (first_repeat == none_yet && singular.repeats(row, token)) first_repeat = tree.fields_.size();
            }
            tree.fields_.push_back(field_entry(token));
            position = token.end_offset();
        }
        const std::size_t count = tree.fields_.size() - first;
        if (count > std::numeric_limits<std::uint32_t>::max() || tree.fields_.size() + dropped > no_index)
            return fail(error_code::limit_exceeded, "the model has more than " + std::to_string(no_index) + " fields", begin,
                        index);
        tree.messages_[index].first_field = static_cast<std::uint32_t>(first);
        tree.messages_[index].field_count = static_cast<std::uint32_t>(count);

        if (first_repeat != none_yet) return repeated_field(index, kind, tree.fields_[first_repeat]);
        if (children == 0) return {};  // a node's or a tensor's fields, mostly
        const auto depth = tree.messages_[index].depth;
        // Children per field number, so that path() needs no scan of the siblings (a graph
        // may hold millions of them). Only numbers below 32 hold messages. A count is set
        // when its number is first seen (`seen`): zeroing all 32 for each of a million
        // tensors (their external_data entries) cost more than counting.
        std::array<std::uint32_t, detail::schema_rows::numbers> per_number;  // NOLINT: set when first seen
        std::uint32_t seen = 0;
        static_assert(detail::schema_rows::numbers <= 32);
        for (std::size_t i = 0; i < count; ++i) {
            const auto field_index = static_cast<std::uint32_t>(first + i);
            // Read by reference, before build() below grows the field array: copying the
            // 20-byte entry to read its number stalled on the copy.
            const auto& entry = tree.fields_[field_index];
            const auto n = entry.number();
            const auto* row = schema.child(kind, n);
            if (row == nullptr) continue;
            const auto sub = row->child;
            const auto header_offset = entry.header_offset();
            const auto end_offset = entry.end_offset();
            if (entry.type() != proto::wire_type::length_delimited)
                return fail(error_code::not_onnx,
                            std::string(to_string(kind)) + " field '" + field_name(kind, n) +
                                "' should hold a message but has wire type " + std::to_string(static_cast<int>(entry.type())),
                            header_offset, index);
            if (depth + 1U > options.max_depth)
                return fail(error_code::limit_exceeded,
                            "messages are nested deeper than " + std::to_string(options.max_depth) + " levels", header_offset,
                            index);
            if (tree.messages_.size() + dropped_messages >= options.max_messages)
                return fail(error_code::limit_exceeded,
                            "the model has more than " + std::to_string(options.max_messages) + " messages", header_offset,
                            index);
            const auto bit = 1U << n;  // n < numbers: schema.child answered
            if ((seen & bit) == 0) {
                seen |= bit;
                per_number[n] = 0;
            }
            message child;
            child.kind = sub;
            child.depth = static_cast<std::uint16_t>(depth + 1);
            child.parent = index;
            child.parent_field = field_index;
            child.ordinal = per_number[n]++;
            const auto child_index = static_cast<std::uint32_t>(tree.messages_.size());
            tree.messages_.push_back(child);
            tree.fields_[field_index].child = child_index;
            ONNXSTREAM_TRY(build(child_index));
            if (sub == message_kind::tensor) {
                if (options.on_tensor) options.on_tensor(tree, child_index);
                if (options.tensors == tensor_fields::on_demand) drop_fields(child_index);
            }
            // A node without attributes: nothing inside it was registered after it.
            if (sub == message_kind::node && options.nodes == node_fields::on_demand && tree.messages_.size() == child_index + 1U)
                drop_fields(child_index);
            if (reports) options.behind(end_offset);
        }
        for (std::size_t i = 0; i < count; ++i) {
            const auto& f = tree.fields_[first + i];
            if (f.child != no_index) tree.messages_[f.child].repeated = per_number[f.number()] > 1;
        }
        return {};
    }
};

result<message_tree> message_tree::parse(std::span<const std::byte> bytes, const tree_options& options) {
    message_tree tree;
    tree.bytes_ = bytes;
    if (bytes.empty()) return failure(error_code::not_onnx, "the file is empty", "an ONNX model is a protobuf ModelProto");
    tree.root_range_ = {0, bytes.size()};
    message root;
    root.kind = message_kind::model;
    tree.messages_.push_back(root);
    builder b{tree, options, detail::schema_rows::get()};
    if (auto built = b.build(0); !built) {
        auto e = std::move(built).error();
        if (e.code == error_code::malformed && tree.messages_.size() == 1) e.message = "not an ONNX model (" + e.message + ")";
        return failure(std::move(e));
    }
    const auto* ir_version = tree.find(0, number(model_field::ir_version));
    if (ir_version == nullptr || ir_version->type() != proto::wire_type::varint)
        return failure(error_code::not_onnx, "not an ONNX model: the file is protobuf but has no ir_version",
                       "check that this is a .onnx model file and not a data file or another format");
    return tree;
}

result<message_tree> message_tree::body(const message_tree& tree, std::uint32_t index) {
    message_tree out;
    out.bytes_ = tree.bytes_;
    out.root_range_ = tree.payload_range(index);
    out.origin_ = &tree;
    out.origin_message_ = index;
    message root = tree.messages_[index];
    root.parent = no_index;
    root.parent_field = no_index;
    root.first_field = 0;
    root.field_count = 0;
    root.fields_dropped = false;
    out.messages_.push_back(root);
    // Parsed once with the tree's limits: no limit applies again.
    tree_options unlimited;
    unlimited.max_depth = std::numeric_limits<std::uint32_t>::max();
    unlimited.max_fields = std::numeric_limits<std::uint64_t>::max();
    unlimited.max_messages = std::numeric_limits<std::uint64_t>::max();
    builder b{out, unlimited, detail::schema_rows::get()};
    ONNXSTREAM_TRY(b.build(0));
    // Its field indices follow the origin's.
    out.field_base_ = static_cast<std::uint32_t>(tree.fields_.size());
    for (std::size_t i = 0; i < out.messages_.size(); ++i) {
        auto& m = out.messages_[i];
        m.first_field += out.field_base_;
        if (m.parent_field != no_index) m.parent_field += out.field_base_;
    }
    return out;
}

void message_tree::fields_not_stored(std::uint32_t message_index) const {
    throw std::logic_error("message_tree: the fields of " + path(message_index) +
                           " were not stored (a body read on demand); read them with message_tree::body or read_fields");
}

void message_tree::field_out_of_range(std::uint32_t field_index) const {
    throw std::out_of_range("message_tree: field " + std::to_string(field_index) + " is not one of this tree's (" +
                            std::to_string(field_base_) + " to " + std::to_string(field_base_ + fields_.size()) +
                            "): an index of another tree");
}

std::uint32_t message_tree::owner(std::uint32_t field_index) const {
    // first_field grows with the message index (messages are tokenized in pre-order), and
    // of the messages sharing a first_field only the last can hold fields.
    const auto all = messages();
    const auto after = std::upper_bound(all.begin(), all.end(), field_index,
                                        [](std::uint32_t i, const message& m) { return i < m.first_field; });
    return static_cast<std::uint32_t>(after - all.begin()) - 1;
}

std::uint64_t message_tree::value(const field_entry& f) const noexcept {
    if (f.type() != proto::wire_type::varint) return 0;
    const auto decoded = proto::decode_varint(bytes_.subspan(f.payload_offset(), f.payload_length()));
    return decoded ? decoded->value : 0;  // the tokenizer checked it
}

proto::field_token message_tree::token(const field_entry& f) const noexcept {
    proto::field_token t;
    t.header_offset = f.header_offset();
    t.payload_offset = f.payload_offset();
    t.payload_length = f.payload_length();
    t.value = value(f);
    t.number = f.number();
    t.type = f.type();
    return t;
}

std::string_view message_tree::text(const field_entry& f) const {
    const auto bytes = payload(f);
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::span<const field_entry> message_tree::read_fields(std::uint32_t message_index, std::vector<field_entry>& scratch) const {
    if (!messages_[message_index].fields_dropped) return fields(message_index);
    scratch.clear();
    const auto range = payload_range(message_index);
    const auto end = range.offset + range.length;
    for (auto position = range.offset; position < end;) {
        proto::field_token token;
        if (!proto::next_field(bytes_, position, end, token)) {
            scratch.clear();
            return {};
        }
        scratch.push_back(field_entry(token));  // parse stored this token's like: it fits
        position = token.end_offset();
    }
    return scratch;
}

const field_entry* message_tree::find(std::uint32_t message_index, std::uint32_t n) const {
    for (const auto& f : fields(message_index))
        if (f.number() == n) return &f;
    return nullptr;
}

std::string_view message_tree::find_text(std::uint32_t message_index, std::uint32_t n) const {
    if (messages_[message_index].fields_dropped) {
        // Read from the bytes, which parse tokenized: a tensor's name, without a body().
        const auto range = payload_range(message_index);
        const auto end = range.offset + range.length;
        for (auto position = range.offset; position < end;) {
            proto::field_token read;
            if (!proto::next_field(bytes_, position, end, read)) return {};
            if (read.number == n) {
                if (read.type != proto::wire_type::length_delimited) return {};
                return {reinterpret_cast<const char*>(bytes_.data() + read.payload_offset),
                        static_cast<std::size_t>(read.payload_length)};
            }
            position = read.end_offset();
        }
        return {};
    }
    const auto* f = find(message_index, n);
    if (f == nullptr || f->type() != proto::wire_type::length_delimited) return {};
    return text(*f);
}

std::string message_tree::path(std::uint32_t message_index) const {
    std::vector<std::string> parts;
    for (std::uint32_t m = message_index; m != no_index && m < messages_.size() && messages_[m].parent != no_index;
         m = messages_[m].parent) {
        const auto& child = messages_[m];
        const auto& parent = messages_[child.parent];
        const auto n = field(child.parent_field).number();
        std::string part = field_name(parent.kind, n);
        // A graph's nodes and initializers and a node's attributes always show their index
        // (one of many, even when alone); other repeated fields when they repeat. The
        // numbers alone would also match a sparse tensor's values (1) or an attribute's t (5).
        const bool always_indexed = (parent.kind == message_kind::graph &&
                                     (n == number(graph_field::node) || n == number(graph_field::initializer))) ||
                                    (parent.kind == message_kind::node && n == number(node_field::attribute));
        if (child.repeated || always_indexed) part += "[" + std::to_string(child.ordinal) + "]";
        parts.push_back(std::move(part));
    }
    // A body's messages lie under its message in the origin.
    std::string text = origin_ != nullptr ? origin_->path(origin_message_) : std::string();
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (!text.empty()) text += '.';
        text += *it;
    }
    return text.empty() ? "model" : text;
}

}  // namespace onnxstream::onnx
