#include <onnxstream/graph/model_edits.hpp>

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_fields.hpp>
#include <onnxstream/onnx/tensor_encoding.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/proto/encoded_message.hpp>

#include <algorithm>
#include <span>

namespace onnxstream::graph {

using onnx::message_kind;
using onnx::number;
using proto::encoded_message;

namespace {

// Fields this small are copied into the encoding; larger ones stay slices of the input.
constexpr std::uint64_t inline_copy_limit = 64 * 1024;

void put_external(proto::encoded_message& out, const external_location& where) {
    onnx::encode_external_location(out, where.location, where.offset, where.length);
}

// Lookups from tree messages to the graph model's ids.
struct model_maps {
    std::vector<node_id> node_of_message;
    std::vector<scope_id> scope_of_message;
    indexed_vector<site_id, tensor_id> tensor_of_site;
    std::vector<value_info_id> value_info_of_message;

    explicit model_maps(const graph_model& model) {
        const auto messages = model.tree().messages().size();
        node_of_message.assign(messages, none);
        scope_of_message.assign(messages, none);
        value_info_of_message.assign(messages, none);
        tensor_of_site.assign(model.file().sites.size(), none);
        for (const auto n : model.nodes.ids())
            if (model.nodes[n].message != none) node_of_message[model.nodes[n].message] = n;
        for (const auto s : model.scopes.ids()) scope_of_message[model.scopes[s].message] = s;
        for (const auto t : model.tensors.ids())
            if (model.tensors[t].site != none) tensor_of_site[model.tensors[t].site] = t;
        for (const auto v : model.value_infos.ids()) value_info_of_message[model.value_infos[v].message] = v;
    }
};

class edit_builder {
public:
    edit_builder(const graph_model& model, const storage_plan& plan, io::spill_file& spill,
                 std::span<const io::source_file* const> sources)
        : model_(model), tree_(model.tree()), plan_(plan), spill_(spill), sources_(sources), maps_(model) {}

    result<onnx::tree_edits> run() {
        decide_encoding();
        mark_rewrites();
        ONNXSTREAM_TRY(edit_scope(main_scope));
        for (const auto& fn : model_.functions) {
            if (fn.removed) {
                edits_.drop(tree_.at(fn.message).parent_field);
                continue;
            }
            ONNXSTREAM_TRY(edit_scope(fn.scope));
        }
        rewrite_storage_in_place();
        return std::move(edits_);
    }

private:
    // ------------------------------------------------------------ what to encode

    void decide_encoding() {
        encode_.assign(model_.nodes.size(), false);
        for (const auto n : model_.nodes.ids()) {
            const auto& nd = model_.nodes[n];
            encode_[n] = model_.node_live(n) && (nd.message == none || nd.changed || nd.scope != nd.original_scope);
        }
        // A subgraph with any change makes its owner encoded; children have larger ids.
        for (auto i = model_.scopes.size(); i-- > 0;) {
            const auto s = scope_id::at(i);
            const auto& sc = model_.scopes[s];
            if (sc.removed || sc.kind != scope_kind::subgraph) continue;
            bool dirty = sc.changed;
            for (const auto n : sc.nodes) dirty = dirty || (model_.node_live(n) && encode_[n]);
            for (const auto t : sc.initializers) dirty = dirty || !tensor_in_place(t, s);
            if (dirty && model_.node_live(sc.owner)) encode_[sc.owner] = true;
        }
    }

    void mark_rewrites() {
        rewrite_.assign(tree_.messages().size(), false);
        for (const auto& [site, where] : plan_.moved_sites()) {
            for (auto m = model_.file().sites[site].message; m != none && !rewrite_[m]; m = tree_.at(m).parent)
                rewrite_[m] = true;
        }
    }

    [[nodiscard]] bool node_in_place(node_id n, scope_id s) const {
        return model_.node_live(n) && model_.nodes[n].scope == s && model_.nodes[n].original_scope == s && !encode_[n];
    }

