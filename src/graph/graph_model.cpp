#include <onnxstream/graph/graph_model.hpp>

#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <bit>
#include <span>
#include <string>

namespace onnxstream::graph {

using onnx::message_kind;
using onnx::number;

namespace {

float float_from_le(std::span<const std::byte> bytes) {
    std::uint32_t bits = 0;
    for (std::size_t i = 0; i < 4 && i < bytes.size(); ++i) bits |= static_cast<std::uint32_t>(bytes[i]) << (8 * i);
    return std::bit_cast<float>(bits);
}

}  // namespace

attribute_value read_attribute(const onnx::message_tree& tree, std::uint32_t message) {
    attribute_value a;
    a.message = message;
    for (const auto& f : tree.fields(message)) {
        const auto n = f.number();
        const auto type = f.type();
        if (n == number(onnx::attribute_field::name) && type == proto::wire_type::length_delimited) {
            a.name = tree.text(f);
        } else if (n == number(onnx::attribute_field::type) && type == proto::wire_type::varint) {
            a.type = static_cast<std::int32_t>(tree.value(f));
        } else if (n == number(onnx::attribute_field::f) && type == proto::wire_type::fixed32) {
            a.f = static_cast<double>(float_from_le(tree.payload(f)));
        } else if (n == number(onnx::attribute_field::i) && type == proto::wire_type::varint) {
            a.i = static_cast<std::int64_t>(tree.value(f));
        } else if (n == number(onnx::attribute_field::s) && type == proto::wire_type::length_delimited) {
            a.s = tree.text(f);
        } else if (n == number(onnx::attribute_field::t) && f.child != none) {
            a.tensor = f.child;
        } else if (n == number(onnx::attribute_field::g) || n == number(onnx::attribute_field::graphs)) {
            a.has_graph = true;
        } else if (n == number(onnx::attribute_field::sparse_tensor) || n == number(onnx::attribute_field::sparse_tensors)) {
            a.has_sparse = true;
        } else if (n == number(onnx::attribute_field::floats)) {
            const auto payload = tree.payload(f);
            if (type == proto::wire_type::fixed32) {
                a.floats.push_back(static_cast<double>(float_from_le(payload)));
            } else if (type == proto::wire_type::length_delimited) {
                for (std::size_t i = 0; i + 4 <= payload.size(); i += 4)
                    a.floats.push_back(static_cast<double>(float_from_le(payload.subspan(i, 4))));
            }
        } else if (n == number(onnx::attribute_field::ints)) {
            if (type == proto::wire_type::varint) {
                a.ints.push_back(static_cast<std::int64_t>(tree.value(f)));
            } else if (type == proto::wire_type::length_delimited) {
                auto rest = tree.payload(f);
                while (!rest.empty()) {
                    const auto v = proto::decode_varint(rest);
                    if (!v) break;
                    a.ints.push_back(static_cast<std::int64_t>(v->value));
                    rest = rest.subspan(v->size);
                }
            }
        }
    }
    return a;
}

struct graph_model::builder {
    graph_model& model;
    const onnx::message_tree& tree;
    // The walk is in file order: the mapped pages behind it go (a million initializers'
    // names would map the whole file). Names stay views of the mapping: a released page
    // comes back from the page cache when a pass reads it.
    io::release_behind behind;

    std::vector<onnx::field_entry> scratch;        // a node's fields the tree dropped, read again
    const operator_name* last_operator = nullptr;  // the last node's (read_node)

    void reached(std::uint32_t message) {
        const auto range = tree.payload_range(message);
        behind.reached(range.offset, range.offset + range.length);
    }

    scope_id add_scope(scope_kind kind, std::uint32_t message, scope_id parent, node_id owner, std::string attribute) {
        scope s;
        s.kind = kind;
        s.message = message;
        s.parent = parent;
        s.owner = owner;
        s.attribute = std::move(attribute);
        return model.scopes.push_back(std::move(s));
    }

