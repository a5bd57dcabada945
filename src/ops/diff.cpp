#include <onnxstream/ops/diff.hpp>

#include "range_hasher.hpp"

#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/typed_data.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using onnx::message_kind;
using onnx::no_index;
using onnx::number;
using onnx::tensor_field;
using onnx::tensor_storage;

const char* to_string(difference_kind kind) noexcept {
    switch (kind) {
        case difference_kind::tensor: return "tensor";
        case difference_kind::node: return "node";
        case difference_kind::only_in_a: return "only_in_a";
        case difference_kind::only_in_b: return "only_in_b";
        case difference_kind::field: return "field";
    }
    return "unknown";
}

namespace {

// A tensor's values enter its digest under this number, which no field uses.
constexpr std::uint32_t values_entry = 0;

// One canonical field value: its number and a hash of its meaning (not its encoding).
struct entry {
    std::uint32_t number = 0;
    std::uint64_t value = 0;
    friend bool operator==(const entry&, const entry&) = default;
};

std::uint64_t hash_pair(std::uint64_t tag, std::uint64_t value) {
    std::array<std::byte, 16> bytes{};
    std::memcpy(bytes.data(), &tag, 8);
    std::memcpy(bytes.data() + 8, &value, 8);
    return io::xxh3_of(bytes);
}

constexpr std::uint64_t tag_varint = 0;
constexpr std::uint64_t tag_fixed = 1;
constexpr std::uint64_t tag_bytes = 2;
constexpr std::uint64_t tag_typed_fallback = 3;

// Repeated fields whose order carries no meaning: they are paired by name when compared,
// so their digest must not depend on their order either.
bool unordered_field(message_kind kind, std::uint32_t n) {
    return (kind == message_kind::graph && n == number(onnx::graph_field::initializer)) ||
           (kind == message_kind::node && n == number(onnx::node_field::attribute)) ||
           (kind == message_kind::function && n == number(onnx::function_field::attribute_proto));
}

std::uint64_t little_endian(std::span<const std::byte> bytes) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) value |= std::to_integer<std::uint64_t>(bytes[i]) << (8 * i);
    return value;
}

// The dims as one entry, hashed as decoded values (packed and unpacked dims agree): a
// tensor of a million dims costs one entry, not a million.
std::uint64_t dims_digest(const onnx::tensor_dims& dims) {
    constexpr std::size_t batch = 256;
    std::array<std::byte, batch * 8> bytes{};
    std::size_t filled = 0;
    std::optional<io::xxh3_hasher> hasher;  // only for dims longer than one batch
    for (const auto d : dims) {
        if (filled == bytes.size()) {
            if (!hasher) hasher.emplace();
            hasher->update(bytes);
            filled = 0;
        }
        std::memcpy(bytes.data() + filled, &d, 8);
        filled += 8;
    }
    const auto rest = std::span<const std::byte>(bytes).first(filled);
    if (!hasher) return hash_pair(tag_varint, io::xxh3_of(rest));
    hasher->update(rest);
    return hash_pair(tag_varint, hasher->digest());
}

// One model, opened and hashed.
struct model_side {
    fs::path path;
    onnx::bound_model bound;
    std::vector<onnx::site_id> tensor_of_message;         // message index -> its site
    indexed_vector<onnx::site_id, std::uint64_t> values;  // XXH3 of each tensor's raw little-endian bytes
    std::vector<std::uint64_t> digest;                    // per message

    [[nodiscard]] const onnx::message_tree& tree() const { return bound.model.tree; }
    [[nodiscard]] const onnx::model_file& model() const { return bound.model; }

