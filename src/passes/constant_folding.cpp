// fold-constants: Constant nodes become initializers, and a node whose inputs are all
// constant is evaluated (passes/constant_evaluator.hpp) and replaced by an initializer of
// its output's name, so its consumers need no change. Only the inputs of such a node are
// read, each at most the fold limit; Shape and Size of a constant read nothing.
//
// Left alone, and reported: nodes in local functions (a FunctionProto has no
// initializers), nodes whose output is a graph output (an initializer is not computed by
// the graph) or is used by a training graph, ops of other domains, and whatever the
// evaluator refuses. Random ops are never evaluated (the evaluator does not know them).
#include <onnxstream/onnx/data_type.hpp>

#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/passes/constant_evaluator.hpp>
#include <onnxstream/passes/pass_registry.hpp>
#include "node_rewriter.hpp"

#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <unordered_map>

namespace onnxstream::passes {

namespace {

using onnx::data_type;

struct folder {
    pass_context& context;
    graph_model& model;
    const std::shared_ptr<const graph_index> held_index;  // the run's snapshot (pass_context::index)
    const graph_index& index;
    std::unordered_map<value_id, host_tensor> folded;  // value -> what this run computed for it
    bool report_only = false;                          // analyze: find, change nothing
    std::uint64_t changes = 0;

    explicit folder(pass_context& c) : context(c), model(c.model), held_index(c.index()), index(*held_index) {}

    void skip(node_id n, std::string why) {
        finding f;
        f.kind = finding_kind::skipped;
        f.scope = model.scope_path(model.nodes[n].scope);
        f.op_type = model.nodes[n].op_type();
        f.names.push_back(model.node_label(n));
        f.detail = std::move(why);
        context.findings.add(std::move(f));
    }

    // The value of a Constant node, exactly (value_ints are read as integers, not doubles).
    std::optional<result<host_tensor>> constant_node_value(node_id n) const {
        const auto attributes = model.attribute_messages(n);
        if (attributes.size() != 1) return std::nullopt;
        const auto a = read_attribute(model.tree(), attributes[0]);
        host_tensor t;
        if (a.name == "value" && a.tensor != none) {
            const auto site = model.site_of(a.tensor);
            if (site == none) return std::nullopt;
            const auto tensor = model.file().tensor(site);
            const auto& info = *tensor;
            if (element_size(info.data_type) == 0) return std::nullopt;
            t.data_type = info.data_type;
            t.dims = info.dims.to_vector();
            if (t.elements() * element_size(t.data_type) > context.limits.fold_bytes)
                return result<host_tensor>(failure(error_code::unsupported, "larger than the fold limit"));
            auto bytes = context.reader.site_bytes(site);
            if (!bytes) return result<host_tensor>(failure(std::move(bytes).error()));
            t.bytes = std::move(*bytes);
            return result<host_tensor>(std::move(t));
        }
        auto put = [&](const auto& values, data_type type, bool scalar) {
            using element = typename std::decay_t<decltype(values)>::value_type;
            t.data_type = static_cast<std::int32_t>(type);
            if (!scalar) t.dims = {static_cast<std::int64_t>(values.size())};
            t.bytes.resize(values.size() * sizeof(element));
            for (std::size_t k = 0; k < values.size(); ++k)
                std::memcpy(t.bytes.data() + k * sizeof(element), &values[k], sizeof(element));
        };
        if (a.name == "value_int" && a.i) put(std::vector<std::int64_t>{*a.i}, data_type::int64, true);
        else if (a.name == "value_ints") put(a.ints, data_type::int64, false);
        else if (a.name == "value_float" && a.f) put(std::vector<float>{static_cast<float>(*a.f)}, data_type::float32, true);
        else if (a.name == "value_floats") {
            std::vector<float> v;
            for (const auto x : a.floats) v.push_back(static_cast<float>(x));
            put(v, data_type::float32, false);
        } else {
            return std::nullopt;
        }
        return result<host_tensor>(std::move(t));
    }

    // The value `v` holds, if it is a constant: read (up to the fold limit), or only its
    // type and dims when `dims_only`. Empty when `v` is not constant.
    std::optional<result<host_tensor>> value_of(value_id v, bool dims_only) const {
        if (const auto it = folded.find(v); it != folded.end()) return result<host_tensor>(it->second);
        const auto& val = index.at(v);
        if (val.kind == value_kind::initializer && !val.overridable) {
            host_tensor t;
            t.data_type = model.tensor_type(val.tensor);
            t.dims = model.tensor_dims(val.tensor);
            if (dims_only) return result<host_tensor>(std::move(t));
            if (element_size(t.data_type) == 0)
                return result<host_tensor>(
                    failure(error_code::unsupported, "an input of type " + onnx::data_type_name(t.data_type) + " is not read"));
            if (t.elements() * element_size(t.data_type) > context.limits.fold_bytes)
                return result<host_tensor>(failure(error_code::unsupported, "an input is larger than the fold limit"));
            auto bytes = context.reader.tensor_bytes(model, val.tensor);
            if (!bytes) return result<host_tensor>(failure(std::move(bytes).error()));
            t.bytes = std::move(*bytes);
            return result<host_tensor>(std::move(t));
        }
        const auto n = index.producer(v);
        if (n == none || model.nodes[n].op_type() != "Constant" || !model.nodes[n].domain().empty()) return std::nullopt;
        return constant_node_value(n);
    }