    void read_node(std::uint32_t message, scope_id s) {
        node n;
        std::string_view op_type;
        std::string_view domain;
        n.message = message;
        n.scope = s;
        n.original_scope = s;
        for (const auto& f : tree.read_fields(message, scratch)) {
            const auto k = f.number();
            if (f.type() != proto::wire_type::length_delimited) continue;
            if (k == number(onnx::node_field::input)) n.inputs.push_back(model.names.intern_lasting(tree.text(f)));
            else if (k == number(onnx::node_field::output)) n.outputs.push_back(model.names.intern_lasting(tree.text(f)));
            // Kept copies, a few distinct ones: every pass reads each node's op type, and a
            // view of the mapping would fault every node's page back in after the walk.
            else if (k == number(onnx::node_field::op_type)) op_type = tree.text(f);
            else if (k == number(onnx::node_field::domain)) domain = tree.text(f);
            else if (k == number(onnx::node_field::overload) && !tree.text(f).empty())
                n.extras().overload = model.keep(tree.text(f));
        }
        // Chains of one operator are common: the last one found is asked first.
        if (last_operator == nullptr || last_operator->op_type != op_type || last_operator->domain != domain)
            last_operator = model.operator_of(domain, op_type);
        n.op = last_operator;
        const auto id = model.nodes.push_back(std::move(n));
        model.scopes[s].nodes.push_back(id);
        // Subgraphs after the node is registered: scopes stay in pre-order. (A node whose
        // fields the tree dropped has no attributes: node_fields::on_demand.)
        if (!tree.stores_fields(message)) return;
        for (const auto& f : tree.fields(message)) {
            if (f.number() != number(onnx::node_field::attribute) || f.child == none) continue;
            const auto attribute_name = std::string(tree.find_text(f.child, number(onnx::attribute_field::name)));
            for (const auto& g : tree.fields(f.child)) {
                if ((g.number() != number(onnx::attribute_field::g) && g.number() != number(onnx::attribute_field::graphs)) ||
                    g.child == none)
                    continue;
                const auto sub = add_scope(scope_kind::subgraph, g.child, s, id, attribute_name);
                model.nodes[id].extras().subgraphs.push_back(sub);
                read_graph(sub);
            }
        }
    }

    // The name table's slots for the names of the node or initializer `names_ahead` fields
    // on: a new name's slot is a cache miss (a million names hash all over a 12 MiB table),
    // which read_node then finds loaded: analyze and infer-shapes of a 1M-node chain 0.88x.
    // Its bytes are read here first, and then in cache. Writers order fields by number: a
    // node's inputs and outputs come first, a tensor's name before its data; fields past
    // those only end the scan (it is a hint: a name it misses is looked up all the same).
    static constexpr std::size_t names_ahead = 8;
    void prefetch_names(const onnx::field_entry& f) const {
        if (f.type() != proto::wire_type::length_delimited) return;
        std::uint32_t first = 0;  // the numbers of the name fields
        std::uint32_t last = 0;
        if (f.number() == number(onnx::graph_field::node)) {
            first = number(onnx::node_field::input);
            last = number(onnx::node_field::output);
        } else if (f.number() == number(onnx::graph_field::initializer)) {
            first = last = number(onnx::tensor_field::name);
        } else {
            return;
        }
        const auto bytes = tree.bytes();
        const auto end = f.end_offset();
        proto::field_token token;
        for (auto at = f.payload_offset(); at < end && proto::read_field_fast_in(bytes, at, end, token);
             at = token.end_offset()) {
            if (token.number > last) break;
            if (token.number < first || token.type != proto::wire_type::length_delimited) continue;
            model.names.prefetch({reinterpret_cast<const char*>(bytes.data() + token.payload_offset),
                                  static_cast<std::size_t>(token.payload_length)});
        }
    }