    [[nodiscard]] bool tensor_in_place(tensor_id t, scope_id s) const {
        const auto& x = model_.tensors[t];
        if (!model_.tensor_live(t) || x.scope != s || x.site == none || x.renamed) return false;
        return onnx::graph_of(model_.file().tree, model_.file().sites[x.site]) == model_.scopes[s].message;
    }

    [[nodiscard]] bool value_info_renamed(value_info_id v) const {
        const auto& vi = model_.value_infos[v];
        return tree_.find_text(vi.message, number(onnx::value_info_field::name)) != model_.text(vi.name);
    }

    [[nodiscard]] bool value_info_in_place(value_info_id v, scope_id s) const {
        const auto& vi = model_.value_infos[v];
        return !vi.removed && vi.scope == s && tree_.at(vi.message).parent == model_.scopes[s].message && !value_info_renamed(v);
    }

    // ------------------------------------------------------------ in-place edits

    result<void> insert_encoded(std::uint32_t message, std::uint32_t position, std::uint32_t field_number,
                                const encoded_message& encoded) {
        if (!encoded.has_slices()) {
            edits_.insert(message, position, edits_.bytes(field_number, encoded.pool()));
            return {};
        }
        if (encoded.pieces().size() == 1) {  // one slice: referenced where it is
            const auto& p = encoded.pieces()[0];
            edits_.insert(message, position, edits_.slice(field_number, p.source, p.offset, p.length));
            return {};
        }
        ONNXSTREAM_ASSIGN(const auto offset, proto::append_to_spill(encoded, spill_, sources_));
        edits_.insert(message, position, edits_.slice(field_number, plan_.spill_source, offset, encoded.size()));
        return {};
    }

    result<void> edit_scope(scope_id s) {
        const auto& sc = model_.scopes[s];
        const auto message = sc.message;
        const bool is_function = sc.kind == scope_kind::function;
        const auto node_number = is_function ? number(onnx::function_field::node) : number(onnx::graph_field::node);
        const auto fields = tree_.fields(message);
        const auto first = tree_.at(message).first_field;
        const auto count = static_cast<std::uint32_t>(fields.size());

        std::uint32_t last_node = none;
        std::uint32_t last_initializer = none;
        std::uint32_t last_value_info = none;
        for (std::uint32_t i = 0; i < count; ++i) {
            const auto& f = fields[i];
            if (f.child == none) continue;
            if (f.number() == node_number) {
                last_node = i;
                const auto n = maps_.node_of_message[f.child];
                if (n == none || !node_in_place(n, s)) edits_.drop(first + i);
            } else if (is_function) {
                continue;
            } else if (f.number() == number(onnx::graph_field::initializer)) {
                last_initializer = i;
                const auto site = model_.site_of(f.child);
                const auto t = site == none ? none : maps_.tensor_of_site[site];
                if (t == none || !tensor_in_place(t, s)) edits_.drop(first + i);
            } else if (f.number() == number(onnx::graph_field::value_info)) {
                last_value_info = i;
                const auto v = maps_.value_info_of_message[f.child];
                if (v != none && !value_info_in_place(v, s)) edits_.drop(first + i);
            }
        }

        std::vector<node_id> pending;
        auto flush = [&](std::uint32_t position) -> result<void> {
            for (const auto n : pending) {
                const auto encoded = encode_node(n);
                ONNXSTREAM_TRY(insert_encoded(message, position, node_number, encoded));
            }
            pending.clear();
            return {};
        };
        // Changed nodes and tensors are encoded again from the model's bytes, in file
        // order: the mapped pages behind go.
        file_walk walk(model_);
        for (const auto n : sc.nodes) {
            if (!model_.node_live(n)) continue;
            walk.reached(n);
            if (node_in_place(n, s)) {
                ONNXSTREAM_TRY(flush(tree_.at(model_.nodes[n].message).parent_field - first));
            } else {
                pending.push_back(n);
            }
        }
        ONNXSTREAM_TRY(flush(last_node == none ? count : last_node + 1));
        if (is_function) return {};

        const auto initializer_position = last_initializer == none ? count : last_initializer + 1;
        for (const auto t : sc.initializers) {
            if (!model_.tensor_live(t) || tensor_in_place(t, s)) continue;
            walk.reached(t);
            const auto encoded = encode_tensor(t);
            ONNXSTREAM_TRY(insert_encoded(message, initializer_position, number(onnx::graph_field::initializer), encoded));
        }
        const auto value_info_position = last_value_info == none ? count : last_value_info + 1;
        for (const auto v : sc.value_infos) {
            if (model_.value_infos[v].removed || value_info_in_place(v, s)) continue;
            const auto encoded = encode_value_info(model_.value_infos[v].message, model_.value_infos[v].name);
            ONNXSTREAM_TRY(insert_encoded(message, value_info_position, number(onnx::graph_field::value_info), encoded));
        }
        return {};
    }

