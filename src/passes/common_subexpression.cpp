#include <onnxstream/passes/common_subexpression.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/passes/identity_removal.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <compare>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace onnxstream::passes {

bool is_nondeterministic(std::string_view op) noexcept {
    static constexpr std::array<std::string_view, 6> ops{"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                                         "RandomUniformLike", "Multinomial",   "Bernoulli"};
    return std::find(ops.begin(), ops.end(), op) != ops.end();
}

namespace {

// Attributes larger than this are compared by size and bytes, not hashed into the key.
constexpr std::uint64_t hashed_attribute_limit = 4096;
constexpr std::uint64_t sample_bytes = 4096;

struct attribute_bytes {
    std::string_view name;
    std::span<const std::byte> payload;
};

std::vector<attribute_bytes> attributes_of(const graph_model& model, node_id n) {
    std::vector<attribute_bytes> out;
    const auto& tree = model.tree();
    for (const auto m : model.attribute_messages(n)) {
        const auto range = tree.payload_range(m);
        out.push_back(
            {tree.find_text(m, onnx::number(onnx::attribute_field::name)), tree.bytes().subspan(range.offset, range.length)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
}

bool same_attributes(const std::vector<attribute_bytes>& a, const std::vector<attribute_bytes>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].name != b[i].name || a[i].payload.size() != b[i].payload.size()) return false;
        if (!a[i].payload.empty() && std::memcmp(a[i].payload.data(), b[i].payload.data(), a[i].payload.size()) != 0)
            return false;
    }
    return true;
}

// A 64-bit key and a position in a scope's list, in 12 bytes (two 32-bit halves keep the
// alignment at 4); ordered by key, then position.
struct keyed_position {
    std::uint32_t key_high = 0;
    std::uint32_t key_low = 0;
    std::uint32_t position = 0;

    static keyed_position of(std::uint64_t key, std::uint32_t position) {
        return {static_cast<std::uint32_t>(key >> 32U), static_cast<std::uint32_t>(key), position};
    }
    [[nodiscard]] bool same_key(const keyed_position& other) const {
        return key_high == other.key_high && key_low == other.key_low;
    }
    auto operator<=>(const keyed_position&) const = default;
};
static_assert(sizeof(keyed_position) == 12);

// The nodes merge_nodes has kept in one scope, by the hash of their key: an open-addressing
// table of chains, at most half full (each chain takes one slot), doubled as it fills. A
// slot holds its chain's last entry, whose `next` is the first: a chain is a ring, walked
// from its first entry, so the nodes come in the order they were added. 16 bytes per node
// and 8 to 16 per slot pair, where a map of string keys took ~140; and only the nodes that
// may have a duplicate are added (cse_run::may_have_duplicate), which in most graphs is few.
class node_table {
public:
    // Calls `visit(n)` for each node added with `hash`, in order, while it returns true.
    template <class Visit>
    void visit(std::uint64_t hash, Visit&& visit) const {
        if (slots_.empty()) return;
        const auto last = slots_[slot_of(hash)];
        if (last == no_entry) return;
        for (auto k = entries_[last].next;; k = entries_[k].next)
            if (!visit(entries_[k].node) || k == last) return;
    }

    // Adds `n` at the end of `hash`'s chain.
    void add(std::uint64_t hash, node_id n) {
        if (2 * (entries_.size() + 1) > slots_.size()) grow();
        const auto slot = slot_of(hash);
        const auto k = static_cast<std::uint32_t>(entries_.size());
        const auto last = slots_[slot];
        entries_.push_back({.hash = hash, .node = n, .next = last == no_entry ? k : entries_[last].next});
        if (last != no_entry) entries_[last].next = k;
        slots_[slot] = k;
    }

private:
    static constexpr std::uint32_t no_entry = ~std::uint32_t{0};
    struct entry {
        std::uint64_t hash = 0;
        node_id node = none;
        std::uint32_t next = no_entry;
    };

    // The slot of `hash`'s chain, or the empty slot where it would go.
    [[nodiscard]] std::size_t slot_of(std::uint64_t hash) const {
        const auto mask = slots_.size() - 1;
        auto i = static_cast<std::size_t>(hash) & mask;
        while (slots_[i] != no_entry && entries_[slots_[i]].hash != hash) i = (i + 1) & mask;
        return i;
    }

    // Twice the slots; each chain moves whole (its slot names its last entry).
    void grow() {
        std::vector<std::uint32_t> old(std::max<std::size_t>(16, 2 * slots_.size()), no_entry);
        old.swap(slots_);
        for (const auto last : old)
            if (last != no_entry) slots_[slot_of(entries_[last].hash)] = last;
    }

    std::vector<std::uint32_t> slots_;
    std::vector<entry> entries_;
};

class cse_run {
public:
    explicit cse_run(pass_context& context)
        : context_(context), model_(context.model), held_index_(context.index()), index_(*held_index_) {}

    std::uint64_t run() {
        for (const auto s : model_.scopes.ids()) {
            if (model_.scopes[s].removed) continue;
            merge_nodes(s);
            merge_initializers(s);
        }
        model_.compact();
        return removed_;
    }

private:
    value_id find(value_id v) const {
        while (v != none) {
            const auto it = replaced_.find(v);
            if (it == replaced_.end()) break;
            v = it->second;
        }
        return v;
    }

    name_id name_of(value_id v) const {
        const auto it = renamed_.find(v);
        return it != renamed_.end() ? it->second : index_.at(v).name;
    }

    bool eligible(node_id n) const {
        const auto& nd = model_.nodes[n];
        if (nd.outputs.empty() || !nd.subgraphs().empty()) return false;
        if (!nd.domain().empty() && nd.domain() != "ai.onnx.ml") return false;
        if (is_nondeterministic(nd.op_type())) return false;
        if (nd.op_type() == "Dropout" && !is_inference_dropout(model_, index_, context_.reader, n)) return false;
        for (const auto& fn : model_.functions)
            if (!fn.removed && fn.name == nd.op_type() && fn.domain == nd.domain()) return false;
        for (std::size_t k = 0; k < nd.outputs.size(); ++k) {
            const auto v = index_.output(n, k);
            if (v != none && (index_.at(v).pinned || touched_.contains(v))) return false;
        }
        return true;
    }

    // The key two nodes must share to be merged, hashed: op, domain, overload, input values,
    // which outputs are used, attribute names and sizes (and the hashes of small ones).
    // Built in one reused buffer: no string per node is kept.
    std::uint64_t key_of(node_id n, const std::vector<attribute_bytes>& attributes) {
        const auto& nd = model_.nodes[n];
        auto& key = key_buffer_;
        key.clear();
        key.append(nd.op_type()).append(1, '\0').append(nd.domain()).append(1, '\0').append(nd.overload()).append(1, '\0');
        for (std::size_t k = 0; k < nd.inputs.size(); ++k)
            key.append(std::to_string(find(index_.input(n, k)).value)).append(1, ',');
        key += '|';
        for (const auto o : nd.outputs) key += o == empty_name ? '0' : '1';
        key += '|';
        for (const auto& a : attributes) {
            key.append(a.name).append(1, ':').append(std::to_string(a.payload.size()));
            if (a.payload.size() <= hashed_attribute_limit) key.append(1, ':').append(std::to_string(io::xxh3_of(a.payload)));
            key += ';';
        }
        return io::xxh3_of(std::as_bytes(std::span(key)));
    }

    // What the hash of key_of stands for, compared whole: two keys that hash alike are the
    // same key unless these differ (the attributes are compared byte for byte apart).
    bool same_key(node_id a, node_id b) const {
        const auto& x = model_.nodes[a];
        const auto& y = model_.nodes[b];
        if (x.op != y.op || x.overload() != y.overload()) return false;
        if (x.inputs.size() != y.inputs.size() || x.outputs.size() != y.outputs.size()) return false;
        for (std::size_t k = 0; k < x.inputs.size(); ++k)
            if (find(index_.input(a, k)) != find(index_.input(b, k))) return false;
        for (std::size_t k = 0; k < x.outputs.size(); ++k)
            if ((x.outputs[k] == empty_name) != (y.outputs[k] == empty_name)) return false;
        return true;
    }

    // Makes node `later` a duplicate of `first`; false when its outputs cannot move.
    bool merge(node_id first, node_id later) {
        // Copies: add_node below may move the node list.
        const auto scope = model_.nodes[later].scope;
        const auto outputs = model_.nodes[later].outputs.size();
        struct step {
            value_id from, to;
            bool rename_survivor = false;
            bool identity = false;
        };
        std::vector<step> steps;
        for (std::size_t k = 0; k < outputs; ++k) {
            const auto vb = index_.output(later, k);
            const auto va = index_.output(first, k);
            if (vb == none) continue;
            // The same value: both nodes write one name, which a valid graph never does (the
            // index keeps one value of it). Replacing it by itself would leave a loop in
            // replaced_ that find() never leaves (found by fuzz_graph).
            if (va == none || va == vb || touched_.contains(va)) return false;
            const bool b_out = is_interface_output(model_, index_, vb);
            const bool a_out = is_interface_output(model_, index_, va);
            if (!b_out) {
                if (!can_replace_uses(model_, index_, vb, va)) return false;
                steps.push_back({.from = vb, .to = va});
            } else if (!a_out) {
                // Consumers rewired to the survivor earlier in this run are not in the index.
                if (targets_.contains(va) || !can_replace_uses(model_, index_, va, vb)) return false;
                steps.push_back({.from = vb, .to = va, .rename_survivor = true});
            } else {
                steps.push_back({.from = vb, .to = va, .identity = true});
            }
        }
        for (const auto& st : steps) {
            if (st.identity) {
                model_.add_node(scope, later, "Identity", {name_of(st.to)}, {index_.at(st.from).name}, {});
            } else if (st.rename_survivor) {
                // The later node's name is a graph output: the survivor computes it under that name.
                const auto name = index_.at(st.from).name;
                replace_uses(model_, index_, st.to, name);
                model_.set_output(first, index_.at(st.to).slot, name);
                renamed_[st.to] = name;
                touched_.insert(st.to);
            } else {
                replace_uses(model_, index_, st.from, name_of(st.to));
                targets_.insert(st.to);
            }
            replaced_[st.from] = st.to;
            receivers_.insert(st.to);
            touched_.insert(st.from);
        }
        return true;
    }

    // Whether a node visited later may have the same key as `n`: only then does `n` go into
    // the table. A duplicate reads the same first input value r (after the replacements of
    // this run), so r must have another consumer, or gain one: already (a value replaced by
    // r), or later, which takes r's producer being in the table (only a table node is merged
    // into) or not visited yet. Leaving out a node that fails this changes nothing: no later
    // node could match it. In a chain of single-consumer values no node passes, so the
    // table of a million-node graph stays empty.
    bool may_have_duplicate(node_id n) const {
        const auto& nd = model_.nodes[n];
        if (nd.inputs.empty()) return true;
        const auto r = find(index_.input(n, 0));
        if (r == none || receivers_.contains(r)) return true;
        std::size_t consumers = 0;  // counted up to two: a value may have a million
        for (const auto& u : index_.uses(r))
            if (u.node != none && ++consumers == 2) return true;
        const auto p = index_.producer(r);
        return p != none && (!visited_[p.value] || kept_[p.value]);
    }

    void merge_nodes(scope_id s) {
        node_table seen;
        // The nodes listed now: merge() may add Identity nodes to the list.
        model_.for_each_listed_node(s, [&](node_id n) {
            if (n.value < visited_.size()) visited_[n.value] = true;
            if (!model_.node_live(n) || !eligible(n)) return;
            // A node with no possible duplicate later has none earlier either: one would read
            // its first input value too, which then has another consumer or is a receiver.
            // Neither its key nor a lookup is needed (a million in a chain of Relus).
            if (!may_have_duplicate(n)) return;
            const auto attributes = attributes_of(model_, n);
            const auto hash = key_of(n, attributes);
            bool merged = false;
            seen.visit(hash, [&](node_id c) {
                if (!same_key(c, n) || !same_attributes(attributes_of(model_, c), attributes) ||
                    !std::ranges::equal(model_.nodes[c].set_attributes(), model_.nodes[n].set_attributes()))
                    return true;
                if (!merge(c, n)) return false;
                finding f;
                f.kind = finding_kind::duplicate_node;
                f.scope = model_.scope_path(s);
                f.op_type = model_.nodes[n].op_type();
                f.names = {model_.node_label(n), model_.node_label(c)};
                f.nodes = 1;
                f.detail = "same as " + model_.node_label(c);
                context_.findings.add(std::move(f));
                model_.remove_node(n);
                ++removed_;
                merged = true;
                return false;
            });
            if (!merged) {
                seen.add(hash, n);
                if (n.value < kept_.size()) kept_[n.value] = true;
            }
        });
    }

    // A cheap fingerprint: the first and last few KiB. Tensors that differ almost always
    // differ there, so whole tensors are read only when these match.
    // A tensor fold-constants computed: its bytes are in memory, and small. A scaled one
    // (a BatchNormalization folded into them) holds its base, not its bytes.
    bool folded(tensor_id t) const {
        return model_.tensors[t].site == none && model_.computed(t) != nullptr && model_.computed(t)->values.has_bytes &&
               !model_.computed(t)->values.scaled;
    }
    std::uint64_t hash_bytes(tensor_id t) const {
        io::xxh3_hasher hasher;
        hasher.update(model_.computed(t)->values.bytes);
        return hasher.digest();
    }

    std::optional<std::uint64_t> sample_of(tensor_id t) const {
        const auto& x = model_.tensors[t];
        if (folded(t)) {  // the same fingerprint as below, from the bytes in memory
            const std::span<const std::byte> bytes = model_.computed(t)->values.bytes;
            const auto n = std::min<std::size_t>(bytes.size(), sample_bytes);
            io::xxh3_hasher hasher;
            hasher.update(bytes.first(n));
            hasher.update(bytes.last(n));
            return hasher.digest();
        }
        if (x.site == none || !context_.reader.readable(x.site)) return std::nullopt;
        const auto size = model_.tensor_bytes(t);
        auto head = context_.reader.read_range(x.site, 0, sample_bytes);
        auto tail = context_.reader.read_range(x.site, size > sample_bytes ? size - sample_bytes : 0, sample_bytes);
        if (!head || !tail) return std::nullopt;
        io::xxh3_hasher hasher;
        hasher.update(*head);
        hasher.update(*tail);
        return hasher.digest();
    }

    std::optional<std::uint64_t> hash_of(tensor_id t) const {
        const auto& x = model_.tensors[t];
        if (folded(t)) return hash_bytes(t);
        if (x.site == none || !context_.reader.readable(x.site)) return std::nullopt;
        io::xxh3_hasher hasher;
        if (!context_.reader.for_each_chunk(x.site, std::size_t{1} << 20,
                                            [&](std::span<const std::byte> piece) { hasher.update(piece); }))
            return std::nullopt;
        return hasher.digest();
    }

    bool same_bytes(tensor_id a, tensor_id b) const {
        if (folded(a) || folded(b)) {
            const auto left = context_.reader.tensor_bytes(model_, a);
            const auto right = context_.reader.tensor_bytes(model_, b);
            return left && right && *left == *right;
        }
        // Compared in pieces: two large tensors are never both in memory.
        std::vector<std::byte> left;
        if (!context_.reader.for_each_chunk(model_.tensors[a].site, std::size_t{1} << 20, [&](std::span<const std::byte> piece) {
                left.insert(left.end(), piece.begin(), piece.end());
            }))
            return false;
        std::uint64_t offset = 0;
        bool equal = true;
        if (!context_.reader.for_each_chunk(model_.tensors[b].site, std::size_t{1} << 20, [&](std::span<const std::byte> piece) {
                if (!equal || offset + piece.size() > left.size() ||
                    std::memcmp(left.data() + offset, piece.data(), piece.size()) != 0)
                    equal = false;
                offset += piece.size();
            }))
            return false;
        return equal && offset == left.size();
    }

    // Identical initializers, found in three rounds that each narrow the candidates: same
    // type and dims, same sample (sample_of), same hash of every byte; then compared byte
    // for byte. The first two rounds share one sorted array of 8 bytes per candidate, the
    // third has 12 bytes per candidate left, not a map node per tensor: a scope may hold a
    // million initializers. Candidates are visited
    // shape by shape (in the order vectors of the dims sort in), then by hash, each set
    // of alike ones in list order: the order the findings come in.
    void merge_initializers(scope_id s) {
        const auto& initializers = model_.scopes[s].initializers;  // only marked removed below, never reordered
        // The distinct (type, dims), as views of the dims (nothing is added or removed
        // while grouping), each with its rank once all are known.
        std::map<std::pair<std::int32_t, onnx::tensor_dims>, std::uint32_t> shapes;
        std::vector<std::uint32_t> shape_of;  // by entry in `shapes`: its rank
        std::vector<std::uint64_t> by_shape;  // shape << 32 | position in `initializers`
        // Each round reads the tensors in list order (a shape's at a time): the mapped
        // pages behind it go.
        file_walk walk(model_);
        for (std::size_t position = 0; position < initializers.size(); ++position) {
            const auto t = initializers[position];
            if (!model_.tensor_live(t) || (model_.tensors[t].site == none && !folded(t))) continue;
            walk.reached(t);
            const auto v = index_.resolve(s, model_.tensors[t].name);
            if (v == none || index_.at(v).tensor != t || index_.at(v).overridable || index_.at(v).pinned) continue;
            if (touched_.contains(v) || is_interface_output(model_, index_, v)) continue;
            const auto [it, added] = shapes.try_emplace({model_.tensor_type(t), model_.dims_view(t)},
                                                        static_cast<std::uint32_t>(shapes.size()));
            by_shape.push_back(std::uint64_t{it->second} << 32U | position);
        }
        if (by_shape.size() < 2) return;
        shape_of.resize(shapes.size());
        std::uint32_t rank = 0;
        for (const auto& [shape, entry] : shapes) shape_of[entry] = rank++;
        shapes.clear();
        for (auto& e : by_shape) e = std::uint64_t{shape_of[e >> 32U]} << 32U | (e & 0xFFFFFFFFU);
        std::sort(by_shape.begin(), by_shape.end());

        std::vector<keyed_position> by_hash;
        for (std::size_t begin = 0, end = 0; begin < by_shape.size(); begin = end) {
            end = begin + 1;
            while (end < by_shape.size() && by_shape[end] >> 32U == by_shape[begin] >> 32U) ++end;
            if (end - begin < 2) continue;
            // The shape's entries become (sample, position) in place, no second array: 32
            // bits of the sample pick the candidates (equal bytes have equal samples, and
            // two that only share those bits are told apart by the whole hash).
            const auto shape = std::span(by_shape).subspan(begin, end - begin);
            std::size_t sampled = 0;
            for (const auto entry : shape) {
                const auto position = static_cast<std::uint32_t>(entry & 0xFFFFFFFFU);
                walk.reached(initializers[position]);
                if (const auto h = sample_of(initializers[position])) shape[sampled++] = (*h & ~0xFFFFFFFFULL) | position;
            }
            const auto by_sample = shape.first(sampled);
            std::sort(by_sample.begin(), by_sample.end());
            by_hash.clear();
            for (std::size_t first = 0, last = 0; first < by_sample.size(); first = last) {
                last = first + 1;
                while (last < by_sample.size() && by_sample[last] >> 32U == by_sample[first] >> 32U) ++last;
                if (last - first < 2) continue;
                for (const auto entry : by_sample.subspan(first, last - first)) {
                    const auto position = static_cast<std::uint32_t>(entry & 0xFFFFFFFFU);
                    // In the samples' order, not the file's (a few hundred of a million tiny
                    // tensors share 32 bits of a sample by chance): the walk moves back and
                    // forth, and a move back releases what the reads before it mapped once
                    // they span a window.
                    walk.reached(initializers[position]);
                    if (const auto h = hash_of(initializers[position])) by_hash.push_back(keyed_position::of(*h, position));
                }
            }
            std::sort(by_hash.begin(), by_hash.end());
            for_each_run(by_hash, [&](std::span<const keyed_position> same) { merge_alike(s, same); });
        }
    }

    // Calls `visit` with each run of two or more entries of `sorted` that share a key.
    template <class Visit>
    static void for_each_run(const std::vector<keyed_position>& sorted, Visit&& visit) {
        for (std::size_t begin = 0, end = 0; begin < sorted.size(); begin = end) {
            end = begin + 1;
            while (end < sorted.size() && sorted[end].same_key(sorted[begin])) ++end;
            if (end - begin >= 2) visit(std::span(sorted).subspan(begin, end - begin));
        }
    }

    // Initializers of scope `s` with the same hash, in list order: each later one whose
    // bytes equal an earlier one's is replaced by the earliest such.
    void merge_alike(scope_id s, std::span<const keyed_position> same) {
        const auto& initializers = model_.scopes[s].initializers;
        for (std::size_t i = 1; i < same.size(); ++i) {
            const auto dup = initializers[same[i].position];
            for (std::size_t j = 0; j < i; ++j) {
                const auto keep = initializers[same[j].position];
                if (model_.tensors[keep].removed || !same_bytes(keep, dup)) continue;
                const auto v_dup = index_.resolve(s, model_.tensors[dup].name);
                const auto v_keep = index_.resolve(s, model_.tensors[keep].name);
                if (!can_replace_uses(model_, index_, v_dup, v_keep)) break;
                replace_uses(model_, index_, v_dup, model_.tensors[keep].name);
                finding f;
                f.kind = finding_kind::duplicate_initializer;
                f.scope = model_.scope_path(s);
                f.names = {std::string(model_.text(model_.tensors[dup].name)),
                           std::string(model_.text(model_.tensors[keep].name))};
                f.bytes = model_.tensor_bytes(dup);
                f.detail = "same as " + f.names[1];
                context_.findings.add(std::move(f));
                model_.remove_tensor(dup);
                touched_.insert(v_dup);
                ++removed_;
                break;
            }
        }
    }

    pass_context& context_;
    graph_model& model_;
    // The run's snapshot of the index (pass_context::index), held while the run edits.
    const std::shared_ptr<const graph_index> held_index_;
    const graph_index& index_;
    std::unordered_map<value_id, value_id> replaced_;
    std::unordered_map<value_id, name_id> renamed_;
    std::unordered_set<value_id> touched_;
    std::unordered_set<value_id> targets_;    // survivors others were rewired to in this run
    std::unordered_set<value_id> receivers_;  // every value `replaced_` maps a value to
    // A bit per node of the model (nodes merge() adds are never visited): merge_nodes has
    // reached it (in any scope), and it is in that scope's table.
    std::vector<bool> visited_ = std::vector<bool>(model_.nodes.size(), false);
    std::vector<bool> kept_ = std::vector<bool>(model_.nodes.size(), false);
    std::string key_buffer_;  // key_of's, reused
    std::uint64_t removed_ = 0;
};

}  // namespace

std::uint64_t eliminate_common_subexpressions(pass_context& context) { return cse_run(context).run(); }

namespace {
void analyze_common_subexpressions(pass_context& context) { (void)eliminate_common_subexpressions(context); }
}  // namespace

pass_entry common_subexpression_pass() {
    return {.name = "cse",
            .summary = "duplicate nodes and identical initializers merged",
            .run = eliminate_common_subexpressions,
            .analyze = analyze_common_subexpressions};
}

}  // namespace onnxstream::passes
