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
#include <string_view>
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
    void append_to(std::string& out) const {
        for (const auto& p : pieces_) out += p;
    }

private:
    std::uint64_t limit_;
    std::uint64_t size_ = 0;
    std::vector<std::string> pieces_;
};

}  // namespace

result<std::string> graph_view_json(const std::filesystem::path& path, const graph_view_options& options) {
    ONNXSTREAM_ASSIGN(const auto bound,
                      onnx::bound_model::open(path, options, onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));
    ONNXSTREAM_ASSIGN(const auto model, graph::graph_model::build(bound.model));
    const graph::graph_index index(model);
    const graph::tensor_reader reader(bound.model, &bound.data);
    const auto shapes = graph::infer_shapes(model, index, reader);
    const auto& main = model.scopes[graph::main_scope];
    const auto declared = declared_types(model.tree(), main.message);

    // The values the main graph names, numbered in the order first met.
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
    std::vector<node_id> nodes;
    for (const auto n : main.nodes)
        if (model.node_live(n) && model.nodes[n].scope == graph::main_scope) nodes.push_back(n);
    std::vector<std::int64_t> slots;  // per node: its inputs then its outputs, numbered
    for (const auto n : nodes) {
        for (std::size_t k = 0; k < model.nodes[n].inputs.size(); ++k) slots.push_back(number_of(index.input(n, k)));
        for (std::size_t k = 0; k < model.nodes[n].outputs.size(); ++k) slots.push_back(number_of(index.output(n, k)));
    }
    for (std::size_t k = 0; k < main.outputs.size(); ++k) outputs.push_back(number_of(index.graph_output(graph::main_scope, k)));

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
    // Nodes first (they fill the tables), written into a writer of their own.
    piece_list node_text(options.max_bytes);
    report::json_writer node_json(node_text.sink());
    node_json.begin_array();
    std::size_t at = 0;
    graph::file_walk walk(model);
    for (const auto n : nodes) {
        if (node_text.over()) return too_large();
        walk.reached(n);
        const auto& node = model.nodes[n];
        node_json.begin_array().value(model.node_name(n)).value(ops.of(node.op_type)).value(domains.of(node.domain));
        node_json.begin_array();
        for (std::size_t k = 0; k < node.inputs.size(); ++k) node_json.value(slots[at++]);
        node_json.end_array().begin_array();
        for (std::size_t k = 0; k < node.outputs.size(); ++k) node_json.value(slots[at++]);
        node_json.end_array().value(static_cast<std::uint64_t>(node.subgraphs().size())).begin_array();
        for (const auto& a : model.attributes(n))
            node_json.begin_array()
                .value(a.name)
                .value(attribute_type_name(a.type))
                .value(attribute_text(a, options.max_attribute_text))
                .end_array();
        node_json.end_array().end_array();
    }
    node_json.end_array();
    node_json.flush();
    if (node_text.over()) return too_large();

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
        const auto d = declared.find(name);
        const declared_type* given = d != declared.end() ? &d->second : nullptr;
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
    constexpr std::string_view initializers_key = ",\"initializers\":";
    const auto total = head.size() + node_text.size() + tensor_text.size() + nodes_key.size() + initializers_key.size() + 1;
    if (total > options.max_bytes) return too_large();
    // The nodes and initializers go in after the tables they index.
    std::string document;
    document.reserve(total);
    head.append_to(document);
    document += nodes_key;
    node_text.append_to(document);
    document += initializers_key;
    tensor_text.append_to(document);
    document += '}';
    ONNXSTREAM_TRY(bound.check_unchanged());
    return document;
}

}  // namespace onnxstream::ops