    void read_graph(scope_id s) {
        const auto message = model.scopes[s].message;
        // The scope's lists sized once: a graph may hold a million nodes or initializers.
        std::size_t node_count = 0;
        std::size_t initializer_count = 0;
        for (const auto& f : tree.fields(message)) {
            node_count += f.number() == number(onnx::graph_field::node) ? 1U : 0U;
            initializer_count += f.number() == number(onnx::graph_field::initializer) ? 1U : 0U;
        }
        model.scopes[s].nodes.reserve(node_count);
        model.scopes[s].initializers.reserve(initializer_count);
        const auto fields = tree.fields(message);
        for (std::size_t i = 0; i < fields.size(); ++i) {
            const auto& f = fields[i];
            if (i + names_ahead < fields.size()) prefetch_names(fields[i + names_ahead]);
            const auto k = f.number();
            if (f.child == none) continue;
            reached(f.child);
            if (k == number(onnx::graph_field::node)) {
                read_node(f.child, s);
            } else if (k == number(onnx::graph_field::initializer)) {
                tensor t;
                t.site = model.site_of(f.child);
                t.scope = s;
                t.name = model.names.intern_lasting(tree.find_text(f.child, number(onnx::tensor_field::name)));
                model.scopes[s].initializers.push_back(model.tensors.push_back(std::move(t)));
            } else if (k == number(onnx::graph_field::input)) {
                model.scopes[s].inputs.push_back(
                    model.names.intern_lasting(tree.find_text(f.child, number(onnx::value_info_field::name))));
            } else if (k == number(onnx::graph_field::output)) {
                model.scopes[s].outputs.push_back(
                    model.names.intern_lasting(tree.find_text(f.child, number(onnx::value_info_field::name))));
                model.scopes[s].output_messages.push_back(f.child);
            } else if (k == number(onnx::graph_field::value_info)) {
                value_info v;
                v.message = f.child;
                v.scope = s;
                v.name = model.names.intern_lasting(tree.find_text(f.child, number(onnx::value_info_field::name)));
                model.scopes[s].value_infos.push_back(model.value_infos.push_back(v));
            } else if (k == number(onnx::graph_field::sparse_initializer)) {
                for (const auto& sf : tree.fields(f.child)) {
                    if (sf.number() != number(onnx::sparse_tensor_field::values) || sf.child == none) continue;
                    model.scopes[s].sparse_initializers.push_back(
                        model.names.intern_lasting(tree.find_text(sf.child, number(onnx::tensor_field::name))));
                }
            }
        }
    }

    void read_function(std::uint32_t message) {
        const auto s = add_scope(scope_kind::function, message, none, none, {});
        function fn;
        fn.message = message;
        fn.scope = s;
        for (const auto& f : tree.fields(message)) {
            const auto k = f.number();
            if (f.type() != proto::wire_type::length_delimited) continue;
            if (k == number(onnx::function_field::name)) fn.name = tree.text(f);
            else if (k == number(onnx::function_field::domain)) fn.domain = tree.text(f);
            else if (k == number(onnx::function_field::overload)) fn.overload = tree.text(f);
            else if (k == number(onnx::function_field::input))
                model.scopes[s].inputs.push_back(model.names.intern_lasting(tree.text(f)));
            else if (k == number(onnx::function_field::output)) {
                model.scopes[s].outputs.push_back(model.names.intern_lasting(tree.text(f)));
                model.scopes[s].output_messages.push_back(none);
            } else if (k == number(onnx::function_field::node) && f.child != none) {
                reached(f.child);
                read_node(f.child, s);
            }
        }
        model.functions.push_back(std::move(fn));
    }

    void pin(std::string_view text) { model.pinned.insert(model.names.intern_lasting(text)); }  // text of the tree