    // The canonical entries of one field, appended to `out`. Storage fields of tensors
    // and their dims are left out (the caller adds normalized ones).
    void field_entries(message_kind kind, const onnx::field_entry& f, std::vector<entry>& out) const {
        const auto n = f.number();
        if (f.child != no_index) {
            out.push_back({n, digest[f.child]});
            return;
        }
        const auto payload = tree().payload(f);
        switch (f.type()) {
            case proto::wire_type::varint: out.push_back({n, hash_pair(tag_varint, tree().value(f))}); return;
            case proto::wire_type::fixed32:
            case proto::wire_type::fixed64: out.push_back({n, hash_pair(tag_fixed, little_endian(payload))}); return;
            case proto::wire_type::length_delimited: break;
            default: out.push_back({n, hash_pair(static_cast<std::uint64_t>(f.type()), payload_digest(payload))}); return;
        }
        // Packed repeated numbers compare equal to their unpacked form.
        if (kind == message_kind::attribute && n == number(onnx::attribute_field::floats) && payload.size() % 4 == 0) {
            for (std::size_t i = 0; i < payload.size(); i += 4)
                out.push_back({n, hash_pair(tag_fixed, little_endian(payload.subspan(i, 4)))});
            return;
        }
        if (kind == message_kind::attribute && n == number(onnx::attribute_field::ints)) {
            std::vector<entry> decoded;
            auto rest = payload;
            while (!rest.empty()) {
                const auto v = proto::decode_varint(rest);
                if (!v) break;
                decoded.push_back({n, hash_pair(tag_varint, v->value)});
                rest = rest.subspan(v->size);
            }
            if (rest.empty()) {
                out.insert(out.end(), decoded.begin(), decoded.end());
                return;
            }
        }
        out.push_back({n, hash_pair(tag_bytes, payload_digest(payload))});
    }

    // XXH3 of a payload of the .onnx. A large one (an unknown field of gigabytes) is read
    // with pread through one buffer rather than through the mapping: its file pages are
    // then never mapped into the process, whatever the page cache and its folios do.
    [[nodiscard]] std::uint64_t payload_digest(std::span<const std::byte> payload) const {
        if (payload.size() <= io::read_chunk_size) return io::xxh3_of(payload);
        const auto offset = static_cast<std::uint64_t>(payload.data() - tree().bytes().data());
        io::xxh3_hasher hasher;
        auto read = io::for_each_chunk(model().file, offset, payload.size(),
                                       [&hasher](std::span<const std::byte> piece) { hasher.update(piece); });
        if (read) return hasher.digest();
        // A file cut short meanwhile: check_unchanged reports it once the digests are made.
        return io::xxh3_of(model().file.mapping(), payload);
    }

    void message_entries(std::uint32_t m, std::vector<entry>& out) const {
        const auto kind = tree().at(m).kind;
        for (const auto& f : tree().fields(m)) {
            if (kind == message_kind::tensor &&
                (onnx::holds_tensor_value(f.number()) || f.number() == number(tensor_field::dims)))
                continue;
            field_entries(kind, f, out);
        }
        if (kind == message_kind::tensor) {
            const auto handle = model().tensor(tensor_of_message[m]);
            const auto& tensor = *handle;
            if (!tensor.dims.empty()) out.push_back({number(tensor_field::dims), dims_digest(tensor.dims)});
            if (tensor.storage != tensor_storage::strings) out.push_back({values_entry, values[tensor_of_message[m]]});
        }
        std::stable_sort(out.begin(), out.end(), [](const entry& x, const entry& y) { return x.number < y.number; });
        for (auto it = out.begin(); it != out.end();) {
            auto end = std::find_if(it, out.end(), [&](const entry& e) { return e.number != it->number; });
            if (unordered_field(kind, it->number))
                std::sort(it, end, [](const entry& x, const entry& y) { return x.value < y.value; });
            it = end;
        }
    }

    void compute_digests() {
        const auto messages = tree().messages();
        digest.assign(messages.size(), 0);
        std::vector<entry> entries;
        std::vector<std::byte> bytes;
        // Children always follow their parent, so walking backwards sees them first.
        for (auto m = static_cast<std::uint32_t>(messages.size()); m-- > 0;) {
            entries.clear();
            message_entries(m, entries);
            bytes.assign(1 + entries.size() * 12, std::byte{0});
            bytes[0] = static_cast<std::byte>(messages[m].kind);
            for (std::size_t i = 0; i < entries.size(); ++i) {
                std::memcpy(bytes.data() + 1 + 12 * i, &entries[i].number, 4);
                std::memcpy(bytes.data() + 5 + 12 * i, &entries[i].value, 8);
            }
            digest[m] = io::xxh3_of(bytes);
        }
    }
};