    // Tensors edited where they are: their value fields replaced by new external_data
    // (the fields encode_external_location writes, in its order), addressed by position in
    // a body the tree dropped.
    void rewrite_storage_in_place() {
        const auto& sites = model_.file().sites;
        for (const auto& [site, where] : plan_.moved_sites()) {
            if (covered_by_encoding(site)) continue;
            onnx::store_external(tree_, sites[site].message, {where.location, where.offset, where.length, std::nullopt}, edits_);
        }
    }

    [[nodiscard]] bool covered_by_encoding(site_id site) const {
        const auto& s = model_.file().sites[site];
        if (s.role == onnx::tensor_role::initializer) {
            const auto t = maps_.tensor_of_site[site];
            const auto scope = maps_.scope_of_message[onnx::graph_of(tree_, s)];
            if (t != none && scope != none && !tensor_in_place(t, scope)) return true;
        }
        for (auto m = tree_.at(s.message).parent; m != none; m = tree_.at(m).parent) {
            if (tree_.at(m).kind != message_kind::node) continue;
            const auto n = maps_.node_of_message[m];
            if (n != none && (encode_[n] || !model_.node_live(n))) return true;
        }
        return false;
    }

    // ------------------------------------------------------------ encoding

    void copy_range(encoded_message& out, std::uint64_t offset, std::uint64_t length) const {
        if (length <= inline_copy_limit) out.append_bytes(tree_.bytes().subspan(offset, length));
        else out.append_slice(0, offset, length);
    }

    void copy_field(encoded_message& out, const onnx::field_entry& f) const {
        copy_range(out, f.header_offset(), f.total_length());
    }

    encoded_message verbatim_payload(std::uint32_t message) const {
        encoded_message out;
        const auto range = tree_.payload_range(message);
        copy_range(out, range.offset, range.length);
        return out;
    }