    // Why node `n`'s outputs cannot become initializers; empty when they can.
    std::optional<std::string> cannot_replace(node_id n) const {
        for (std::size_t k = 0; k < model.nodes[n].outputs.size(); ++k) {
            const auto v = index.output(n, k);
            if (v == none) continue;
            if (index.at(v).pinned) return "a training graph uses its output";
            if (index.is_graph_output(v)) return "its output is a graph output";
        }
        return std::nullopt;
    }

    void replace(node_id n, std::vector<host_tensor> outputs, finding_kind kind, std::string detail) {
        const auto& nd = model.nodes[n];
        finding f;
        f.kind = kind;
        f.scope = model.scope_path(nd.scope);
        f.op_type = nd.op_type();
        f.names.push_back(model.node_label(n));
        f.nodes = 1;
        f.detail = std::move(detail);
        context.findings.add(std::move(f));
        ++changes;
        for (std::size_t k = 0; k < outputs.size() && k < nd.outputs.size(); ++k) {
            const auto v = index.output(n, k);
            if (v == none) continue;
            if (!report_only) {
                computed_values values;
                values.has_bytes = true;
                values.bytes = outputs[k].bytes;
                (void)model.add_tensor(nd.scope, nd.outputs[k], outputs[k].data_type, outputs[k].dims, std::move(values));
            }
            folded[v] = std::move(outputs[k]);
        }
        if (!report_only) model.remove_node(n);
    }

    void visit(node_id n) {
        const auto& nd = model.nodes[n];
        if (!nd.domain().empty() && nd.domain() != "ai.onnx") return;
        const bool is_constant = nd.op_type() == "Constant";
        if (!is_constant && !can_evaluate(nd.op_type())) return;
        if (nd.outputs.size() != 1 || nd.outputs[0] == empty_name) return;

        if (is_constant) {
            auto value = constant_node_value(n);
            if (!value) return skip(n, "a sparse or string Constant stays a node");
            if (!*value) return skip(n, value->error().message);
            if (model.scopes[nd.scope].kind == scope_kind::function) return;
            if (const auto why = cannot_replace(n)) return skip(n, *why);
            return replace(n, {std::move(**value)}, finding_kind::folded_constant, "Constant -> initializer");
        }
        // Every input constant (or omitted); Shape and Size need only the dims.
        const bool dims_only = nd.op_type() == "Shape" || nd.op_type() == "Size";
        std::vector<host_tensor> inputs(nd.inputs.size());
        evaluated_node e;
        e.op_type = nd.op_type();
        e.opset = model.opset("");
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
            if (nd.inputs[k] == empty_name) {
                e.inputs.push_back(nullptr);
                continue;
            }
            const auto v = index.input(n, k);
            if (v == none) return;
            auto value = value_of(v, dims_only);
            if (!value) return;  // not constant: nothing to say
            if (!*value) return skip(n, value->error().message);
            inputs[k] = std::move(**value);
            e.inputs.push_back(&inputs[k]);
        }
        if (model.scopes[nd.scope].kind == scope_kind::function) return skip(n, "nodes of local functions are not folded");
        if (const auto why = cannot_replace(n)) return skip(n, *why);
        for (auto& a : model.attributes(n)) {
            if (a.name == "value" && a.tensor != none) {
                const auto site = model.site_of(a.tensor);
                if (site == none) return skip(n, "its value attribute is not readable");
                host_tensor t;
                const auto tensor = model.file().tensor(site);
                t.data_type = tensor->data_type;
                t.dims = tensor->dims.to_vector();
                auto bytes = context.reader.site_bytes(site);
                if (!bytes) return skip(n, bytes.error().message);
                t.bytes = std::move(*bytes);
                e.value_attribute = std::move(t);
            }
            e.attributes.push_back(std::move(a));
        }
        auto outputs = evaluate(e, context.limits.fold_bytes);
        if (!outputs) return skip(n, outputs.error().message);
        replace(n, std::move(*outputs), finding_kind::folded_constant, {});
    }

    void run() { visit_live_nodes_if_initializers_allowed(*this); }
};

}  // namespace

pass_entry constant_folding_pass() {
    return {.name = "fold-constants",
            .summary = "nodes of constant inputs evaluated as ONNX Runtime does; Constant -> initializer",
            .run = run_rewriter<folder>,
            .analyze = analyze_rewriter<folder>,
            .headline = {.kind = finding_kind::folded_constant, .done = "folded", .would = "would fold", .noun = "node"},
            .always_count_nodes = false};
}

}  // namespace onnxstream::passes