result<model_side> open_side(const fs::path& path, const onnx::resolve_options& data_options) {
    model_side side;
    side.path = path;
    // Tensors are read again when needed, not kept: two models of a million tensors would
    // hold 240 MB of tensor_infos.
    ONNXSTREAM_ASSIGN(side.bound, onnx::bound_model::open(path, data_options, {}, onnx::tensor_reading::on_demand_full_tree));
    // Sizes that do not match the dims still have bytes to compare; anything else is trouble.
    if (const auto* problem = side.bound.data.blocking_problem(true)) {
        auto e = problem->what;
        e.message = path.string() + ": " + e.message;
        if (e.code == error_code::missing_data)
            e = with_remedies(std::move(e),
                              "diff looks for external data beside each model, as merge does without flags; put the file "
                              "there, or merge the model with {0} first",
                              {{remedy::give_data_file, {}}});
        return failure(std::move(e));
    }
    side.tensor_of_message.assign(side.tree().messages().size(), none);
    for (const auto t : side.model().sites.ids()) side.tensor_of_message[side.model().sites[t].message] = t;
    side.values.assign(side.model().sites.size(), 0);
    return side;
}

// Hashes what is in memory (typed values, no values) now; returns the tensors whose
// values are streamed from a file.
std::vector<onnx::site_id> hash_in_memory(model_side& side) {
    const auto& tree = side.tree();
    std::vector<onnx::site_id> streamed;
    for (const auto t : side.model().sites.ids()) {
        const auto handle = side.model().tensor(t);
        const auto& tensor = *handle;
        if (side.bound.stored_bytes(t, handle)) {
            streamed.push_back(t);
        } else if (tensor.storage == tensor_storage::typed) {
            // Typed values live in the .onnx, under 2 GB; converted one tensor at a time.
            if (auto raw = onnx::typed_to_raw(tree, tensor)) {
                side.values[t] = io::xxh3_of(*raw);
            } else {
                io::xxh3_hasher hasher;
                for (const auto index : tensor.typed_fields) hasher.update(tree.payload(tree.field(index)));
                side.values[t] = hash_pair(tag_typed_fallback, hasher.digest());
            }
        } else {
            side.values[t] = io::xxh3_of({});  // empty, strings
        }
    }
    return streamed;
}

// Ranges hashed per call of hash_ranges: the table of ranges in memory stays this small
// whatever the number of tensors.
constexpr std::size_t ranges_per_window = 1U << 14;

// Sorts `streamed` by file and offset, so that each file is read forward and tensors
// sharing their bytes are neighbours; returns the bytes of the distinct ranges. Tensors
// are read again for their slices, so a model already in order (the usual case: raw
// tensors in file order) is only checked; otherwise the slices are sorted once, kept.
std::uint64_t sort_by_place(const model_side& side, std::vector<onnx::site_id>& streamed) {
    auto place_of = [&](onnx::site_id t) {
        const auto slice = *side.bound.stored_bytes(t);
        return std::make_tuple(slice.source, slice.offset, slice.length);
    };
    using place = decltype(place_of(onnx::site_id{}));
    std::uint64_t total = 0;
    std::optional<place> before;
    auto count = [&](const place& here) {
        if (here != before) total += std::get<2>(here);
        before = here;
    };
    bool in_order = true;
    for (std::size_t i = 0; i < streamed.size() && in_order; ++i) {
        const auto here = place_of(streamed[i]);
        in_order = !before || !(here < *before);
        if (in_order) count(here);
    }
    if (in_order) return total;
    std::vector<std::pair<place, onnx::site_id>> keyed;
    keyed.reserve(streamed.size());
    for (const auto t : streamed) keyed.emplace_back(place_of(t), t);
    std::sort(keyed.begin(), keyed.end());
    total = 0;
    before.reset();
    for (std::size_t i = 0; i < keyed.size(); ++i) {
        streamed[i] = keyed[i].second;
        count(keyed[i].first);
    }
    return total;
}