    encoded_message encode_node(node_id n) const {
        const auto& nd = model_.nodes[n];
        encoded_message out;
        auto put_names = [&](std::uint32_t field_number, std::span<const name_id> names) {
            for (const auto name : names) out.text_field(field_number, model_.text(name));
        };
        const auto input_field = number(onnx::node_field::input);
        const auto output_field = number(onnx::node_field::output);
        if (nd.message == none) {
            put_names(input_field, nd.inputs);
            put_names(output_field, nd.outputs);
            if (const auto name = model_.node_name(n); !name.empty()) out.text_field(number(onnx::node_field::name), name);
            out.text_field(number(onnx::node_field::op_type), nd.op_type());
            if (!nd.domain().empty()) out.text_field(number(onnx::node_field::domain), nd.domain());
            for (const auto& a : nd.set_attributes())
                out.message_field(number(onnx::node_field::attribute), encode_integer_attribute(a));
            return out;
        }
        std::vector<bool> set_done(nd.set_attributes().size());
        auto put_set = [&](std::size_t k) {
            if (!set_done[k])
                out.message_field(number(onnx::node_field::attribute), encode_integer_attribute(nd.set_attributes()[k]));
            set_done[k] = true;
        };
        bool inputs_done = false;
        bool outputs_done = false;
        // Fields the tree dropped (a node without attributes) are read again; bytes that no
        // longer tokenize give none, and the writer's check that the sources are unchanged
        // refuses the output.
        std::vector<onnx::field_entry> dropped;
        for (const auto& f : tree_.read_fields(nd.message, dropped)) {
            const auto k = f.number();
            if (k == input_field && f.type() == proto::wire_type::length_delimited) {
                if (!inputs_done) put_names(input_field, nd.inputs);
                inputs_done = true;
            } else if (k == output_field && f.type() == proto::wire_type::length_delimited) {
                if (!outputs_done) put_names(output_field, nd.outputs);
                outputs_done = true;
            } else if (k == number(onnx::node_field::attribute) && f.child != none) {
                const auto name = tree_.find_text(f.child, number(onnx::attribute_field::name));
                if (std::find(nd.dropped_attributes().begin(), nd.dropped_attributes().end(), name) !=
                    nd.dropped_attributes().end()) {
                    // A set attribute takes the place of the one it replaces.
                    for (std::size_t s = 0; s < nd.set_attributes().size(); ++s)
                        if (nd.set_attributes()[s].name == name) put_set(s);
                    continue;
                }
                const auto a = read_attribute(tree_, f.child);
                if (a.has_graph || rewrite_[f.child]) out.message_field(k, encode_attribute(f.child));
                else copy_field(out, f);
            } else {
                copy_field(out, f);
            }
        }
        if (!inputs_done) put_names(input_field, nd.inputs);
        if (!outputs_done) put_names(output_field, nd.outputs);
        for (std::size_t k = 0; k < nd.set_attributes().size(); ++k) put_set(k);
        return out;
    }

    // An AttributeProto as python-onnx writes it: name, then the value (ints unpacked), then type.
    static encoded_message encode_integer_attribute(const integer_attribute& a) {
        encoded_message out;
        out.text_field(number(onnx::attribute_field::name), a.name);
        if (a.i) {
            out.varint_field(number(onnx::attribute_field::i), static_cast<std::uint64_t>(*a.i));
        } else {
            for (const auto x : a.ints) out.varint_field(number(onnx::attribute_field::ints), static_cast<std::uint64_t>(x));
        }
        out.varint_field(number(onnx::attribute_field::type), a.i ? 2 : 7);  // INT, INTS
        return out;
    }

    encoded_message encode_attribute(std::uint32_t attribute) const {
        encoded_message out;
        for (const auto& f : tree_.fields(attribute)) {
            const auto k = f.number();
            if ((k == number(onnx::attribute_field::g) || k == number(onnx::attribute_field::graphs)) && f.child != none &&
                maps_.scope_of_message[f.child] != none) {
                out.message_field(k, encode_graph(maps_.scope_of_message[f.child]));
            } else if (f.child != none && rewrite_[f.child]) {
                out.message_field(k, encode_generic(f.child));
            } else {
                copy_field(out, f);
            }
        }
        return out;
    }

    // A message copied field by field, with new storage for the tensors inside it.
    encoded_message encode_generic(std::uint32_t message) const {
        if (tree_.at(message).kind == message_kind::tensor) return encode_site_tensor(message, std::nullopt);
        encoded_message out;
        for (const auto& f : tree_.fields(message)) {
            if (f.child != none && rewrite_[f.child]) out.message_field(f.number(), encode_generic(f.child));
            else copy_field(out, f);
        }
        return out;
    }