    // Everything a training graph mentions, at any depth.
    void pin_training(std::uint32_t message) {
        const auto kind = tree.at(message).kind;
        if (kind == message_kind::tensor && tree.at(message).fields_dropped) {  // read on demand: only its name counts
            pin(tree.find_text(message, number(onnx::tensor_field::name)));
            return;
        }
        std::vector<onnx::field_entry> dropped;  // a node's fields the tree dropped
        for (const auto& f : tree.read_fields(message, dropped)) {
            const auto k = f.number();
            if (kind == message_kind::node && f.type() == proto::wire_type::length_delimited &&
                (k == number(onnx::node_field::input) || k == number(onnx::node_field::output)))
                pin(tree.text(f));
            if (kind == message_kind::training_info && f.type() == proto::wire_type::length_delimited &&
                (k == number(onnx::training_info_field::initialization_binding) ||
                 k == number(onnx::training_info_field::update_binding))) {
                std::vector<proto::field_token> entry;
                if (proto::tokenize(tree.bytes(), f.payload_offset(), f.end_offset(), entry))
                    for (const auto& e : entry)
                        if (e.type == proto::wire_type::length_delimited)
                            pin({reinterpret_cast<const char*>(tree.bytes().data() + e.payload_offset),
                                 static_cast<std::size_t>(e.payload_length)});
            }
            if (f.child != none) pin_training(f.child);
        }
        if (kind == message_kind::value_info) pin(tree.find_text(message, number(onnx::value_info_field::name)));
        if (kind == message_kind::tensor) pin(tree.find_text(message, number(onnx::tensor_field::name)));
    }
};

namespace {

// Node `n` of scope `s` for a message: by its name, or by its place in its graph when it
// has none (#k is graph.node[k] to python-onnx), since unnamed writers of one name would
// read alike.
std::string node_in_message(const graph_model& model, scope_id s, node_id n) {
    const auto op = std::string(model.nodes[n].op_type());
    if (const auto name = model.node_name(n); !name.empty()) return "node '" + std::string(name) + "' (" + op + ")";
    const auto& listed = model.scopes[s].nodes;
    return "unnamed node #" + std::to_string(std::ranges::find(listed, n) - listed.begin()) + " (" + op + ")";
}

// What defines `name` in scope `s` before node `writer` writes it as its output `slot` (a
// graph input, an initializer, an earlier node's output), for the error; "" when it is an
// earlier output of `writer` itself.
std::string first_definition(const graph_model& model, scope_id s, name_id name, node_id writer, std::size_t slot) {
    const auto& sc = model.scopes[s];
    if (std::ranges::find(sc.inputs, name) != sc.inputs.end()) return "a graph input";
    for (const auto t : sc.initializers)
        if (model.tensors[t].name == name) return "an initializer";
    if (std::ranges::find(sc.sparse_initializers, name) != sc.sparse_initializers.end()) return "a sparse initializer";
    for (const auto n : sc.nodes) {
        const auto outputs = std::span(model.nodes[n].outputs).first(n == writer ? slot : model.nodes[n].outputs.size());
        if (std::ranges::find(outputs, name) == outputs.end()) continue;
        if (n == writer) return {};  // the caller words it
        return "the output of " + node_in_message(model, s, n);
    }
    return "an earlier definition";  // not reached: the caller saw one
}

}  // namespace

// ONNX graphs are in single static assignment form: a graph defines each name once. A node
// that writes a name its own graph already defines (another node's output, a graph input,
// an initializer) gives that name two meanings; the index would keep one, and every pass
// would reason about a graph that is not the model's (common-subexpression elimination
// looped forever on one). onnx.checker and ONNX Runtime refuse such a graph too. Left as
// read: an initializer given twice (ONNX Runtime takes the last, as the index does), and a
// name a subgraph defines again over an enclosing graph's (resolved innermost first).
result<void> graph_model::check_single_assignment(const graph_model& model) {
    // By name, the scope that last defined it: each scope is checked whole before the next,
    // so a mark equal to the scope being checked was made by that scope.
    large_vector<scope_id> defined_in(model.names.size(), scope_id{none});
    const auto mark = [&](name_id name, scope_id s) { defined_in[static_cast<std::uint32_t>(name)] = s; };
    for (const auto s : model.scopes.ids()) {
        const auto& sc = model.scopes[s];
        if (sc.removed) continue;
        for (const auto name : sc.inputs) mark(name, s);
        for (const auto t : sc.initializers) mark(model.tensors[t].name, s);
        for (const auto name : sc.sparse_initializers) mark(name, s);
        for (const auto n : sc.nodes) {
            const auto& outputs = model.nodes[n].outputs;
            for (std::size_t k = 0; k < outputs.size(); ++k) {
                const auto name = outputs[k];
                if (name == empty_name) continue;
                if (defined_in[static_cast<std::uint32_t>(name)] != s) {
                    mark(name, s);
                    continue;
                }
                const auto where = sc.kind == scope_kind::main ? std::string("the main graph") : model.scope_path(s);
                const auto node = node_in_message(model, s, n);
                const auto first = first_definition(model, s, name, n, k);
                return failure(
                    error_code::not_onnx,
                    "'" + std::string(model.text(name)) + "' is defined twice in " + where + ": " +
                        (first.empty() ? "as two outputs of " + node : "as " + first + " and as the output of " + node),
                    "a graph defines each name once (single static assignment); onnx.checker and ONNX "
                    "Runtime refuse this model too");
            }
        }
    }
    return {};
}

result<graph_model> graph_model::build(const onnx::model_file& file) {
    graph_model model;
    model.file_ = &file;
    const auto& tree = file.tree;

    std::uint32_t main_graph = none;
    for (const auto& f : tree.fields(0)) {
        if (f.number() == number(onnx::model_field::graph) && f.child != none && main_graph == none) main_graph = f.child;
        if (f.number() == number(onnx::model_field::opset_import) && f.child != none) {
            std::string domain(tree.find_text(f.child, number(onnx::operator_set_field::domain)));
            if (domain == "ai.onnx") domain.clear();
            const auto* version = tree.find(f.child, number(onnx::operator_set_field::version));
            model.opsets_.emplace_back(std::move(domain),
                                       version != nullptr ? static_cast<std::int64_t>(tree.value(*version)) : 0);
        }
    }
    if (main_graph == none)
        return failure(error_code::not_onnx, file.path.string() + " has no graph", "an ONNX model needs a main graph");

    // Room for every node and tensor at once (a bound: training graphs and attribute
    // tensors are counted too), not doubling arrays of a million entries.
    std::size_t node_messages = 0;
    std::size_t tensor_messages = 0;
    std::size_t value_info_messages = 0;
    for (const auto& m : tree.messages()) {
        node_messages += m.kind == message_kind::node ? 1U : 0U;
        tensor_messages += m.kind == message_kind::tensor ? 1U : 0U;
        value_info_messages += m.kind == message_kind::value_info ? 1U : 0U;
    }
    model.nodes.reserve(node_messages);
    model.tensors.reserve(tensor_messages);
    // Most names are an initializer's, a node's (first) output or a graph input's, and
    // the table holds the empty name too.
    model.names.reserve(node_messages + tensor_messages + value_info_messages + 1);

    builder b{model, tree, io::release_behind(file.file.mapping()), {}};
    b.read_graph(b.add_scope(scope_kind::main, main_graph, none, none, {}));
    for (const auto& f : tree.fields(0)) {
        if (f.number() == number(onnx::model_field::functions) && f.child != none) b.read_function(f.child);
        if (f.number() == number(onnx::model_field::training_info) && f.child != none) b.pin_training(f.child);
    }
    b.behind.finish(file.file.size());
    ONNXSTREAM_TRY(check_single_assignment(model));
    return model;
}

file_walk::file_walk(const graph_model& model) noexcept
    : model_(&model), behind_(model.file().file.mapping()), releases_(model.file().reading != onnx::tensor_reading::kept) {}

file_walk::~file_walk() {
    if (releases_) behind_.finish(model_->file().file.size());
}

void file_walk::reached(node_id n) noexcept {
    if (const auto message = model_->nodes[n].message; releases_ && message != none) {
        const auto range = model_->tree().payload_range(message);
        behind_.reached(range.offset, range.offset + range.length);
    }
}

void file_walk::reached(tensor_id t) noexcept {
    if (const auto site = model_->tensors[t].site; releases_ && site != none) {
        const auto range = model_->tree().payload_range(model_->file().sites[site].message);
        behind_.reached(range.offset, range.offset + range.length);
    }
}

std::int64_t graph_model::opset(std::string_view domain) const {
    if (domain == "ai.onnx") domain = "";
    for (const auto& [d, version] : opsets_)
        if (d == domain) return version;
    return 0;
}

namespace {

attribute_value decoded(const integer_attribute& a) {
    attribute_value v;
    v.name = a.name;
    v.type = a.i ? 2 : 7;  // AttributeProto.AttributeType INT, INTS
    v.i = a.i;
    v.ints = a.ints;
    return v;
}

}  // namespace

const operator_name* graph_model::operator_of(std::string_view domain, std::string_view op_type) {
    if (domain == "ai.onnx") domain = {};
    const auto d = kept_.intern(domain);
    const auto o = kept_.intern(op_type);
    const auto key = std::uint64_t{static_cast<std::uint32_t>(d)} << 32U | static_cast<std::uint32_t>(o);
    if (const auto it = operator_ids_.find(key); it != operator_ids_.end()) return it->second;
    const auto& made = operators_.emplace_back(operator_name{.domain = keep(domain).view(), .op_type = keep(op_type).view()});
    operator_ids_.emplace(key, &made);
    return &made;
}

kept_text graph_model::keep(std::string_view text) {
    const auto id = static_cast<std::uint32_t>(kept_.intern(text));
    while (kept_views_.size() <= id) kept_views_.push_back(kept_.text(name_id{static_cast<std::uint32_t>(kept_views_.size())}));
    return kept_text(&kept_views_[id]);
}

std::optional<attribute_value> graph_model::attribute(node_id n, std::string_view name) const {
    const auto& nd = nodes[n];
    for (const auto& a : nd.set_attributes())
        if (a.name == name) return decoded(a);
    if (nd.message == none) return std::nullopt;
    if (std::find(nd.dropped_attributes().begin(), nd.dropped_attributes().end(), name) != nd.dropped_attributes().end())
        return std::nullopt;
    const auto& t = tree();
    if (!t.stores_fields(nd.message)) return std::nullopt;  // no attributes (node_fields::on_demand)
    for (const auto& f : t.fields(nd.message)) {
        if (f.number() != number(onnx::node_field::attribute) || f.child == none) continue;
        if (t.find_text(f.child, number(onnx::attribute_field::name)) == name) return read_attribute(t, f.child);
    }
    return std::nullopt;
}

std::vector<std::uint32_t> graph_model::attribute_messages(node_id n) const {
    std::vector<std::uint32_t> out;
    const auto& nd = nodes[n];
    if (nd.message == none) return out;
    const auto& t = tree();
    if (!t.stores_fields(nd.message)) return out;  // no attributes (node_fields::on_demand)
    for (const auto& f : t.fields(nd.message)) {
        if (f.number() != number(onnx::node_field::attribute) || f.child == none) continue;
        const auto name = t.find_text(f.child, number(onnx::attribute_field::name));
        if (std::find(nd.dropped_attributes().begin(), nd.dropped_attributes().end(), name) != nd.dropped_attributes().end())
            continue;
        out.push_back(f.child);
    }
    return out;
}

std::vector<attribute_value> graph_model::attributes(node_id n) const {
    std::vector<attribute_value> out;
    for (const auto m : attribute_messages(n)) out.push_back(read_attribute(tree(), m));
    for (const auto& a : nodes[n].set_attributes()) out.push_back(decoded(a));
    return out;
}

void graph_model::set_attribute(node_id n, integer_attribute a) {
    ++edits_;
    auto& nd = nodes[n];
    if (std::find(nd.dropped_attributes().begin(), nd.dropped_attributes().end(), a.name) == nd.dropped_attributes().end())
        nd.extras().dropped_attributes.push_back(a.name);
    nd.changed = true;
    for (auto& existing : nd.extras().set_attributes) {
        if (existing.name == a.name) {
            existing = std::move(a);
            return;
        }
    }
    nd.extras().set_attributes.push_back(std::move(a));
}

site_id graph_model::site_of(std::uint32_t tensor_message) const {
    // Sought in the sites, which are in message order (find_tensors), rather than kept in
    // a table by message: that took 4 bytes for every message of the tree, a million
    // nodes' among them, to find the few that are tensors.
    const auto& sites = file_->sites;
    const auto at = std::lower_bound(sites.begin(), sites.end(), tensor_message,
                                     [](const onnx::tensor_site& s, std::uint32_t m) { return s.message < m; });
    if (at == sites.end() || at->message != tensor_message) return none;
    return site_id{static_cast<std::uint32_t>(at - sites.begin())};
}

std::int32_t graph_model::tensor_type(tensor_id t) const {
    const auto& x = tensors[t];
    if (x.site != none) return file_->data_type(x.site);
    const auto* c = computed(t);
    return c != nullptr ? c->data_type : 0;
}

std::vector<std::int64_t> graph_model::tensor_dims(tensor_id t) const {
    const auto& x = tensors[t];
    if (x.site != none) return file_->tensor(x.site)->dims.to_vector();
    const auto* c = computed(t);
    return c != nullptr ? c->dims : std::vector<std::int64_t>{};
}

onnx::tensor_dims graph_model::dims_view(tensor_id t) const {
    const auto& x = tensors[t];
    if (x.site != none) return file_->tensor(x.site)->dims;
    const auto* c = computed(t);
    return c != nullptr ? onnx::tensor_dims(std::span<const std::int64_t>(c->dims)) : onnx::tensor_dims{};
}

std::uint64_t graph_model::tensor_bytes(tensor_id t) const {
    const auto& x = tensors[t];
    if (x.site != none) return file_->tensor(x.site)->expected_bytes.value_or(0);
    const auto* c = computed(t);
    if (c == nullptr) return 0;
    std::uint64_t count = 1;
    for (const auto d : c->dims) count *= static_cast<std::uint64_t>(d);
    const auto bytes = onnx::raw_byte_size(c->data_type, count);
    return bytes ? *bytes : 0;
}

void graph_model::remove_node(node_id n) {
    ++edits_;
    auto& nd = nodes[n];
    if (nd.removed) return;
    nd.removed = true;
    removals_ = true;
    scopes[nd.scope].changed = true;
    // Every scope below it goes too (scopes are in pre-order, so a sweep settles them).
    std::vector<scope_id> pending(nd.subgraphs().begin(), nd.subgraphs().end());
    while (!pending.empty()) {
        const auto s = pending.back();
        pending.pop_back();
        scopes[s].removed = true;
        for (const auto inner : scopes[s].nodes)
            for (const auto sub : nodes[inner].subgraphs()) pending.push_back(sub);
    }
}

void graph_model::remove_tensor(tensor_id t) {
    ++edits_;
    if (tensors[t].removed) return;
    tensors[t].removed = true;
    removals_ = true;
    scopes[tensors[t].scope].changed = true;
}

node_id graph_model::add_node(scope_id s, node_id after, std::string_view op_type, name_list inputs, name_list outputs,
                              std::string_view name) {
    ++edits_;
    const auto id = nodes.push_back({.scope = s,
                                     .original_scope = s,
                                     .changed = true,
                                     .op = operator_of({}, op_type),
                                     .inputs = std::move(inputs),
                                     .outputs = std::move(outputs)});
    if (!name.empty()) nodes[id].extras().name = keep(name);
    keep_listed(s);
    auto& list = scopes[s].nodes;
    const auto at = std::find(list.begin(), list.end(), after);
    list.insert(at == list.end() ? list.end() : at + 1, id);
    scopes[s].changed = true;
    return id;
}

tensor_id graph_model::add_tensor(scope_id s, name_id name, std::int32_t data_type, std::vector<std::int64_t> dims,
                                  computed_values values) {
    ++edits_;
    const auto recipe = static_cast<std::uint32_t>(computed_.size());
    computed_.push_back({data_type, std::move(dims), std::move(values)});
    const auto id = tensors.push_back({.scope = s, .name = name, .computed = recipe});
    scopes[s].initializers.push_back(id);
    scopes[s].changed = true;
    return id;
}

void graph_model::set_input(node_id n, std::size_t slot, name_id name) {
    ++edits_;
    auto& nd = nodes[n];
    if (slot >= nd.inputs.size()) nd.inputs.resize(slot + 1, empty_name);
    if (nd.inputs[slot] == name) return;
    nd.inputs[slot] = name;
    nd.changed = true;
}

void graph_model::set_output(node_id n, std::size_t slot, name_id name) {
    ++edits_;
    auto& nd = nodes[n];
    if (nd.outputs[slot] == name) return;
    nd.outputs[slot] = name;
    nd.changed = true;
}

void graph_model::set_graph_output(scope_id s, std::size_t slot, name_id name) {
    ++edits_;
    auto& outputs = scopes[s].outputs;
    if (outputs[slot] == name) return;
    outputs[slot] = name;
    scopes[s].changed = true;
}

void graph_model::drop_attribute(node_id n, std::string name) {
    ++edits_;
    nodes[n].extras().dropped_attributes.push_back(std::move(name));
    nodes[n].changed = true;
}

void graph_model::rename_tensor(tensor_id t, name_id name) {
    ++edits_;
    tensors[t].name = name;
    tensors[t].renamed = true;
    scopes[tensors[t].scope].changed = true;
}

void graph_model::rename_value_infos(scope_id s, name_id from, name_id to) {
    ++edits_;
    for (auto& vi : value_infos) {
        if (vi.removed || vi.scope != s || vi.name != from) continue;
        vi.name = to;
        scopes[s].changed = true;
    }
}

void graph_model::remove_value_info(value_info_id v) {
    ++edits_;
    if (value_infos[v].removed) return;
    value_infos[v].removed = true;
    removals_ = true;
    scopes[value_infos[v].scope].changed = true;
}

void graph_model::remove_function(function_id f) {
    ++edits_;
    auto& fn = functions[f];
    fn.removed = true;
    scopes[fn.scope].removed = true;
    // Scopes are in pre-order: one sweep reaches every scope inside the function's.
    for (auto s = scope_id{fn.scope.value + 1}; scopes.contains(s); s = scope_id{s.value + 1})
        if (scopes[s].parent != none && scopes[scopes[s].parent].removed) scopes[s].removed = true;
}

std::vector<node_id> graph_model::move_contents(scope_id from, scope_id to, node_id before) {
    ++edits_;
    auto& target = scopes[to];
    auto& moved = scopes[from];
    std::vector<node_id> moving;
    for (const auto m : moved.nodes)
        if (!nodes[m].removed) moving.push_back(m);
    keep_listed(to);
    keep_listed(from);
    target.nodes.insert(std::find(target.nodes.begin(), target.nodes.end(), before), moving.begin(), moving.end());
    for (const auto m : moving) {
        nodes[m].scope = to;
        for (const auto sub : nodes[m].subgraphs()) scopes[sub].parent = to;
    }
    for (const auto t : moved.initializers) {
        if (tensors[t].removed) continue;
        tensors[t].scope = to;
        target.initializers.push_back(t);
    }
    for (const auto v : moved.value_infos) {
        if (value_infos[v].removed) continue;
        value_infos[v].scope = to;
        target.value_infos.push_back(v);
    }
    moved.nodes.clear();
    moved.initializers.clear();
    moved.value_infos.clear();
    target.changed = true;
    return moving;
}

void graph_model::keep_listed(scope_id s) {
    for (auto* walk = walks_; walk != nullptr; walk = walk->outer()) {
        if (walk->scope != s || walk->copied) continue;
        const auto& list = scopes[s].nodes;
        walk->before.assign(list.begin(), list.end());
        walk->copied = true;
    }
}

void graph_model::compact() {
    // Not an edit: it drops only what earlier edits removed. The passes call it after each
    // run, most of which remove nothing: a sweep of a million nodes' flags each time.
    if (!removals_) return;
    removals_ = false;
    if (walks_ != nullptr)
        for (const auto s : scopes.ids()) keep_listed(s);
    for (auto& s : scopes) {
        std::erase_if(s.nodes, [&](node_id n) { return nodes[n].removed; });
        std::erase_if(s.initializers, [&](tensor_id t) { return tensors[t].removed; });
        std::erase_if(s.value_infos, [&](value_info_id v) { return value_infos[v].removed; });
    }
}

std::string graph_model::scope_path(scope_id s) const {
    const auto& sc = scopes[s];
    if (sc.kind == scope_kind::main) return "graph";
    if (sc.kind == scope_kind::function) {
        for (const auto& fn : functions)
            if (fn.scope == s) return "function " + (fn.domain.empty() ? std::string() : fn.domain + ".") + fn.name;
        return "function";
    }
    const auto& owner = nodes[sc.owner];
    return scope_path(owner.scope) + "/" + std::string(owner.op_type()) + " '" + node_label(sc.owner) + "'/" + sc.attribute;
}

std::string_view graph_model::node_name(node_id n) const {
    const auto& nd = nodes[n];
    if (nd.message == none) return nd.lists.get() != nullptr ? nd.lists.get()->name : std::string_view{};
    std::vector<onnx::field_entry> scratch;
    std::string_view name;
    for (const auto& f : tree().read_fields(nd.message, scratch))
        if (f.number() == number(onnx::node_field::name) && f.type() == proto::wire_type::length_delimited) name = tree().text(f);
    return name;
}

std::string graph_model::node_label(node_id n) const {
    const auto& nd = nodes[n];
    if (const auto name = node_name(n); !name.empty()) return std::string(name);
    for (const auto o : nd.outputs)
        if (o != empty_name) return std::string(nd.op_type()) + "->" + std::string(text(o));
    return std::string(nd.op_type());
}

std::size_t graph_model::live_node_count() const {
    std::size_t count = 0;
    for (const auto n : nodes.ids())
        if (node_live(n)) ++count;
    return count;
}

std::uint64_t nodes_within(const graph_model& model, node_id n) {
    std::uint64_t count = 1;
    for (const auto s : model.nodes[n].subgraphs())
        for (const auto inner : model.scopes[s].nodes)
            if (!model.nodes[inner].removed) count += nodes_within(model, inner);
    return count;
}

std::uint64_t bytes_within(const graph_model& model, node_id n) {
    std::uint64_t bytes = 0;
    for (const auto s : model.nodes[n].subgraphs()) {
        for (const auto t : model.scopes[s].initializers)
            if (!model.tensors[t].removed) bytes += model.tensor_bytes(t);
        for (const auto inner : model.scopes[s].nodes)
            if (!model.nodes[inner].removed) bytes += bytes_within(model, inner);
    }
    return bytes;
}

bool can_add_initializers(const graph_model& model) {
    const auto* ir = model.tree().find(0, onnx::number(onnx::model_field::ir_version));
    return ir == nullptr || model.tree().value(*ir) >= 4;
}

}  // namespace onnxstream::graph