// Streams the values of `streamed` (sorted by sort_by_place), each distinct range once, a
// window of ranges at a time. Returns the bytes read.
result<std::uint64_t> hash_streamed(model_side& side, const std::vector<onnx::site_id>& streamed,
                                    const range_hash_options& hashing) {
    const auto sources = side.bound.sources();
    std::uint64_t hashed = 0;
    std::vector<hashed_range> ranges;
    std::vector<std::uint32_t> range_of;  // per tensor of the window: its range
    for (std::size_t first = 0; first < streamed.size();) {
        ranges.clear();
        range_of.clear();
        std::size_t end = first;
        for (; end < streamed.size(); ++end) {
            const auto handle = side.model().tensor(streamed[end]);
            const auto slice = *side.bound.stored_bytes(streamed[end], handle);
            const auto* file = sources[slice.source.value];
            const bool same = !ranges.empty() && ranges.back().file == file && ranges.back().offset == slice.offset &&
                              ranges.back().length == slice.length;
            if (!same) {
                // A window ends between ranges, never inside a run of tensors sharing one.
                if (ranges.size() == ranges_per_window) break;
                ranges.push_back({file, slice.offset, slice.length, handle->name, {}, {}, {}});
            }
            range_of.push_back(static_cast<std::uint32_t>(ranges.size() - 1));
        }
        ONNXSTREAM_ASSIGN(const auto bytes, hash_ranges(ranges, range_hash::xxh3, hashing));
        hashed += bytes;
        for (std::size_t i = first; i < end; ++i) {
            const auto& range = ranges[range_of[i - first]];
            if (range.failed) return failure(*range.failed);
            side.values[streamed[i]] = *range.xxh3;
        }
        first = end;
    }
    return hashed;
}

// Hashes one side's values. The progress stage spans both sides (`hashing` reports into
// `event`); its total grows by this side's bytes once they are known.
result<std::uint64_t> hash_values(model_side& side, const range_hash_options& hashing, progress_event& event) {
    auto streamed = hash_in_memory(side);
    event.total += sort_by_place(side, streamed);
    return hash_streamed(side, streamed, hashing);
}

// Makes one side's digests (values hashed, then every message), checking its files
// unchanged afterwards: the digests read the .onnx through its mapping, which reads zeros
// if the file was cut short meanwhile.
result<void> digest_side(model_side& side, const range_hash_options& hashing, progress_event& event, std::uint64_t& hashed) {
    ONNXSTREAM_ASSIGN(const auto bytes, hash_values(side, hashing, event));
    hashed += bytes;
    side.compute_digests();
    return side.bound.check_unchanged();
}

result<bool> same_bytes(const io::source_file& a, const io::source_file& b) {
    if (a.identity() == b.identity()) return true;
    if (a.size() != b.size()) return false;
    std::vector<std::byte> right(io::read_chunk_size);
    std::uint64_t done = 0;
    bool same = true;
    auto compare = [&](std::span<const std::byte> left) -> result<bool> {
        const auto other = std::span(right).first(left.size());
        ONNXSTREAM_TRY(b.read_at(done, other));
        done += left.size();
        same = std::memcmp(left.data(), other.data(), left.size()) == 0;
        return same;
    };
    ONNXSTREAM_TRY(io::for_each_chunk(a, 0, a.size(), compare));
    return same;
}

// ---------------------------------------------------------------- naming things

