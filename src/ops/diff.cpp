#include <onnxstream/ops/diff.hpp>

#include "range_hasher.hpp"

#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/tensor_type.hpp>
#include <onnxstream/onnx/typed_data.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
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

// Below this size, a raw tensor's bytes in the .onnx are hashed where the pass over the
// tensors reads its body: no read of their own (their pages were just read), no range in
// the hashing table. At least this large, they are read through hash_ranges (a buffer
// per worker, never the mapping: a weight's pages are not mapped to hash it).
constexpr std::uint64_t hashed_in_pass_below = 64 * 1024;

// A tensor whose values are streamed from a file: where they lie, and which it is.
struct streamed_tensor {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    onnx::source_id source{0};
    onnx::site_id site;

    [[nodiscard]] bool same_range(const streamed_tensor& other) const noexcept {
        return source == other.source && offset == other.offset && length == other.length;
    }
    // By place, so that each file is read forward and tensors sharing their bytes are neighbours.
    friend bool operator<(const streamed_tensor& x, const streamed_tensor& y) noexcept {
        return std::tie(x.source, x.offset, x.length, x.site) < std::tie(y.source, y.offset, y.length, y.site);
    }
};

// Ranges hashed per call of hash_ranges: the table of ranges in memory stays this small
// whatever the number of tensors.
constexpr std::size_t ranges_per_window = 1U << 14;

// A tensor message's digest, its values' hash added (strings have none: their values
// are string_data fields, among the others).
std::uint64_t with_values(std::uint64_t fields_digest, std::uint64_t values) { return hash_pair(fields_digest, values); }

// Releases a model's mapped pages ahead of a walk that moves backward through it (the
// messages' digests, children before their parents), in windows as io::release_behind
// does behind a forward one: what lies past the message the walk is at is read again
// only for an ancestor's own fields (a graph's name...), a few pages read back. As
// tensor_pass, only for a model read on demand.
class release_ahead {
public:
    explicit release_ahead(const onnx::model_file& model) noexcept
        : mapping_(model.file.mapping()), on_(model.reading == onnx::tensor_reading::on_demand), released_(model.file.size()) {}
    release_ahead(const release_ahead&) = delete;
    release_ahead& operator=(const release_ahead&) = delete;
    ~release_ahead() {
        if (on_) mapping_.release(0, released_);
    }

    /// The walk reads nothing at or after `offset` again (but for those few fields).
    void reached(std::uint64_t offset) noexcept {
        if (!on_ || offset >= released_ || released_ - offset < io::release_behind::window) return;
        mapping_.release(offset, released_ - offset);
        released_ = offset;
    }

private:
    const io::mapped_file& mapping_;
    bool on_;
    std::uint64_t released_;
};

// One model, opened and hashed.
struct model_side {
    fs::path path;
    onnx::bound_model bound;
    indexed_vector<onnx::site_id, std::uint64_t> values;  // XXH3 of each tensor's raw little-endian bytes
    std::vector<std::uint64_t> digest;                    // per message

    [[nodiscard]] const onnx::message_tree& tree() const { return bound.model.tree; }
    [[nodiscard]] const onnx::model_file& model() const { return bound.model; }
    // The site of tensor message `m` (sites are in message order).
    [[nodiscard]] onnx::site_id site_of(std::uint32_t m) const {
        const auto& sites = model().sites;
        std::uint32_t low = 0;
        auto high = static_cast<std::uint32_t>(sites.size());
        while (low < high) {
            const auto mid = low + (high - low) / 2;
            if (sites[onnx::site_id{mid}].message < m) low = mid + 1;
            else high = mid;
        }
        return onnx::site_id{low};
    }

