#include <onnxstream/passes/common_subexpression.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/passes/identity_removal.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

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

class cse_run {
public:
    explicit cse_run(pass_context& context) : context_(context), model_(context.model), index_(context.model) {}

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
        if (nd.outputs.empty() || !nd.subgraphs.empty()) return false;
        if (!nd.domain.empty() && nd.domain != "ai.onnx.ml") return false;
        if (is_nondeterministic(nd.op_type)) return false;
        if (nd.op_type == "Dropout" && !is_inference_dropout(model_, index_, context_.reader, n)) return false;
        for (const auto& fn : model_.functions)
            if (!fn.removed && fn.name == nd.op_type && fn.domain == nd.domain) return false;
        for (std::size_t k = 0; k < nd.outputs.size(); ++k) {
            const auto v = index_.output(n, k);
            if (v != none && (index_.at(v).pinned || touched_.contains(v))) return false;
        }
        return true;
    }

    std::string key_of(node_id n, const std::vector<attribute_bytes>& attributes) const {
        const auto& nd = model_.nodes[n];
        std::string key = std::string(nd.op_type) + '\0' + std::string(nd.domain) + '\0' + std::string(nd.overload) + '\0';
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) key += std::to_string(find(index_.input(n, k)).value) + ',';
        key += '|';
        for (const auto o : nd.outputs) key += o == empty_name ? '0' : '1';
        key += '|';
        for (const auto& a : attributes) {
            key += std::string(a.name) + ':' + std::to_string(a.payload.size());
            if (a.payload.size() <= hashed_attribute_limit) key += ':' + std::to_string(io::xxh3_of(a.payload));
            key += ';';
        }
        return key;
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
            if (va == none || touched_.contains(va)) return false;
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
            touched_.insert(st.from);
        }
        return true;
    }

    void merge_nodes(scope_id s) {
        std::unordered_map<std::string, std::vector<node_id>> seen;
        const auto nodes = model_.scopes[s].nodes;  // merge() may add Identity nodes to the list
        for (const auto n : nodes) {
            if (!model_.node_live(n) || !eligible(n)) continue;
            const auto attributes = attributes_of(model_, n);
            auto& candidates = seen[key_of(n, attributes)];
            bool merged = false;
            for (const auto c : candidates) {
                if (!same_attributes(attributes_of(model_, c), attributes) ||
                    model_.nodes[c].set_attributes != model_.nodes[n].set_attributes)
                    continue;
                if (!merge(c, n)) break;
                finding f;
                f.kind = finding_kind::duplicate_node;
                f.scope = model_.scope_path(s);
                f.op_type = model_.nodes[n].op_type;
                f.names = {model_.node_label(n), model_.node_label(c)};
                f.nodes = 1;
                f.detail = "same as " + model_.node_label(c);
                context_.findings.push_back(std::move(f));
                model_.remove_node(n);
                ++removed_;
                merged = true;
                break;
            }
            if (!merged) candidates.push_back(n);
        }
    }

    // A cheap fingerprint: the first and last few KiB. Tensors that differ almost always
    // differ there, so whole tensors are read only when these match.
    // A tensor fold-constants computed: its bytes are in memory, and small.
    bool folded(tensor_id t) const {
        return model_.tensors[t].site == none && model_.tensors[t].computed && model_.tensors[t].computed->has_bytes;
    }
    std::uint64_t hash_bytes(tensor_id t) const {
        io::xxh3_hasher hasher;
        hasher.update(model_.tensors[t].computed->bytes);
        return hasher.digest();
    }

    std::optional<std::uint64_t> sample_of(tensor_id t) const {
        const auto& x = model_.tensors[t];
        if (folded(t)) {  // the same fingerprint as below, from the bytes in memory
            const std::span<const std::byte> bytes = x.computed->bytes;
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

    void merge_initializers(scope_id s) {
        // Keyed by views of the dims (nothing is added or removed while grouping), in the
        // order vectors of them would sort in.
        std::map<std::pair<std::int32_t, onnx::tensor_dims>, std::vector<tensor_id>> groups;
        for (const auto t : model_.scopes[s].initializers) {
            if (!model_.tensor_live(t) || (model_.tensors[t].site == none && !folded(t))) continue;
            const auto v = index_.resolve(s, model_.tensors[t].name);
            if (v == none || index_.at(v).tensor != t || index_.at(v).overridable || index_.at(v).pinned) continue;
            if (touched_.contains(v) || is_interface_output(model_, index_, v)) continue;
            groups[{model_.tensor_type(t), model_.dims_view(t)}].push_back(t);
        }
        for (auto& [shape, members] : groups) {
            if (members.size() < 2) continue;
            std::map<std::uint64_t, std::vector<tensor_id>> by_sample;
            for (const auto t : members)
                if (const auto h = sample_of(t)) by_sample[*h].push_back(t);
            std::map<std::uint64_t, std::vector<tensor_id>> by_hash;
            for (const auto& [sample, alike] : by_sample) {
                if (alike.size() < 2) continue;
                for (const auto t : alike)
                    if (const auto h = hash_of(t)) by_hash[*h].push_back(t);
            }
            for (auto& [hash, same] : by_hash) {
                for (std::size_t i = 1; i < same.size(); ++i) {
                    const auto dup = same[i];
                    for (std::size_t j = 0; j < i; ++j) {
                        const auto keep = same[j];
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
                        context_.findings.push_back(std::move(f));
                        model_.remove_tensor(dup);
                        touched_.insert(v_dup);
                        ++removed_;
                        break;
                    }
                }
            }
        }
    }

    pass_context& context_;
    graph_model& model_;
    const graph_index index_;
    std::unordered_map<value_id, value_id> replaced_;
    std::unordered_map<value_id, name_id> renamed_;
    std::unordered_set<value_id> touched_;
    std::unordered_set<value_id> targets_;  // survivors others were rewired to in this run
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