bool printable(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// A field's values, short, for people: `'Relu'`, `3`, `[1, 2, 3]`, `<4096 bytes>`.
std::string describe_values(const model_side& side, message_kind kind, std::span<const std::uint32_t> field_indices) {
    std::vector<std::string> parts;
    for (const auto index : field_indices) {
        if (parts.size() == 4) {
            parts.emplace_back("... (" + std::to_string(field_indices.size()) + " values)");
            break;
        }
        const auto& f = side.tree().field(index);
        const auto payload = side.tree().payload(f);
        if (f.type() == proto::wire_type::varint) {
            parts.push_back(std::to_string(static_cast<std::int64_t>(side.tree().value(f))));
        } else if (f.type() == proto::wire_type::fixed32 && kind == message_kind::attribute) {
            // little_endian() assembles the bits whatever the host's byte order.
            const auto bits = little_endian(payload.first(std::min<std::size_t>(4, payload.size())));
            const auto value = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
            char text[32];
            std::snprintf(text, sizeof text, "%g", static_cast<double>(value));
            parts.emplace_back(text);
        } else if (f.type() == proto::wire_type::length_delimited) {
            const auto text = side.tree().text(f);
            if (text.size() <= 60 && printable(text)) parts.push_back("'" + std::string(text) + "'");
            else parts.push_back("<" + std::to_string(text.size()) + " bytes>");
        } else {
            parts.push_back("<" + std::to_string(payload.size()) + " bytes>");
        }
    }
    if (parts.empty()) return "absent";
    if (parts.size() == 1) return parts.front();
    std::string text = "[";
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
    return text + "]";
}

// ---------------------------------------------------------------- the paired walk

class comparer {
public:
    comparer(const model_side& a, const model_side& b, diff_report& report, std::size_t max_listed)
        : a_(a), b_(b), report_(report), max_listed_(max_listed) {}

    void compare(std::uint32_t ma, std::uint32_t mb) {
        if (a_.digest[ma] == b_.digest[mb]) return;
        const auto kind = a_.tree().at(ma).kind;
        if (kind == message_kind::tensor) {
            tensor_differs(ma, mb);
            return;
        }
        std::map<std::uint32_t, std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>> groups;
        const auto first_a = a_.tree().at(ma).first_field;
        const auto first_b = b_.tree().at(mb).first_field;
        for (std::uint32_t i = 0; i < a_.tree().at(ma).field_count; ++i)
            groups[a_.tree().field(first_a + i).number()].first.push_back(first_a + i);
        for (std::uint32_t i = 0; i < b_.tree().at(mb).field_count; ++i)
            groups[b_.tree().field(first_b + i).number()].second.push_back(first_b + i);
        for (const auto& [n, fields] : groups) {
            message_kind child{};
            if (onnx::child_kind(kind, n, child)) {
                pair_children(kind, n, fields.first, fields.second);
                continue;
            }
            std::vector<entry> ea;
            std::vector<entry> eb;
            for (const auto index : fields.first) a_.field_entries(kind, a_.tree().field(index), ea);
            for (const auto index : fields.second) b_.field_entries(kind, b_.tree().field(index), eb);
            if (ea != eb) scalar_differs(ma, n, fields.first, fields.second);
        }
    }

    void finish() {
        if (report_.differing_tensors + report_.differing_nodes + report_.other_differences > 0) return;
        // The digests differ but no part was found to: say so rather than claim equality.
        ++report_.other_differences;
        report_.differences.push_back({difference_kind::field, "model", "", "model", "the models differ"});
    }

private:
    std::string name_of(const model_side& side, std::uint32_t m) const {
        const auto& tree = side.tree();
        switch (tree.at(m).kind) {
            case message_kind::tensor: {
                const auto t = side.tensor_of_message[m];
                return std::string(onnx::value_name(tree, side.model().sites[t]));
            }
            case message_kind::node: {
                const auto name = tree.find_text(m, number(onnx::node_field::name));
                return std::string(name.empty() ? tree.find_text(m, number(onnx::node_field::output)) : name);
            }
            case message_kind::attribute: return std::string(tree.find_text(m, number(onnx::attribute_field::name)));
            case message_kind::value_info: return std::string(tree.find_text(m, number(onnx::value_info_field::name)));
            case message_kind::string_entry: return std::string(tree.find_text(m, number(onnx::string_entry_field::key)));
            case message_kind::operator_set: return std::string(tree.find_text(m, number(onnx::operator_set_field::domain)));
            case message_kind::function: return std::string(tree.find_text(m, number(onnx::function_field::name)));
            case message_kind::graph: return std::string(tree.find_text(m, number(onnx::graph_field::name)));
            default: return {};
        }
    }

    // The node a message belongs to, without leaving its graph; no_index when none.
    static std::uint32_t enclosing_node(const model_side& side, std::uint32_t m) {
        for (auto p = m; p != no_index; p = side.tree().at(p).parent) {
            const auto kind = side.tree().at(p).kind;
            if (kind == message_kind::node) return p;
            if (kind == message_kind::graph || kind == message_kind::function || kind == message_kind::model) return no_index;
        }
        return no_index;
    }

    void pair_children(message_kind kind, std::uint32_t n, const std::vector<std::uint32_t>& fa,
                       const std::vector<std::uint32_t>& fb) {
        auto child = [](const model_side& side, std::uint32_t index) { return side.tree().field(index).child; };
        if (unordered_field(kind, n)) {
            std::unordered_map<std::string, std::uint32_t> by_name;
            bool unique = true;
            for (const auto index : fb) unique &= by_name.emplace(name_of(b_, child(b_, index)), child(b_, index)).second;
            std::unordered_set<std::string> names_a;
            for (const auto index : fa) unique &= names_a.insert(name_of(a_, child(a_, index))).second;
            if (unique) {
                for (const auto index : fa) {
                    const auto ca = child(a_, index);
                    const auto it = by_name.find(name_of(a_, ca));
                    if (it == by_name.end()) {
                        only_in(a_, ca, difference_kind::only_in_a);
                        continue;
                    }
                    compare(ca, it->second);
                    by_name.erase(it);
                }
                for (const auto index : fb) {
                    const auto cb = child(b_, index);
                    if (by_name.contains(name_of(b_, cb))) only_in(b_, cb, difference_kind::only_in_b);
                }
                return;
            }
        }
        const auto common = std::min(fa.size(), fb.size());
        for (std::size_t i = 0; i < common; ++i) compare(child(a_, fa[i]), child(b_, fb[i]));
        for (std::size_t i = common; i < fa.size(); ++i) only_in(a_, child(a_, fa[i]), difference_kind::only_in_a);
        for (std::size_t i = common; i < fb.size(); ++i) only_in(b_, child(b_, fb[i]), difference_kind::only_in_b);
    }

    bool listing(std::uint64_t& counter) {
        ++counter;
        return counter <= max_listed_;
    }

    void tensor_differs(std::uint32_t ma, std::uint32_t mb) {
        if (!listing(report_.differing_tensors)) return;
        const auto handle_a = a_.model().tensor(a_.tensor_of_message[ma]);
        const auto handle_b = b_.model().tensor(b_.tensor_of_message[mb]);
        const auto& ta = *handle_a;
        const auto& tb = *handle_b;
        std::vector<std::string> reasons;
        if (ta.name != tb.name) reasons.push_back("name '" + std::string(ta.name) + "' vs '" + std::string(tb.name) + "'");
        if (ta.data_type != tb.data_type)
            reasons.push_back("type " + onnx::data_type_name(ta.data_type) + " vs " + onnx::data_type_name(tb.data_type));
        if (ta.dims != tb.dims) reasons.push_back("dims " + onnx::to_string(ta.dims) + " vs " + onnx::to_string(tb.dims));
        if (a_.values[a_.tensor_of_message[ma]] != b_.values[b_.tensor_of_message[mb]]) reasons.emplace_back("values differ");
        if (reasons.empty()) reasons.emplace_back("other fields differ (doc_string, metadata or strings)");
        std::string detail;
        for (const auto& r : reasons) detail += (detail.empty() ? "" : "; ") + r;
        report_.differences.push_back({difference_kind::tensor, "tensor", name_of(a_, ma), a_.tree().path(ma), detail});
    }

    void node_differs(std::uint32_t node_a, const std::string& detail) {
        if (!counted_nodes_.insert(node_a).second) return;
        if (!listing(report_.differing_nodes)) return;
        const auto op = std::string(a_.tree().find_text(node_a, number(onnx::node_field::op_type)));
        report_.differences.push_back(
            {difference_kind::node, "node", name_of(a_, node_a), a_.tree().path(node_a), "(" + op + ") " + detail});
    }

    void scalar_differs(std::uint32_t ma, std::uint32_t n, const std::vector<std::uint32_t>& fa,
                        const std::vector<std::uint32_t>& fb) {
        const auto kind = a_.tree().at(ma).kind;
        const auto field = onnx::field_name(kind, n);
        std::string detail = field + " " + describe_values(a_, kind, fa) + " vs " + describe_values(b_, kind, fb);
        if (kind == message_kind::attribute) detail = "attribute '" + name_of(a_, ma) + "' " + detail;
        if (const auto node = enclosing_node(a_, ma); node != no_index) {
            node_differs(node, detail);
            return;
        }
        if (!listing(report_.other_differences)) return;
        report_.differences.push_back({difference_kind::field, field, name_of(a_, ma), a_.tree().path(ma) + "." + field, detail});
    }

    void only_in(const model_side& side, std::uint32_t m, difference_kind kind) {
        const auto message = side.tree().at(m).kind;
        const char* which = kind == difference_kind::only_in_a ? "only in A" : "only in B";
        if (message == message_kind::tensor) {
            if (listing(report_.differing_tensors))
                report_.differences.push_back({kind, "tensor", name_of(side, m), side.tree().path(m), which});
            return;
        }
        if (message == message_kind::node) {
            if (listing(report_.differing_nodes)) {
                const auto op = std::string(side.tree().find_text(m, number(onnx::node_field::op_type)));
                report_.differences.push_back({kind, "node", name_of(side, m), side.tree().path(m), "(" + op + ") " + which});
            }
            return;
        }
        const auto parent = side.tree().at(m).parent;
        const auto field = onnx::field_name(side.tree().at(parent).kind,
                                            side.tree().field(side.tree().at(m).parent_field).number());
        const auto name = name_of(side, m);
        const std::string detail = field + (name.empty() ? "" : " '" + name + "'") + " " + which;
        // An attribute (or anything else inside a node) present on one side: the node differs.
        if (const auto node = enclosing_node(side, parent); node != no_index) {
            if (&side == &a_) {
                node_differs(node, detail);
            } else if (counted_nodes_b_.insert(node).second && listing(report_.differing_nodes)) {
                const auto op = std::string(side.tree().find_text(node, number(onnx::node_field::op_type)));
                report_.differences.push_back(
                    {difference_kind::node, "node", name_of(side, node), side.tree().path(node), "(" + op + ") " + detail});
            }
            return;
        }
        if (listing(report_.other_differences)) report_.differences.push_back({kind, field, name, side.tree().path(m), detail});
    }

    const model_side& a_;
    const model_side& b_;
    diff_report& report_;
    std::size_t max_listed_;
    std::unordered_set<std::uint32_t> counted_nodes_;    // nodes of A already counted
    std::unordered_set<std::uint32_t> counted_nodes_b_;  // nodes of B counted through a part only B has
};

}  // namespace

