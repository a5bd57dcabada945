// shape: Shape and Size of a tensor whose shape is known statically (graph/value_shapes.hpp)
// become initializers, and so does Gather of a Shape when the dims it picks are known,
// even where other dims are symbolic. Symbolic dims are never replaced.
#include <onnxstream/passes/constant_evaluator.hpp>

#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/passes/pass_registry.hpp>
#include "node_rewriter.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace onnxstream::passes {

namespace {

struct shape_folder : shape_rewriter {
    using shape_rewriter::shape_rewriter;

    bool replaceable(node_id n) const {
        const auto v = index.output(n, 0);
        return v != none && !index.at(v).pinned && !index.is_graph_output(v) &&
               model.scopes[model.nodes[n].scope].kind != scope_kind::function;
    }

    void replace(node_id n, host_tensor value, std::string detail) {
        const auto& nd = model.nodes[n];
        context.findings.add(node_finding(model, n, finding_kind::folded_shape, std::move(detail)));
        ++changes;
        if (report_only) return;
        computed_values values;
        values.has_bytes = true;
        values.bytes = std::move(value.bytes);
        (void)model.add_tensor(nd.scope, nd.outputs[0], value.data_type, std::move(value.dims), std::move(values));
        model.remove_node(n);
    }

    // The dims of node `n`'s Shape input in [start, end), when every one is known.
    std::optional<std::vector<std::int64_t>> shape_values(node_id n) const {
        const auto in = index.input(n, 0);
        if (in == none || !shapes[in].dims) return std::nullopt;
        const auto& dims = *shapes[in].dims;
        auto attr = [&](std::string_view name, std::int64_t fallback) {
            const auto a = model.attribute(n, name);
            return a && a->i ? *a->i : fallback;
        };
        const auto t = shape_tensor(dims, attr("start", 0), attr("end", std::numeric_limits<std::int64_t>::max()));
        std::vector<std::int64_t> v(t.bytes.size() / 8);
        if (!v.empty()) std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
        return v;
    }

    static host_tensor int64s(std::vector<std::int64_t> dims, const std::vector<std::int64_t>& values) {
        host_tensor t{7, std::move(dims), std::vector<std::byte>(values.size() * 8)};
        if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
        return t;
    }

    void visit(node_id n) {
        const auto& nd = model.nodes[n];
        if ((!nd.domain().empty() && nd.domain() != "ai.onnx") || nd.outputs.size() != 1 || nd.inputs.empty()) return;
        if (nd.op_type() == "Shape" || nd.op_type() == "Size") {
            const auto in = index.input(n, 0);
            if (in == none || !shapes[in].dims || index.at(in).kind == value_kind::initializer) return;  // fold-constants' work
            if (!replaceable(n)) return;
            if (nd.op_type() == "Size") {
                if (!shapes[in].fully_known()) return;
                std::int64_t size = 1;
                for (const auto d : *shapes[in].dims) size *= d;
                return replace(n, int64s({}, {size}), "the input's shape is known");
            }
            const auto values = shape_values(n);
            if (!values || std::any_of(values->begin(), values->end(), [](std::int64_t d) { return d < 0; })) return;
            return replace(n, int64s({static_cast<std::int64_t>(values->size())}, *values), "the input's shape is known");
        }
        if (nd.op_type() == "Gather" && nd.inputs.size() == 2) {
            const auto data = index.input(n, 0);
            const auto producer = index.producer(data);
            if (producer == none || model.nodes[producer].op_type() != "Shape" || !model.nodes[producer].domain().empty()) return;
            const auto values = shape_values(producer);
            const auto picks = constant_integers(model, index, context.reader, index.input(n, 1));
            const auto c = find_constant(model, index, index.input(n, 1));
            if (!values || !picks || !c || !replaceable(n)) return;
            std::vector<std::int64_t> out;
            const auto size = static_cast<std::int64_t>(values->size());
            for (auto p : *picks) {
                if (p < -size || p >= size) return;
                if (p < 0) p += size;
                const auto d = (*values)[static_cast<std::size_t>(p)];
                if (d < 0) return;  // symbolic: stays
                out.push_back(d);
            }
            return replace(n, int64s(c->dims, out), "the dims it picks are known");
        }
    }

    void run() { visit_live_nodes_if_initializers_allowed(*this); }
};

}  // namespace

pass_entry shape_folding_pass() {
    return {
        .name = "shape",
        .summary = "Shape/Size of static shapes (and Gather of known dims) -> initializer",
        .run = run_rewriter<shape_folder>,
        .analyze = analyze_rewriter<shape_folder>,
        .headline = {.kind = finding_kind::folded_shape, .done = "folded", .would = "would fold", .noun = "Shape/Size/Gather"},
        .always_count_nodes = false};
}

}  // namespace onnxstream::passes
