#include <onnxstream/onnx/tree_edits.hpp>

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <tuple>

namespace onnxstream::onnx {
namespace {

// The StringStringEntryProto entries of an external tensor, in the order written:
// location, offset, length, checksum (when present).
struct entry_texts {
    explicit entry_texts(external_entry e)
        : entry(std::move(e)), offset(std::to_string(entry.offset)), length(std::to_string(entry.length)) {
        pairs[0] = {"location", entry.location};
        pairs[1] = {"offset", offset};
        pairs[2] = {"length", length};
        if (entry.checksum) pairs[3] = {"checksum", *entry.checksum};
        count = entry.checksum ? 4 : 3;
    }
    entry_texts(const entry_texts&) = delete;
    entry_texts& operator=(const entry_texts&) = delete;
    external_entry entry;
    std::string offset;
    std::string length;
    std::array<std::pair<std::string_view, std::string_view>, 4> pairs;
    std::size_t count = 0;
};

std::uint64_t entry_size(std::string_view key, std::string_view value) {
    return proto::length_delimited_field_size(number(string_entry_field::key), key.size()) +
           proto::length_delimited_field_size(number(string_entry_field::value), value.size());
}

constexpr auto external_location = static_cast<std::uint64_t>(data_location::external);

}  // namespace

std::uint64_t new_field::encoded_size() const noexcept {
    if (kind == payload_kind::varint) return proto::tag_size(number) + proto::varint_size(value);
    if (kind == payload_kind::encoded) return length;
    return proto::length_delimited_field_size(number, length);
}

void tree_edits::drop(std::uint32_t field_index) {
    if (field_index >= dropped_.size()) dropped_.resize(field_index + 1U, false);
    if (dropped_[field_index]) return;
    dropped_[field_index] = true;
    drop_list_.push_back(field_index);
}

void tree_edits::drop(const message_tree& tree, std::uint32_t message_index, std::uint32_t position) {
    // One entry point picks the form: a drop in the body of a message whose fields the
    // tree stores would never be applied (the planner reads only dropped bodies again).
    if (tree.stores_fields(message_index)) drop(tree.at(message_index).first_field + position);
    else drop_in_body(message_index, position);
}

void tree_edits::drop_in_body(std::uint32_t message_index, std::uint32_t position) {
    const auto word = position / body_drop::positions;
    const auto bit = std::uint32_t{1} << (position % body_drop::positions);
    if (!body_drops_.empty()) {
        auto& last = body_drops_.back();
        if (last.message == message_index && last.word == word) {
            last.bits |= bit;
            return;
        }
        if (std::tie(last.message, last.word) > std::tie(message_index, word)) body_drops_sorted_ = false;
    }
    body_drops_.push_back({message_index, word, bit});
}

std::span<const tree_edits::body_drop> tree_edits::body_drops() const {
    if (!body_drops_sorted_) {
        // Rows of one (message, word) added apart become one, their bits joined.
        const auto key = [](const body_drop& d) { return std::tie(d.message, d.word); };
        std::stable_sort(body_drops_.begin(), body_drops_.end(),
                         [&](const body_drop& a, const body_drop& b) { return key(a) < key(b); });
        std::size_t kept = 0;
        for (std::size_t i = 0; i < body_drops_.size(); ++i) {
            if (kept > 0 && key(body_drops_[kept - 1]) == key(body_drops_[i])) body_drops_[kept - 1].bits |= body_drops_[i].bits;
            else body_drops_[kept++] = body_drops_[i];
        }
        body_drops_.resize(kept);
        body_drops_sorted_ = true;
    }
    return body_drops_;
}

std::span<const tree_edits::body_drop> tree_edits::body_drops(std::uint32_t message_index) const {
    const auto all = body_drops();
    const auto [first, last] = std::equal_range(all.begin(), all.end(), body_drop{message_index, 0, 0},
                                                [](const body_drop& a, const body_drop& b) { return a.message < b.message; });
    return {first, last};
}

void tree_edits::reserve(std::size_t insertions, std::size_t new_fields, std::size_t labels, std::size_t body_drops,
                         std::size_t pool_bytes) {
    pool_.reserve(pool_.size() + pool_bytes);
    body_drops_.reserve(body_drops_.size() + body_drops);
    insertions_.reserve(insertions_.size() + insertions);
    fields_.reserve(fields_.size() + new_fields);
    labels_.reserve(labels_.size() + labels);
}

void tree_edits::push_insertion(std::uint32_t message_index, std::uint32_t position, std::uint32_t what) {
    const auto order = static_cast<std::uint32_t>(insertions_.size());
    if (!insertions_.empty()) {
        const auto& last = insertions_.back();
        if (std::tie(last.message, last.position) > std::tie(message_index, position)) sorted_ = false;
    }
    insertions_.push_back({message_index, position, order, what});
}

void tree_edits::insert(std::uint32_t message_index, std::uint32_t position, new_field field) {
    push_insertion(message_index, position, static_cast<std::uint32_t>(fields_.size()));
    fields_.push_back(field);
}

std::uint32_t tree_edits::add_shared(new_field field) {
    fields_.push_back(field);
    return static_cast<std::uint32_t>(fields_.size() - 1);
}

void tree_edits::insert_shared(std::uint32_t message_index, std::uint32_t position, std::uint32_t shared) {
    push_insertion(message_index, position, shared);
}

void tree_edits::insert_external(std::uint32_t message_index, std::uint32_t position, std::uint32_t record) {
    push_insertion(message_index, position, record | external_bit);
}

void tree_edits::insert_converted(std::uint32_t message_index, std::uint32_t position, std::uint32_t number,
                                  float_conversion conversion) {
    // One kind per (number, conversion): a convert run asks for one, whatever the tensors.
    const converted_field kind{number, conversion};
    auto found = std::find(converted_.begin(), converted_.end(), kind);
    if (found == converted_.end()) found = converted_.insert(converted_.end(), kind);
    push_insertion(message_index, position, static_cast<std::uint32_t>(found - converted_.begin()) | converted_bit);
}

void tree_edits::insert_inlined(std::uint32_t message_index, std::uint32_t position, std::uint32_t record, std::uint32_t check) {
    push_insertion(message_index, position, record | inlined_bits);
    if (check == io::no_check) return;
    if (!inlined_checks_.empty() && inlined_checks_.back().first > record) inlined_checks_sorted_ = false;
    inlined_checks_.emplace_back(record, check);
}

void tree_edits::inline_body(const message_tree& tree, std::uint32_t message_index, std::uint32_t record) {
    if (!inlined_table_) throw std::logic_error("tree_edits::inline_body: no table of inlined values (set_inlined_values)");
    if (tree.stores_fields(message_index)) {
        const auto positions = inlined_table_(record).dropped_positions;
        if (positions == 0) throw std::logic_error("tree_edits::inline_body: the value names no field to replace");
        for (auto bits = positions; bits != 0; bits &= bits - 1)
            drop(tree.at(message_index).first_field + static_cast<std::uint32_t>(std::countr_zero(bits)));
        insert_inlined(message_index, static_cast<std::uint32_t>(std::countr_zero(positions)), record);
        return;
    }
    if (!inlined_bodies_.empty() && inlined_bodies_.back().message >= message_index) inlined_bodies_sorted_ = false;
    inlined_bodies_.push_back({message_index, record});
}

void tree_edits::reserve_inlined_bodies(std::size_t bodies) { inlined_bodies_.reserve(inlined_bodies_.size() + bodies); }

std::span<const tree_edits::inlined_body> tree_edits::inlined_bodies() const {
    if (!inlined_bodies_sorted_) {
        // A message named twice keeps its first row (stable: call order decides).
        const auto by_message = [](const inlined_body& a, const inlined_body& b) { return a.message < b.message; };
        std::stable_sort(inlined_bodies_.begin(), inlined_bodies_.end(), by_message);
        const auto same = [](const inlined_body& a, const inlined_body& b) { return a.message == b.message; };
        inlined_bodies_.erase(std::unique(inlined_bodies_.begin(), inlined_bodies_.end(), same), inlined_bodies_.end());
        inlined_bodies_sorted_ = true;
    }
    return inlined_bodies_;
}

std::uint32_t tree_edits::inlined_check(const insertion& i) const noexcept {
    if (inlined_checks_.empty()) return io::no_check;
    if (!inlined_checks_sorted_) {
        std::sort(inlined_checks_.begin(), inlined_checks_.end());
        inlined_checks_sorted_ = true;
    }
    const auto record = i.what & ~inlined_bits;
    const auto found = std::lower_bound(inlined_checks_.begin(), inlined_checks_.end(), std::make_pair(record, std::uint32_t{0}));
    return found != inlined_checks_.end() && found->first == record ? found->second : io::no_check;
}

std::uint32_t tree_edits::add_external(external_entry entry) {
    externals_.push_back(std::move(entry));
    return static_cast<std::uint32_t>(externals_.size() - 1);
}

external_entry tree_edits::external(const insertion& i) const {
    const auto record = i.what & ~inlined_bits;
    return external_table_ ? external_table_(record) : externals_[record];
}

std::uint64_t tree_edits::encoded_size(const insertion& i) const {
    if (is_inlined(i)) return proto::length_delimited_field_size(number(tensor_field::raw_data), inlined(i).length);
    if (!is_external(i)) return field(i).encoded_size();
    return encoded_size(external(i));
}

std::uint64_t tree_edits::encoded_size(const external_entry& entry) {
    const entry_texts texts(entry);
    std::uint64_t total = proto::tag_size(number(tensor_field::data_location)) + proto::varint_size(external_location);
    for (std::size_t e = 0; e < texts.count; ++e)
        total += proto::length_delimited_field_size(number(tensor_field::external_data),
                                                    entry_size(texts.pairs[e].first, texts.pairs[e].second));
    return total;
}

void tree_edits::encode_external(const insertion& i, std::vector<std::byte>& out) const {
    auto put_varint = [&out](std::uint64_t v) {
        const auto encoded = proto::encode_varint(v);
        out.insert(out.end(), encoded.view().begin(), encoded.view().end());
    };
    auto put_text = [&](string_entry_field f, std::string_view text) {
        put_varint(proto::make_tag(number(f), proto::wire_type::length_delimited));
        put_varint(text.size());
        const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
        out.insert(out.end(), bytes.begin(), bytes.end());
    };
    const entry_texts texts(external(i));
    for (std::size_t e = 0; e < texts.count; ++e) {
        const auto [key, value] = texts.pairs[e];
        put_varint(proto::make_tag(number(tensor_field::external_data), proto::wire_type::length_delimited));
        put_varint(entry_size(key, value));
        put_text(string_entry_field::key, key);
        put_text(string_entry_field::value, value);
    }
    put_varint(proto::make_tag(number(tensor_field::data_location), proto::wire_type::varint));
    put_varint(external_location);
}

new_field tree_edits::converted_slice(std::uint32_t number, std::uint32_t source, std::uint64_t offset, std::uint64_t length,
                                      float_conversion conversion, std::uint32_t check) const {
    auto f = slice(number, source, offset, length, check);
    f.conversion = conversion;
    return f;
}

new_field tree_edits::varint(std::uint32_t number, std::uint64_t value) const {
    new_field f;
    f.number = number;
    f.kind = new_field::payload_kind::varint;
    f.value = value;
    return f;
}

new_field tree_edits::bytes(std::uint32_t number, std::span<const std::byte> payload) {
    new_field f;
    f.number = number;
    f.kind = new_field::payload_kind::bytes;
    f.offset = pool_.size();
    f.length = payload.size();
    pool_.insert(pool_.end(), payload.begin(), payload.end());
    return f;
}

new_field tree_edits::encoded_fields() {
    new_field f;
    f.kind = new_field::payload_kind::encoded;
    f.offset = pool_.size();
    return f;
}

void tree_edits::append_encoded(new_field& fields, std::uint32_t number, std::span<const std::byte> payload) {
    if (fields.kind != new_field::payload_kind::encoded || fields.offset + fields.length != pool_.size())
        throw std::logic_error("tree_edits::append_encoded: the run of fields does not end the pool");
    const auto before = pool_.size();
    // The encodings are kept whole: a view of a temporary one would outlive it.
    const auto tag = proto::encode_varint(proto::make_tag(number, proto::wire_type::length_delimited));
    const auto length = proto::encode_varint(payload.size());
    pool_.insert(pool_.end(), tag.view().begin(), tag.view().end());
    pool_.insert(pool_.end(), length.view().begin(), length.view().end());
    pool_.insert(pool_.end(), payload.begin(), payload.end());
    fields.length += pool_.size() - before;
}

new_field tree_edits::text(std::uint32_t number, std::string_view payload) {
    return bytes(number, std::as_bytes(std::span(payload.data(), payload.size())));
}

new_field tree_edits::slice(std::uint32_t number, std::uint32_t source, std::uint64_t offset, std::uint64_t length,
                            std::uint32_t check) const {
    new_field f;
    f.number = number;
    f.kind = new_field::payload_kind::slice;
    f.source = source;
    f.offset = offset;
    f.length = length;
    f.check = check;
    return f;
}

std::uint32_t tree_edits::add_label(std::string_view name) {
    labels_.push_back(name);
    return static_cast<std::uint32_t>(labels_.size() - 1);
}

std::uint32_t tree_edits::add_check(io::stream_check value) {
    checks_.push_back(std::move(value));
    return static_cast<std::uint32_t>(checks_.size() - 1);
}

std::span<const tree_edits::insertion> tree_edits::insertions() const {
    if (!sorted_) {
        std::sort(insertions_.begin(), insertions_.end(), [](const insertion& a, const insertion& b) {
            return std::tie(a.message, a.position, a.order) < std::tie(b.message, b.position, b.order);
        });
        sorted_ = true;
    }
    return insertions_;
}

}  // namespace onnxstream::onnx