    encoded_message encode_graph(scope_id s) const {
        const auto& sc = model_.scopes[s];
        encoded_message out;
        bool nodes_done = false;
        bool initializers_done = false;
        std::size_t output_slot = 0;
        auto put_nodes = [&] {
            for (const auto n : sc.nodes) {
                if (!model_.node_live(n)) continue;
                const auto message = model_.nodes[n].message;
                if (encode_[n]) out.message_field(number(onnx::graph_field::node), encode_node(n));
                else if (rewrite_[message]) out.message_field(number(onnx::graph_field::node), encode_generic(message));
                else copy_field(out, tree_.field(tree_.at(message).parent_field));
            }
            nodes_done = true;
        };
        auto put_initializers = [&] {
            for (const auto t : sc.initializers)
                if (model_.tensor_live(t)) out.message_field(number(onnx::graph_field::initializer), encode_tensor(t));
            initializers_done = true;
        };
        for (const auto& f : tree_.fields(sc.message)) {
            const auto k = f.number();
            if (k == number(onnx::graph_field::node) && f.child != none) {
                if (!nodes_done) put_nodes();
            } else if (k == number(onnx::graph_field::initializer) && f.child != none) {
                if (!initializers_done) put_initializers();
            } else if (k == number(onnx::graph_field::value_info) && f.child != none) {
                const auto v = maps_.value_info_of_message[f.child];
                if (v == none) copy_field(out, f);
                else if (value_info_in_place(v, s)) copy_field(out, f);
                // else: removed, moved, or renamed (then emitted below)
            } else if (k == number(onnx::graph_field::output) && f.child != none) {
                const auto name = output_slot < sc.outputs.size() ? sc.outputs[output_slot] : empty_name;
                ++output_slot;
                if (tree_.find_text(f.child, number(onnx::value_info_field::name)) == model_.text(name)) copy_field(out, f);
                else out.message_field(k, encode_value_info(f.child, name));
            } else if (f.child != none && rewrite_[f.child]) {
                out.message_field(k, encode_generic(f.child));
            } else {
                copy_field(out, f);
            }
        }
        if (!nodes_done) put_nodes();
        if (!initializers_done) put_initializers();
        for (const auto v : sc.value_infos)
            if (!model_.value_infos[v].removed && !value_info_in_place(v, s))
                out.message_field(number(onnx::graph_field::value_info),
                                  encode_value_info(model_.value_infos[v].message, model_.value_infos[v].name));
        return out;
    }

    encoded_message encode_value_info(std::uint32_t message, name_id name) const {
        encoded_message out;
        bool named = false;
        for (const auto& f : tree_.fields(message)) {
            if (f.number() == number(onnx::value_info_field::name)) {
                if (!named) out.text_field(f.number(), model_.text(name));
                named = true;
            } else {
                copy_field(out, f);
            }
        }
        if (!named) out.text_field(number(onnx::value_info_field::name), model_.text(name));
        return out;
    }

    encoded_message encode_site_tensor(std::uint32_t message, std::optional<name_id> rename) const {
        const auto site = model_.site_of(message);
        const auto* where = site == none ? nullptr : plan_.site_location(site);
        if (!rename && where == nullptr) return verbatim_payload(message);
        // The fields of a body the tree dropped are read again; one that no longer
        // tokenizes (the file changed) is copied as it is, and the writer's check that the
        // sources are unchanged refuses the output.
        const auto read = onnx::message_fields::read(tree_, message);
        if (!read) return verbatim_payload(message);
        encoded_message out;
        bool named = false;
        for (const auto& f : read->fields()) {
            const auto k = f.number();
            if (k == number(onnx::tensor_field::name) && rename) {
                if (!named) out.text_field(k, model_.text(*rename));
                named = true;
            } else if (where != nullptr && onnx::holds_tensor_value(k)) {
                continue;
            } else {
                copy_field(out, f);
            }
        }
        if (rename && !named) out.text_field(number(onnx::tensor_field::name), model_.text(*rename));
        if (where != nullptr) put_external(out, *where);
        return out;
    }