    // The canonical entries of one field of `tree` (the model's, or a tensor body read
    // again), appended to `out`.
    void field_entries(const onnx::message_tree& tree, message_kind kind, const onnx::field_entry& f,
                       std::vector<entry>& out) const {
        const auto n = f.number();
        if (f.child != no_index) {
            out.push_back({n, digest[f.child]});
            return;
        }
        const auto payload = tree.payload(f);
        switch (f.type()) {
            case proto::wire_type::varint: out.push_back({n, hash_pair(tag_varint, tree.value(f))}); return;
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
    void field_entries(message_kind kind, const onnx::field_entry& f, std::vector<entry>& out) const {
        field_entries(tree(), kind, f, out);
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

    // The digest of a message of `kind` from its entries (reordered: fields of different
    // numbers in any order, unordered repeated fields in any order, are the same).
    static std::uint64_t digest_of(message_kind kind, std::vector<entry>& entries, std::vector<std::byte>& bytes) {
        const auto by_number = [](const entry& x, const entry& y) { return x.number < y.number; };
        if (entries.size() <= 16) {
            // A tensor's or a node's few fields: an insertion sort, as stable, with no buffer to allocate.
            for (auto it = entries.begin(); it != entries.end(); ++it)
                std::rotate(std::upper_bound(entries.begin(), it, *it, by_number), it, std::next(it));
        } else {
            std::stable_sort(entries.begin(), entries.end(), by_number);
        }
        for (auto it = entries.begin(); it != entries.end();) {
            auto end = std::find_if(it, entries.end(), [&](const entry& e) { return e.number != it->number; });
            if (unordered_field(kind, it->number))
                std::sort(it, end, [](const entry& x, const entry& y) { return x.value < y.value; });
            it = end;
        }
        bytes.assign(1 + entries.size() * 12, std::byte{0});
        bytes[0] = static_cast<std::byte>(kind);
        for (std::size_t i = 0; i < entries.size(); ++i) {
            std::memcpy(bytes.data() + 1 + 12 * i, &entries[i].number, 4);
            std::memcpy(bytes.data() + 5 + 12 * i, &entries[i].value, 8);
        }
        return io::xxh3_of(bytes);
    }

    // The hash of a typed tensor's values as raw bytes, converted a piece at a time (100 MB
    // of packed int64 are never held converted); their encoded bytes when they do not convert.
    [[nodiscard]] std::uint64_t typed_values(const onnx::tensor_handle& handle) const {
        io::xxh3_hasher hasher;
        auto hash = [&hasher](std::span<const std::byte> piece) -> result<void> {
            hasher.update(piece);
            return {};
        };
        if (onnx::typed_to_raw(handle.tree(), *handle, hash, &model().file.mapping())) return hasher.digest();
        io::xxh3_hasher fallback;
        for (const auto index : handle->typed_fields) fallback.update(handle.tree().payload(handle.tree().field(index)));
        return hash_pair(tag_typed_fallback, fallback.digest());
    }

    // The hash of the values of the tensor at `t`, as digest_side made it: from `values`
    // while they are kept, else read again (the walk lists a few tensors: a million
    // hashes are not kept for them). Empty if the bytes no longer read.
    [[nodiscard]] std::optional<std::uint64_t> values_of(onnx::site_id t) const {
        if (!values.empty()) return values[t];
        const auto handle = model().tensor(t);
        if (const auto slice = bound.stored_bytes(t, handle)) {
            io::xxh3_hasher hasher;
            auto read = io::for_each_chunk(*bound.sources()[slice->source.value], slice->offset, slice->length,
                                           [&hasher](std::span<const std::byte> piece) { hasher.update(piece); });
            if (!read) return std::nullopt;
            return hasher.digest();
        }
        if (handle->storage == tensor_storage::typed) return typed_values(handle);
        return io::xxh3_of({});
    }

    // A tensor message's digest but for its values (with_values adds them): storage
    // fields and dims are left out, normalized entries stand for them.
    [[nodiscard]] std::uint64_t tensor_fields_digest(const onnx::tensor_handle& handle, std::vector<entry>& entries,
                                                     std::vector<std::byte>& bytes) const {
        const auto& fields_tree = handle.tree();
        entries.clear();
        for (const auto& f : fields_tree.fields(&fields_tree == &tree() ? handle->message : 0)) {
            if (onnx::holds_tensor_value(f.number()) || f.number() == number(tensor_field::dims)) continue;
            field_entries(fields_tree, message_kind::tensor, f, entries);
        }
        if (!handle->dims.empty()) entries.push_back({number(tensor_field::dims), dims_digest(handle->dims)});
        return digest_of(message_kind::tensor, entries, bytes);
    }

    // What one read of each tensor gives, in one pass in file order (its pages released
    // behind it): each tensor message's digest, and the hash of the values that are at
    // hand (typed, small raw, none), both complete; for the others, streamed from a file,
    // the digest without values and the place of the bytes, returned sorted by place.
    // `at_hand` counts the raw bytes hashed here, `label` names the last such tensor.
    result<std::vector<streamed_tensor>> digest_tensors(const std::atomic<bool>* cancel, std::uint64_t& at_hand,
                                                        std::string_view& label) {
        std::vector<streamed_tensor> streamed;
        std::vector<entry> entries;
        std::vector<std::byte> bytes;
        bool in_order = true;
        onnx::tensor_pass pass(model());
        for (const auto t : model().sites.ids()) {
            if (cancel != nullptr && t.value % 1024 == 0 && cancel->load(std::memory_order_relaxed))
                return failure(error_code::interrupted, "interrupted; nothing was changed");
            const auto m = model().sites[t].message;
            const auto handle = pass.read(t);
            const auto& tensor = *handle;
            digest[m] = tensor_fields_digest(handle, entries, bytes);
            if (const auto slice = bound.stored_bytes(t, handle)) {
                if (slice->source != onnx::bound_model::model_source || slice->length >= hashed_in_pass_below) {
                    const streamed_tensor s{slice->offset, slice->length, slice->source, t};
                    in_order = in_order && (streamed.empty() || !(s < streamed.back()));
                    streamed.push_back(s);
                    continue;
                }
                values[t] = io::xxh3_of(tree().bytes().subspan(slice->offset, slice->length));
                at_hand += slice->length;
                label = tensor.name;
            } else if (tensor.storage == tensor_storage::typed) {
                values[t] = typed_values(handle);
            } else {
                values[t] = io::xxh3_of({});  // empty, strings
            }
            if (tensor.storage != tensor_storage::strings) digest[m] = with_values(digest[m], values[t]);
        }
        if (!in_order) std::sort(streamed.begin(), streamed.end());
        return streamed;
    }

    // Streams the values of `streamed` (sorted by place), each distinct range once, a
    // window of ranges at a time, and completes their digests. Returns the bytes read.
    result<std::uint64_t> hash_streamed(const std::vector<streamed_tensor>& streamed, const range_hash_options& hashing) {
        const auto sources = bound.sources();
        std::uint64_t hashed = 0;
        std::vector<hashed_range> ranges;
        for (std::size_t first = 0; first < streamed.size();) {
            ranges.clear();
            std::size_t end = first;
            for (; end < streamed.size(); ++end) {
                const auto& s = streamed[end];
                if (end > first && s.same_range(streamed[end - 1])) continue;
                // A window ends between ranges, never inside a run of tensors sharing one.
                if (ranges.size() == ranges_per_window) break;
                const auto name = tree().find_text(model().sites[s.site].message, number(tensor_field::name));
                ranges.push_back({sources[s.source.value], s.offset, s.length, name, {}, {}, {}});
            }
            ONNXSTREAM_ASSIGN(const auto bytes, hash_ranges(ranges, range_hash::xxh3, hashing));
            hashed += bytes;
            std::size_t range = 0;
            for (std::size_t i = first; i < end; ++i) {
                if (i > first && !streamed[i].same_range(streamed[i - 1])) ++range;
                if (ranges[range].failed) return failure(*ranges[range].failed);
                const auto t = streamed[i].site;
                values[t] = *ranges[range].xxh3;
                auto& d = digest[model().sites[t].message];
                d = with_values(d, values[t]);
            }
            first = end;
        }
        return hashed;
    }

    // The digest of a message of many fields (a graph of a million nodes or initializers)
    // as digest_of makes it, the same bytes hashed as they come, a field number at a time:
    // no entry per field (28 MB for a million), only the values of an unordered field's
    // group, which are sorted. Empty for a message of more than a few distinct numbers (a
    // pass per number would cost their product): digest_of serves then.
    [[nodiscard]] std::optional<std::uint64_t> large_message_digest(message_kind kind, std::uint32_t m) const {
        constexpr std::size_t max_numbers = 64;
        const auto fields = tree().fields(m);
        std::vector<std::uint32_t> numbers;
        for (const auto& f : fields) {
            const auto n = f.number();
            if (std::find(numbers.begin(), numbers.end(), n) != numbers.end()) continue;
            if (numbers.size() == max_numbers) return std::nullopt;
            numbers.push_back(n);
        }
        std::sort(numbers.begin(), numbers.end());
        io::xxh3_hasher hasher;
        std::array<std::byte, 1 + 12 * 1024> buffer{};
        std::size_t filled = 0;
        buffer[filled++] = static_cast<std::byte>(kind);
        const auto put = [&](const entry& e) {
            if (filled + 12 > buffer.size()) {
                hasher.update(std::span(buffer).first(filled));
                filled = 0;
            }
            std::memcpy(buffer.data() + filled, &e.number, 4);
            std::memcpy(buffer.data() + filled + 4, &e.value, 8);
            filled += 12;
        };
        std::vector<entry> of_field;       // one field's entries (packed numbers make several)
        std::vector<std::uint64_t> group;  // an unordered field's values, to sort
        for (const auto n : numbers) {
            const bool unordered = unordered_field(kind, n);
            group.clear();
            if (unordered)
                group.reserve(static_cast<std::size_t>(
                    std::count_if(fields.begin(), fields.end(), [n](const onnx::field_entry& f) { return f.number() == n; })));
            for (const auto& f : fields) {
                if (f.number() != n) continue;
                of_field.clear();
                field_entries(kind, f, of_field);
                for (const auto& e : of_field) {
                    if (unordered) group.push_back(e.value);
                    else put(e);
                }
            }
            std::sort(group.begin(), group.end());
            for (const auto value : group) put({n, value});
        }
        hasher.update(std::span(buffer).first(filled));
        return hasher.digest();
    }

    // The digests again, of a model opened again after digest_side (the values it hashed
    // kept, the digests let go): each tensor read again, its values not.
    result<void> redigest(const std::atomic<bool>* cancel) {
        digest.assign(tree().messages().size(), 0);
        std::vector<entry> entries;
        std::vector<std::byte> bytes;
        onnx::tensor_pass pass(model());
        for (const auto t : model().sites.ids()) {
            if (cancel != nullptr && t.value % 1024 == 0 && cancel->load(std::memory_order_relaxed))
                return failure(error_code::interrupted, "interrupted; nothing was changed");
            const auto handle = pass.read(t);
            auto& d = digest[model().sites[t].message];
            d = tensor_fields_digest(handle, entries, bytes);
            if (handle->storage != tensor_storage::strings) d = with_values(d, values[t]);
        }
        digest_messages();
        return {};
    }

    // The digests of the other messages, from their fields and their children's digests.
    void digest_messages() {
        const auto messages = tree().messages();
        std::vector<entry> entries;
        std::vector<std::byte> bytes;
        release_ahead ahead(model());
        // Children always follow their parent, so walking backwards sees them first.
        for (auto m = static_cast<std::uint32_t>(messages.size()); m-- > 0;) {
            const auto kind = messages[m].kind;
            if (kind == message_kind::tensor) continue;  // digest_tensors made it
            ahead.reached(tree().payload_range(m).offset);
            constexpr std::size_t many_fields = 4096;
            if (messages[m].field_count > many_fields) {
                if (const auto streamed = large_message_digest(kind, m)) {
                    digest[m] = *streamed;
                    continue;
                }
            }
            entries.clear();
            for (const auto& f : tree().fields(m)) field_entries(kind, f, entries);
            digest[m] = digest_of(kind, entries, bytes);
        }
    }
};

result<model_side> open_side(const fs::path& path, const onnx::open_options& options) {
    model_side side;
    side.path = path;
    // Tensors are read again when needed, not kept (two models of a million tensors would
    // hold 240 MB of tensor_infos), and their bodies are tokenized again when read.
    ONNXSTREAM_ASSIGN(side.bound, onnx::bound_model::open(path, options, {}, onnx::tensor_reading::on_demand));
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
    return side;
}

// Makes one side's digests (tensors first, each read once; then every other message),
// checking its files unchanged afterwards: the digests read the .onnx through its
// mapping, which reads zeros if the file was cut short meanwhile. The progress stage
// spans both sides (`hashing` reports into `event`); its total grows by this side's
// bytes once they are known.
result<void> digest_side(model_side& side, const range_hash_options& hashing, progress_event& event, std::uint64_t& hashed) {
    side.values.assign(side.model().sites.size(), 0);
    side.digest.assign(side.tree().messages().size(), 0);
    std::uint64_t at_hand = 0;
    std::string_view label;
    ONNXSTREAM_ASSIGN(const auto streamed, side.digest_tensors(hashing.cancel, at_hand, label));
    event.total += at_hand;
    for (std::size_t i = 0; i < streamed.size(); ++i)
        if (i == 0 || !streamed[i].same_range(streamed[i - 1])) event.total += streamed[i].length;
    if (at_hand > 0 && hashing.on_bytes) hashing.on_bytes(at_hand, label);
    ONNXSTREAM_ASSIGN(const auto bytes, side.hash_streamed(streamed, hashing));
    hashed += at_hand + bytes;
    side.digest_messages();
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

// The fields of one number in a message, by index in the tree, in file order: a run of
// adjacent ones (a graph's million initializers, written together) as a range, rather
// than 4 bytes a field on each side of the walk; their indices once another field
// breaks the run.
class field_group {
public:
    void add(std::uint32_t index) {
        if (scattered_.empty()) {
            if (count_ == 0) first_ = index;
            if (index == first_ + count_) {
                ++count_;
                return;
            }
            scattered_.reserve(count_ + 1U);
            for (std::uint32_t i = 0; i < count_; ++i) scattered_.push_back(first_ + i);
        }
        scattered_.push_back(index);
    }
    [[nodiscard]] std::size_t size() const noexcept { return scattered_.empty() ? count_ : scattered_.size(); }
    [[nodiscard]] std::uint32_t operator[](std::size_t i) const noexcept {
        return scattered_.empty() ? first_ + static_cast<std::uint32_t>(i) : scattered_[i];
    }

private:
    std::uint32_t first_ = 0;
    std::uint32_t count_ = 0;
    std::vector<std::uint32_t> scattered_;
};

// ---------------------------------------------------------------- naming things

bool printable(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// A field's values, short, for people: `'Relu'`, `3`, `[1, 2, 3]`, `<4096 bytes>`.
std::string describe_values(const model_side& side, message_kind kind, const field_group& field_indices) {
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < field_indices.size(); ++i) {
        const auto index = field_indices[i];
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
        } else if (f.type() == proto::wire_type::length_delimited && kind == message_kind::value_info &&
                   f.number() == onnx::number(onnx::value_info_field::type)) {
            // A TypeProto: its element type and shape, not its size ("<24 bytes> vs <24 bytes>").
            const auto token = side.tree().token(f);
            parts.push_back(onnx::to_text(onnx::read_tensor_type(side.tree().bytes(), token.payload_offset, token.end_offset())));
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
        std::map<std::uint32_t, std::pair<field_group, field_group>> groups;
        const auto first_a = a_.tree().at(ma).first_field;
        const auto first_b = b_.tree().at(mb).first_field;
        for (std::uint32_t i = 0; i < a_.tree().at(ma).field_count; ++i)
            groups[a_.tree().field(first_a + i).number()].first.add(first_a + i);
        for (std::uint32_t i = 0; i < b_.tree().at(mb).field_count; ++i)
            groups[b_.tree().field(first_b + i).number()].second.add(first_b + i);
        for (const auto& [n, fields] : groups) {
            message_kind child{};
            if (onnx::child_kind(kind, n, child)) {
                pair_children(kind, n, fields.first, fields.second);
                continue;
            }
            std::vector<entry> ea;
            std::vector<entry> eb;
            for (std::size_t i = 0; i < fields.first.size(); ++i) a_.field_entries(kind, a_.tree().field(fields.first[i]), ea);
            for (std::size_t i = 0; i < fields.second.size(); ++i) b_.field_entries(kind, b_.tree().field(fields.second[i]), eb);
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
    // Views into the side's bytes.
    static std::string_view name_view(const model_side& side, std::uint32_t m) {
        const auto& tree = side.tree();
        switch (tree.at(m).kind) {
            case message_kind::tensor: return onnx::value_name(tree, side.model().sites[side.site_of(m)]);
            case message_kind::node: {
                const auto name = tree.find_text(m, number(onnx::node_field::name));
                return name.empty() ? tree.find_text(m, number(onnx::node_field::output)) : name;
            }
            case message_kind::attribute: return tree.find_text(m, number(onnx::attribute_field::name));
            case message_kind::value_info: return tree.find_text(m, number(onnx::value_info_field::name));
            case message_kind::string_entry: return tree.find_text(m, number(onnx::string_entry_field::key));
            case message_kind::operator_set: return tree.find_text(m, number(onnx::operator_set_field::domain));
            case message_kind::function: return tree.find_text(m, number(onnx::function_field::name));
            case message_kind::graph: return tree.find_text(m, number(onnx::graph_field::name));
            default: return {};
        }
    }
    static std::string name_of(const model_side& side, std::uint32_t m) { return std::string(name_view(side, m)); }

    // The node a message belongs to, without leaving its graph; no_index when none.
    static std::uint32_t enclosing_node(const model_side& side, std::uint32_t m) {
        for (auto p = m; p != no_index; p = side.tree().at(p).parent) {
            const auto kind = side.tree().at(p).kind;
            if (kind == message_kind::node) return p;
            if (kind == message_kind::graph || kind == message_kind::function || kind == message_kind::model) return no_index;
        }
        return no_index;
    }

    // Releases a side's mapped pages behind a walk in file order (see tensor_pass).
    class releasing {
    public:
        explicit releasing(const model_side& side) noexcept
            : behind_(side.model().file.mapping()), on_(side.model().reading == onnx::tensor_reading::on_demand) {}
        releasing(const releasing&) = delete;
        releasing& operator=(const releasing&) = delete;
        ~releasing() {
            if (on_) behind_.finish(end_);
        }
        void reached(const model_side& side, std::uint32_t m) {
            if (!on_) return;
            const auto offset = side.tree().payload_range(m).offset;
            behind_.reached(offset);
            end_ = std::max(end_, offset);
        }

    private:
        io::release_behind behind_;
        bool on_;
        std::uint64_t end_ = 0;
    };

    // The names of the children held by `fields` (in file order), hashed: what pairing by
    // name keeps of them, 16 bytes a child (a million initializers are no million strings),
    // sorted by hash. Read once, in file order, the mapped pages released behind.
    struct hashed_name {
        std::uint64_t hash = 0;
        std::uint32_t position = 0;  // in `fields`
        friend bool operator<(const hashed_name& x, const hashed_name& y) noexcept {
            return std::tie(x.hash, x.position) < std::tie(y.hash, y.position);
        }
    };
    static std::uint32_t child(const model_side& side, std::uint32_t field_index) { return side.tree().field(field_index).child; }
    static std::vector<hashed_name> hashed_names(const model_side& side, const field_group& fields) {
        std::vector<hashed_name> names(fields.size());
        releasing behind(side);
        for (std::uint32_t i = 0; i < fields.size(); ++i) {
            const auto m = child(side, fields[i]);
            behind.reached(side, m);
            names[i] = {io::xxh3_of(std::as_bytes(std::span(name_view(side, m)))), i};
        }
        std::sort(names.begin(), names.end());
        return names;
    }
    // Whether no two of the names are the same (hashes that agree are checked by name).
    static bool all_distinct(const model_side& side, const field_group& fields, const std::vector<hashed_name>& names) {
        for (std::size_t i = 0; i < names.size(); ++i)
            for (auto j = i + 1; j < names.size() && names[j].hash == names[i].hash; ++j)
                if (name_view(side, child(side, fields[names[i].position])) ==
                    name_view(side, child(side, fields[names[j].position])))
                    return false;
        return true;
    }

    // Whether the children held by `fa` and `fb` have the same names, in order.
    bool same_names(const field_group& fa, const field_group& fb) const {
        if (fa.size() != fb.size()) return false;
        releasing behind_a(a_);
        releasing behind_b(b_);
        for (std::size_t i = 0; i < fa.size(); ++i) {
            const auto ca = child(a_, fa[i]);
            const auto cb = child(b_, fb[i]);
            behind_a.reached(a_, ca);
            behind_b.reached(b_, cb);
            if (name_view(a_, ca) != name_view(b_, cb)) return false;
        }
        return true;
    }

    void pair_children(message_kind kind, std::uint32_t n, const field_group& fa, const field_group& fb) {
        // Names in the same order on both sides (the usual case: a model and an edited copy)
        // pair by position, as they would by name (and do when some repeat).
        if (unordered_field(kind, n) && !same_names(fa, fb)) {
            bool unique = all_distinct(a_, fa, hashed_names(a_, fa));
            const auto names_b = unique ? hashed_names(b_, fb) : std::vector<hashed_name>{};
            unique = unique && all_distinct(b_, fb, names_b);
            if (unique) {
                std::vector<bool> paired(fb.size());
                releasing behind_a(a_);
                releasing behind_b(b_);
                for (std::size_t i = 0; i < fa.size(); ++i) {
                    const auto index = fa[i];
                    const auto ca = child(a_, index);
                    behind_a.reached(a_, ca);
                    const auto name = name_view(a_, ca);
                    const hashed_name key{io::xxh3_of(std::as_bytes(std::span(name))), 0};
                    auto it = std::lower_bound(names_b.begin(), names_b.end(), key);
                    for (; it != names_b.end() && it->hash == key.hash; ++it)
                        if (name_view(b_, child(b_, fb[it->position])) == name) break;
                    if (it == names_b.end() || it->hash != key.hash) {
                        only_in(a_, ca, difference_kind::only_in_a);
                        continue;
                    }
                    const auto cb = child(b_, fb[it->position]);
                    behind_b.reached(b_, cb);
                    paired[it->position] = true;
                    compare(ca, cb);
                }
                for (std::size_t i = 0; i < fb.size(); ++i)
                    if (!paired[i]) only_in(b_, child(b_, fb[i]), difference_kind::only_in_b);
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
        const auto handle_a = a_.model().tensor(a_.site_of(ma));
        const auto handle_b = b_.model().tensor(b_.site_of(mb));
        const auto& ta = *handle_a;
        const auto& tb = *handle_b;
        std::vector<std::string> reasons;
        if (ta.name != tb.name) reasons.push_back("name '" + std::string(ta.name) + "' vs '" + std::string(tb.name) + "'");
        if (ta.data_type != tb.data_type)
            reasons.push_back("type " + onnx::data_type_name(ta.data_type) + " vs " + onnx::data_type_name(tb.data_type));
        if (ta.dims != tb.dims) reasons.push_back("dims " + onnx::to_string(ta.dims) + " vs " + onnx::to_string(tb.dims));
        const auto values_a = a_.values_of(a_.site_of(ma));
        const auto values_b = b_.values_of(b_.site_of(mb));
        if (!values_a || !values_b || *values_a != *values_b) reasons.emplace_back("values differ");
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

    void scalar_differs(std::uint32_t ma, std::uint32_t n, const field_group& fa, const field_group& fb) {
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
    progress_event event{"diff", 0, 0, {}, {}};
    auto add_warnings = [&report](const model_side& side) {
        for (const auto& g : side.bound.data.guesses) {
            report.warnings.push_back(g.what);
            report.warnings.back().message = side.path.string() + ": " + g.what.message;
        }
    };
    // A is digested and its model let go before B is opened: equivalent models (the usual
    // answer) never hold two trees at once. Its root digest and its values stay (8 bytes a
    // tensor); only when the models differ is A opened again, and digested again from
    // those values, for the walk.
    ONNXSTREAM_ASSIGN(auto side_a, open_side(a, options));
    // The stage starts once A is open (its first event may be the caller's cue for anything).
    const auto hashing = hashing_options(options, event);
    ONNXSTREAM_TRY(digest_side(side_a, hashing, event, report.bytes_hashed));
    add_warnings(side_a);
    report.tensors_a = side_a.model().sites.size();
    report.nodes_a = onnx::find_nodes(side_a.tree()).size();
    const auto identity_a = side_a.model().file.identity();
    const auto size_a = side_a.model().file.size();
    const auto messages_a = side_a.tree().messages().size();
    const auto root_a = side_a.digest[0];
    side_a.bound = onnx::bound_model{};
    // Its message digests go too (8 bytes a message): made again from the values if the
    // models differ, without reading a weight again.
    std::vector<std::uint64_t>().swap(side_a.digest);

    ONNXSTREAM_ASSIGN(auto side_b, open_side(b, options));
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
    report.equivalent = root_a == side_b.digest[0];
    if (!report.equivalent) {
        auto values = std::move(side_a.values);
        ONNXSTREAM_ASSIGN(side_a, open_side(a, options));
        if (side_a.model().file.identity() != identity_a || side_a.model().file.size() != size_a ||
            side_a.tree().messages().size() != messages_a || side_a.model().sites.size() != values.size())
            return changed();
        side_a.values = std::move(values);
        ONNXSTREAM_TRY(side_a.redigest(hashing.cancel));
        if (side_a.digest[0] != root_a) return changed();
        // The walk reads again the values of the few tensors it lists (values_of): 16 MB
        // for two models of a million tensors are not held for them.
        side_a.values = {};
        side_b.values = {};
        comparer walk(side_a, side_b, report, options.max_listed);
        walk.compare(0, 0);
        walk.finish();
        // Both sides: the walk read listed tensors' values again, from either side's files.
        ONNXSTREAM_TRY(side_a.bound.check_unchanged());
        ONNXSTREAM_TRY(side_b.bound.check_unchanged());
    }
    return report;
}

}  // namespace onnxstream::ops
