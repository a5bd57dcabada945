#include <onnxstream/ops/graph_view.hpp>

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/tensor_type.hpp>
#include <onnxstream/report/json_writer.hpp>

#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace onnxstream::ops {

namespace {

using graph::node_id;
using graph::value_id;
using onnx::number;

constexpr std::uint32_t absent = ~std::uint32_t{0};

// AttributeProto.AttributeType, as the page names it.
const char* attribute_type_name(std::int32_t type) {
    static constexpr const char* names[] = {"UNDEFINED",      "FLOAT",      "INT",        "STRING",  "TENSOR", "GRAPH",
                                            "FLOATS",         "INTS",       "STRINGS",    "TENSORS", "GRAPHS", "SPARSE_TENSOR",
                                            "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return type >= 0 && type < static_cast<std::int32_t>(std::size(names)) ? names[type] : "UNKNOWN";
}

template <class T>
std::string list_text(const std::vector<T>& values, std::size_t shown) {
    std::string text = "[";
    for (std::size_t i = 0; i < values.size() && i < shown; ++i) {
        if (i > 0) text += ", ";
        if constexpr (std::is_floating_point_v<T>) {
            report::json_writer number;  // the shortest text that reads back the same
            number.value(static_cast<double>(values[i]));
            text += number.text();
        } else {
            text += std::to_string(values[i]);
        }
    }
    if (values.size() > shown) text += ", ... (" + std::to_string(values.size()) + " values)";
    return text + "]";
}

// What the page shows of an attribute's value: small values whole, long ones cut short.
std::string attribute_text(const graph::attribute_value& a, std::uint32_t max_text) {
    std::string text;
    if (a.f) {
        report::json_writer number;
        number.value(*a.f);
        text = number.text();
    } else if (a.i) {
        text = std::to_string(*a.i);
    } else if (a.s) {
        text = std::string(*a.s);
    } else if (!a.ints.empty()) {
        text = list_text(a.ints, 16);
    } else if (!a.floats.empty()) {
        text = list_text(a.floats, 16);
    } else if (a.has_graph) {
        text = "a graph";
    } else if (a.tensor != onnx::no_index) {
        text = "a tensor";
    }
    if (text.size() > max_text) text = text.substr(0, max_text) + "...";
    return text;
}

struct declared_type {
    std::string type;
    std::vector<std::string> shape;
    bool has_shape = false;
};

// The types the main graph declares (inputs, outputs, value_info), by value name.
std::unordered_map<std::string_view, declared_type> declared_types(const onnx::message_tree& tree, std::uint32_t graph) {
    std::unordered_map<std::string_view, declared_type> declared;
    for (const auto& g : tree.fields(graph)) {
        const auto n = g.number();
        if (g.child == onnx::no_index || (n != number(onnx::graph_field::input) && n != number(onnx::graph_field::output) &&
                                          n != number(onnx::graph_field::value_info)))
            continue;
        const auto name = tree.find_text(g.child, number(onnx::value_info_field::name));
        const auto* type = tree.find(g.child, number(onnx::value_info_field::type));
        if (type == nullptr || type->type() != proto::wire_type::length_delimited) continue;
        const auto token = tree.token(*type);
        auto read = onnx::read_tensor_type(tree.bytes(), token.payload_offset, token.end_offset());
        if (read.element_type.empty() && !read.has_shape) continue;
        declared.emplace(name, declared_type{std::move(read.element_type), std::move(read.shape), read.has_shape});
    }
    return declared;
}

const char* kind_name(graph::value_kind kind) {
    switch (kind) {
        case graph::value_kind::graph_input: return "input";
        case graph::value_kind::initializer:
        case graph::value_kind::sparse_initializer: return "initializer";
        case graph::value_kind::node_output: return "output";
        case graph::value_kind::undefined: return "undefined";
    }
    return "undefined";
}

// An index into a short table of texts, each once.
class text_table {
public:
    std::uint32_t of(std::string_view text) {
        const auto [it, added] = ids_.try_emplace(std::string(text), static_cast<std::uint32_t>(texts_.size()));
        if (added) texts_.emplace_back(text);
        return it->second;
    }
    void write(report::json_writer& json) const {
        json.begin_array();
        for (const auto& t : texts_) json.value(t);
        json.end_array();
    }

private:
    std::map<std::string, std::uint32_t, std::less<>> ids_;
    std::vector<std::string> texts_;
};

// A document kept as the writer hands it over, in pieces of about 64 KiB, joined once at
// the end: a string grown piece by piece would copy a 20 MB document over and over, on
// fresh pages each time. It stops keeping them past the limit.
class piece_list {
public:
    explicit piece_list(std::uint64_t limit) : limit_(limit) {}
    [[nodiscard]] std::function<void(std::string_view)> sink() {
        return [this](std::string_view piece) {
            size_ += piece.size();
            if (size_ <= limit_) pieces_.emplace_back(piece);
        };
    }
    [[nodiscard]] bool over() const noexcept { return size_ > limit_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    void move_to(std::vector<std::string>& out) {
        for (auto& p : pieces_) out.push_back(std::move(p));
        pieces_.clear();
    }

private:
    std::uint64_t limit_;
    std::uint64_t size_ = 0;
    std::vector<std::string> pieces_;
};

}  // namespace

result<std::vector<std::string>> graph_view_pieces(const std::filesystem::path& path, const graph_view_options& options) {
    ONNXSTREAM_ASSIGN(const auto bound,
                      onnx::bound_model::open(path, options, onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));
    ONNXSTREAM_ASSIGN(const auto model, graph::graph_model::build(bound.model));
    const graph::graph_index index(model);
    const graph::tensor_reader reader(bound.model, &bound.data);
    const auto shapes = graph::infer_shapes(model, index, reader);
    const auto& main = model.scopes[graph::main_scope];
    // The types each graph declares, read when one of its values is first shown (a
    // function declares none that this reads).
    std::vector<std::optional<std::unordered_map<std::string_view, declared_type>>> declared(model.scopes.size());
    const auto declared_in = [&](graph::scope_id s) -> const std::unordered_map<std::string_view, declared_type>& {
        static const std::unordered_map<std::string_view, declared_type> nothing;
        if (s == graph::none) return nothing;
        auto& d = declared[s.value];
        if (!d) {
            d.emplace();
            if (model.scopes[s].kind != graph::scope_kind::function) *d = declared_types(model.tree(), model.scopes[s].message);
        }
        return *d;
    };

    // The graphs shown: the main one, then every If / Loop / Scan body (at any depth) and
    // local function, in scope order (a body after the graph holding it).
    std::vector<std::int64_t> graph_of_scope(model.scopes.size(), -1);
    std::vector<graph::scope_id> sub_scopes;
    for (const auto s : model.scopes.ids()) {
        if (s == graph::main_scope || model.scopes[s].removed) continue;
        graph_of_scope[s.value] = static_cast<std::int64_t>(sub_scopes.size());
        sub_scopes.push_back(s);
    }
    // Each graph's live nodes in order; a node's place in its graph's list.
    std::vector<std::vector<node_id>> nodes_of(model.scopes.size());
    std::vector<std::uint32_t> place(model.nodes.size(), absent);
    for (const auto s : model.scopes.ids()) {
        if (model.scopes[s].removed) continue;
        for (const auto n : model.scopes[s].nodes) {
            if (!model.node_live(n) || model.nodes[n].scope != s) continue;
            place[n.value] = static_cast<std::uint32_t>(nodes_of[s.value].size());
            nodes_of[s.value].push_back(n);
        }
    }
    // A call of a local function opens the function's graph as a body opens its own.
    std::map<std::tuple<std::string_view, std::string_view, std::string_view>, std::int64_t> function_graph;
    for (const auto& f : model.functions)
        if (!f.removed && f.scope != graph::none && graph_of_scope[f.scope.value] >= 0)
            function_graph.emplace(std::tuple<std::string_view, std::string_view, std::string_view>(f.domain, f.name, f.overload),
                                   graph_of_scope[f.scope.value]);

    // The values the graphs name, numbered in the order first met (one table for all: a
    // body reading an outer value names the same entry as the graph around it).
    std::vector<std::uint32_t> compact(index.size(), absent);
    std::vector<value_id> shown;
    const auto number_of = [&](value_id v) -> std::int64_t {
        if (v == graph::none) return -1;
        auto& slot = compact[v.value];
        if (slot == absent) {
            slot = static_cast<std::uint32_t>(shown.size());
            shown.push_back(v);
        }
        return slot;
    };
    std::vector<std::int64_t> inputs;
    std::vector<std::int64_t> outputs;
    for (const auto name : main.inputs) inputs.push_back(number_of(index.resolve(graph::main_scope, name)));

    piece_list head(options.max_bytes);
    report::json_writer json(head.sink());
    const auto too_large = [&] {
        return failure(error_code::too_large,
                       "the graph of " + path.filename().string() + " is too large to show: its description passes " +
                           std::to_string(options.max_bytes >> 20U) + " MB",
                       "inspect and analyze still work on it; a graph this size is best read with `onnxstream inspect --json`");
    };
    json.begin_object().field("ok", true).field("graph", model.tree().find_text(main.message, number(onnx::graph_field::name)));
    json.field("nodes_total", static_cast<std::uint64_t>(model.live_node_count()));

    text_table ops;
    text_table domains;
    text_table files;
    graph::file_walk walk(model);
    // A graph's nodes (they fill the tables), into a writer of their own.
    const auto write_nodes = [&](report::json_writer& out, const piece_list& text, const std::vector<node_id>& list) {
        out.begin_array();
        for (const auto n : list) {
            if (text.over()) return false;
            walk.reached(n);
            const auto& node = model.nodes[n];
            out.begin_array().value(model.node_name(n)).value(ops.of(node.op_type())).value(domains.of(node.domain()));
            out.begin_array();
            for (std::size_t k = 0; k < node.inputs.size(); ++k) out.value(number_of(index.input(n, k)));
            out.end_array().begin_array();
            for (std::size_t k = 0; k < node.outputs.size(); ++k) out.value(number_of(index.output(n, k)));
            // The graphs it opens: its bodies, or the local function it calls.
            out.end_array().begin_array();
            for (const auto s : node.subgraphs()) out.value(graph_of_scope[s.value]);
            if (!function_graph.empty()) {
                const auto f = function_graph.find({node.domain(), node.op_type(), node.overload()});
                if (f != function_graph.end()) out.value(f->second);
            }
            out.end_array().begin_array();
            for (const auto& a : model.attributes(n))
                out.begin_array()
                    .value(a.name)
                    .value(attribute_type_name(a.type))
                    .value(attribute_text(a, options.max_attribute_text))
                    .end_array();
            out.end_array().end_array();
        }
        out.end_array();
        return true;
    };
    piece_list node_text(options.max_bytes);
    report::json_writer node_json(node_text.sink());
    if (!write_nodes(node_json, node_text, nodes_of[graph::main_scope.value])) return too_large();
    node_json.flush();
    if (node_text.over()) return too_large();
    for (std::size_t k = 0; k < main.outputs.size(); ++k) outputs.push_back(number_of(index.graph_output(graph::main_scope, k)));

    // The other graphs, each with the values it reads from the graphs around it (its
    // nodes' inputs, those of the bodies inside it, its outputs) as its outer inputs.
    piece_list sub_text(options.max_bytes);
    report::json_writer sub_json(sub_text.sink());
    sub_json.begin_array();
    for (const auto s : sub_scopes) {
        if (sub_text.over()) return too_large();
        const auto& sc = model.scopes[s];
        sub_json.begin_object();
        if (sc.kind == graph::scope_kind::function) {
            const graph::function* fn = nullptr;
            for (const auto& f : model.functions)
                if (f.scope == s) fn = &f;
            sub_json.field("kind", "function");
            sub_json.field("name", fn != nullptr ? fn->name : std::string());
            sub_json.field("domain", fn != nullptr ? fn->domain : std::string());
            sub_json.field("parent", std::int64_t{-1}).field("node", std::int64_t{-1}).field("attribute", "");
        } else {
            const auto parent = model.nodes[sc.owner].scope;
            sub_json.field("kind", "body");
            sub_json.field("name", model.tree().find_text(sc.message, number(onnx::graph_field::name)));
            sub_json.field("parent", graph_of_scope[parent.value]);
            sub_json.field("node", static_cast<std::int64_t>(place[sc.owner.value]));
            sub_json.field("attribute", sc.attribute);
        }
        sub_json.key("nodes");
        if (!write_nodes(sub_json, sub_text, nodes_of[s.value])) return too_large();
        sub_json.key("inputs").begin_array();
        for (const auto name : sc.inputs) sub_json.value(number_of(index.resolve(s, name)));
        sub_json.end_array().key("outputs").begin_array();
        std::vector<value_id> read;
        for (std::size_t k = 0; k < sc.outputs.size(); ++k) {
            const auto v = index.graph_output(s, k);
            sub_json.value(number_of(v));
            read.push_back(v);
        }
        sub_json.end_array().key("outer").begin_array();
        std::vector<graph::scope_id> pending{s};
        while (!pending.empty()) {
            const auto at = pending.back();
            pending.pop_back();
            for (const auto n : nodes_of[at.value]) {
                for (std::size_t k = 0; k < model.nodes[n].inputs.size(); ++k) read.push_back(index.input(n, k));
                for (const auto inner : model.nodes[n].subgraphs()) pending.push_back(inner);
            }
        }
        std::vector<bool> listed;
        for (const auto v : read) {
            if (v == graph::none || index.within(index.at(v).scope, s)) continue;
            const auto k = static_cast<std::size_t>(number_of(v));
            if (k >= listed.size()) listed.resize(k + 1, false);
            if (listed[k]) continue;
            listed[k] = true;
            sub_json.value(static_cast<std::int64_t>(k));
        }
        sub_json.end_array().end_object();
    }
    sub_json.end_array();
    sub_json.flush();
    if (sub_text.over()) return too_large();

    // Initializers of every graph: where each one's bytes are.
    std::vector<std::uint32_t> value_of_tensor(model.tensors.size(), absent);
    for (std::uint32_t i = 0; i < shown.size(); ++i) {
        const auto v = index.at(shown[i]);
        if (v.kind == graph::value_kind::initializer) value_of_tensor[v.tensor.value] = i;
    }
    piece_list tensor_text(options.max_bytes);
    report::json_writer tensor_json(tensor_text.sink());
    tensor_json.begin_array();
    std::vector<std::string> scope_paths(model.scopes.size());
    for (const auto t : model.tensors.ids()) {
        if (tensor_text.over()) return too_large();
        if (!model.tensor_live(t)) continue;
        walk.reached(t);
        const auto& tensor = model.tensors[t];
        tensor_json.begin_array().value(model.text(tensor.name));
        tensor_json.value(value_of_tensor[t.value] == absent ? std::int64_t{-1} : std::int64_t{value_of_tensor[t.value]});
        tensor_json.value(onnx::data_type_name(model.tensor_type(t))).begin_array();
        for (const auto d : model.tensor_dims(t)) tensor_json.value(d);
        tensor_json.end_array().value(model.tensor_bytes(t));
        std::int64_t file = -1;
        std::uint64_t offset = 0;
        const char* storage = "computed";
        if (tensor.site != graph::none) {
            const auto handle = bound.model.tensor(tensor.site);
            storage = onnx::to_string(handle->storage);
            if (const auto b = bound.binding_of(tensor.site); b != graph::none) {
                const auto& binding = bound.data.tensors[b];
                file = files.of(bound.data.files[binding.file].location);
                offset = binding.offset;
            } else if (handle->external) {
                file = files.of(handle->external->location);
                offset = handle->external->offset.value_or(0);
            }
        }
        tensor_json.value(storage).value(file).value(offset);
        if (tensor.scope != graph::main_scope && scope_paths[tensor.scope.value].empty())
            scope_paths[tensor.scope.value] = model.scope_path(tensor.scope);
        tensor_json.value(tensor.scope == graph::main_scope ? std::string() : scope_paths[tensor.scope.value]).end_array();
    }
    tensor_json.end_array();
    tensor_json.flush();
    if (tensor_text.over()) return too_large();

    json.key("ops");
    ops.write(json);
    json.key("domains");
    domains.write(json);
    json.key("files");
    files.write(json);
    json.key("values").begin_array();
    for (const auto v : shown) {
        if (head.over()) return too_large();
        const auto value = index.at(v);
        const auto name = model.text(value.name);
        json.begin_array().value(name).value(kind_name(value.kind));
        const auto& in = declared_in(value.scope);
        const auto d = in.find(name);
        const declared_type* given = d != in.end() ? &d->second : nullptr;
        const graph::value_shape* inferred = shapes.contains(v) ? &shapes[v] : nullptr;
        std::string type = given != nullptr ? given->type : std::string();
        if (type.empty() && inferred != nullptr && inferred->data_type != 0) type = onnx::data_type_name(inferred->data_type);
        json.value(type);
        // A declared shape names its symbolic dims ("batch"): it goes first.
        if (given != nullptr && given->has_shape) {
            json.begin_array();
            for (const auto& s : given->shape) json.value(s);
            json.end_array();
        } else if (inferred != nullptr && inferred->dims) {
            json.begin_array();
            for (const auto dim : *inferred->dims) json.value(dim < 0 ? std::string("?") : std::to_string(dim));
            json.end_array();
        } else {
            json.null();
        }
        json.end_array();
    }
    json.end_array();
    json.key("inputs").begin_array();
    for (const auto v : inputs) json.value(v);
    json.end_array().key("outputs").begin_array();
    for (const auto v : outputs) json.value(v);
    json.end_array();
    json.flush();
    constexpr std::string_view nodes_key = ",\"nodes\":";
    constexpr std::string_view subgraphs_key = ",\"subgraphs\":";
    constexpr std::string_view initializers_key = ",\"initializers\":";
    const auto total = head.size() + node_text.size() + sub_text.size() + tensor_text.size() + nodes_key.size() +
                       subgraphs_key.size() + initializers_key.size() + 1;
    if (total > options.max_bytes) return too_large();
    // The nodes and initializers go in after the tables they index.
    std::vector<std::string> document;
    head.move_to(document);
    document.emplace_back(nodes_key);
    node_text.move_to(document);
    document.emplace_back(subgraphs_key);
    sub_text.move_to(document);
    document.emplace_back(initializers_key);
    tensor_text.move_to(document);
    document.emplace_back("}");
    ONNXSTREAM_TRY(bound.check_unchanged());
    return document;
}

result<std::string> graph_view_json(const std::filesystem::path& path, const graph_view_options& options) {
    ONNXSTREAM_ASSIGN(const auto pieces, graph_view_pieces(path, options));
    std::size_t total = 0;
    for (const auto& p : pieces) total += p.size();
    std::string document;
    document.reserve(total);
    for (const auto& p : pieces) document += p;
    return document;
}

}  // namespace onnxstream::ops