    encoded_message encode_tensor(tensor_id t) const {
        const auto& x = model_.tensors[t];
        if (x.site != none) {
            const auto message = model_.file().sites[x.site].message;
            return encode_site_tensor(message, x.renamed ? std::optional<name_id>(x.name) : std::nullopt);
        }
        encoded_message out;
        static const computed_placement unplaced;  // a computed tensor is always placed (optimize spills each)
        const auto* found = plan_.placement(t);
        const auto& placed = found != nullptr ? *found : unplaced;
        if (!placed.external) {
            // Written whole into the spill file when it was computed.
            out.append_slice(plan_.spill_source, placed.message_offset, placed.message_length);
            return out;
        }
        const auto& c = *model_.computed(t);  // a tensor without a site is add_tensor's
        onnx::encode_tensor_header(out, c.dims, c.data_type, model_.text(x.name));
        put_external(out, *placed.external);
        return out;
    }

    const graph_model& model_;
    const onnx::message_tree& tree_;
    const storage_plan& plan_;
    io::spill_file& spill_;
    std::span<const io::source_file* const> sources_;
    model_maps maps_;
    indexed_vector<node_id, bool> encode_;
    std::vector<bool> rewrite_;
    onnx::tree_edits edits_;
};

}  // namespace

void storage_plan::move_site(site_id site, external_location where) {
    // Sites come in order (a pass over them); any other order still sorts.
    const auto at = std::lower_bound(sites_.begin(), sites_.end(), site,
                                     [](const auto& entry, site_id s) { return entry.first < s; });
    if (at != sites_.end() && at->first == site) at->second = std::move(where);
    else sites_.insert(at, {site, std::move(where)});
}

const external_location* storage_plan::site_location(site_id site) const {
    const auto at = std::lower_bound(sites_.begin(), sites_.end(), site,
                                     [](const auto& entry, site_id s) { return entry.first < s; });
    return at != sites_.end() && at->first == site ? &at->second : nullptr;
}

computed_placement& storage_plan::placement(tensor_id tensor) {
    const auto at = std::lower_bound(computed_.begin(), computed_.end(), tensor,
                                     [](const auto& entry, tensor_id t) { return entry.first < t; });
    if (at != computed_.end() && at->first == tensor) return at->second;
    return computed_.insert(at, {tensor, computed_placement{}})->second;
}

const computed_placement* storage_plan::placement(tensor_id tensor) const {
    const auto at = std::lower_bound(computed_.begin(), computed_.end(), tensor,
                                     [](const auto& entry, tensor_id t) { return entry.first < t; });
    return at != computed_.end() && at->first == tensor ? &at->second : nullptr;
}

indexed_vector<site_id, bool> surviving_sites(const graph_model& model) {
    const model_maps maps(model);
    const auto& sites = model.file().sites;
    indexed_vector<site_id, bool> out(sites.size(), true);
    for (const auto i : sites.ids()) {
        const auto& s = sites[i];
        const auto graph = onnx::graph_of(model.file().tree, s);
        const auto scope = graph == none ? none : maps.scope_of_message[graph];
        if (s.role == onnx::tensor_role::initializer) {
            const auto t = maps.tensor_of_site[i];
            if (t != none) out[i] = model.tensor_live(t);
        } else if (s.role == onnx::tensor_role::sparse_initializer) {
            if (scope != none) out[i] = !model.scopes[scope].removed;
        } else if (const auto node = onnx::node_of(model.file().tree, s); node != none) {
            const auto n = maps.node_of_message[node];
            if (n != none) out[i] = model.node_live(n);
        } else if (scope != none) {
            out[i] = !model.scopes[scope].removed;  // FunctionProto.attribute_proto
        }
    }
    return out;
}

result<onnx::tree_edits> build_edits(const graph_model& model, const storage_plan& plan, io::spill_file& spill,
                                     std::span<const io::source_file* const> sources) {
    return edit_builder(model, plan, spill, sources).run();
}

}  // namespace onnxstream::graph