result<diff_report> diff(const fs::path& a, const fs::path& b, const diff_options& options) {
    diff_report report;
    report.a = a;
    report.b = b;
    progress_event event{"diff", 0, 0, {}};
    auto add_warnings = [&report](const model_side& side) {
        for (const auto& g : side.bound.data.guesses) {
            report.warnings.push_back(g.what);
            report.warnings.back().message = side.path.string() + ": " + g.what.message;
        }
    };
    // A is digested and its model let go before B is opened: equivalent models (the usual
    // answer) never hold two trees at once. Its digests and values stay (8 bytes a message
    // and a tensor); only when the models differ is A opened again, for the walk.
    ONNXSTREAM_ASSIGN(auto side_a, open_side(a, options.data));
    // The stage starts once A is open (its first event may be the caller's cue for anything).
    const auto hashing = hashing_options(options, event);
    ONNXSTREAM_TRY(digest_side(side_a, hashing, event, report.bytes_hashed));
    add_warnings(side_a);
    report.tensors_a = side_a.model().sites.size();
    report.nodes_a = onnx::find_nodes(side_a.tree()).size();
    const auto identity_a = side_a.model().file.identity();
    const auto size_a = side_a.model().file.size();
    const auto messages_a = side_a.tree().messages().size();
    side_a.bound = onnx::bound_model{};
    side_a.tensor_of_message = {};

    ONNXSTREAM_ASSIGN(auto side_b, open_side(b, options.data));
    ONNXSTREAM_TRY(digest_side(side_b, hashing, event, report.bytes_hashed));
    add_warnings(side_b);
    report.tensors_b = side_b.model().sites.size();
    report.nodes_b = onnx::find_nodes(side_b.tree()).size();
    // A, opened again, must be the file that was digested.
    auto changed = [&a] {
        return failure(error_code::io, a.string() + " changed while diff read it", "run diff again once it is complete");
    };
    {
        ONNXSTREAM_ASSIGN(const auto file_a, io::source_file::open(a, false));
        if (file_a.identity() != identity_a || file_a.size() != size_a) return changed();
        ONNXSTREAM_ASSIGN(report.byte_identical, same_bytes(file_a, side_b.model().file));
    }
    report.equivalent = side_a.digest[0] == side_b.digest[0];
    if (!report.equivalent) {
        auto digest = std::move(side_a.digest);
        auto values = std::move(side_a.values);
        ONNXSTREAM_ASSIGN(side_a, open_side(a, options.data));
        if (side_a.model().file.identity() != identity_a || side_a.model().file.size() != size_a ||
            side_a.tree().messages().size() != messages_a)
            return changed();
        side_a.digest = std::move(digest);
        side_a.values = std::move(values);
        comparer walk(side_a, side_b, report, options.max_listed);
        walk.compare(0, 0);
        walk.finish();
        ONNXSTREAM_TRY(side_a.bound.check_unchanged());
    }
    return report;
}

}  // namespace onnxstream::ops
