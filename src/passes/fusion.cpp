// fuse: two nodes into one where the result is the same.
//   - Conv without bias, then Add of a per-channel constant ([C,1,...] or [1,C,1,...] of the
//     Conv's type): the constant becomes the Conv's bias. ONNX Runtime adds a bias
//     to each sum once, as the Add did: bit-identical.
//   - MatMul of a 2-D input by a 2-D constant, then Add of a constant [N] or [1,N]: one Gemm.
//     The sums are the same products; ONNX Runtime may add the bias before the last block
//     of them, so the result is within rounding (the fold-bn tolerance), not bit for bit.
//   - Pad (mode constant, constant pads, none negative, none on the batch and channel
//     axes) feeding a Conv, AveragePool or MaxPool: its pads are added to the consumer's
//     `pads`. A Conv pads with zeros, so the Pad's value must be +0; an AveragePool must
//     count the padded cells (count_include_pad = 1, set when it has no pads of its own);
//     a MaxPool ignores them, the same as a -inf Pad only when every window still holds an
//     input cell and no Indices are asked for. ceil_mode and auto_pad are left alone. The
//     consumer's input reads the same cells: bit-identical.
// The first node's output must be read by the second alone and be no graph output; the
// Add's output keeps its name (the fused node produces it).
#include <onnxstream/graph/constant_values.hpp>

#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/passes/pass_registry.hpp>
#include "node_rewriter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_set>

namespace onnxstream::passes {

namespace {

struct fuser : shape_rewriter {
    using shape_rewriter::shape_rewriter;
    std::unordered_set<node_id> used;  // nodes this run fused or rewired

    void note(node_id n, finding_kind kind, std::string detail) {
        finding f;
        f.kind = kind;
        f.scope = model.scope_path(model.nodes[n].scope);
        f.op_type = model.nodes[n].op_type();
        f.names.push_back(model.node_label(n));
        f.nodes = kind == finding_kind::fused_node ? 1 : 0;
        f.detail = std::move(detail);
        context.findings.add(std::move(f));
    }

    // The node feeding input `slot` of `add` when `add` is its only reader, in the same scope.
    node_id sole_producer(node_id add, std::size_t slot, std::string_view op) const {
        const auto v = index.input(add, slot);
        const auto p = index.producer(v);
        if (p == none || model.nodes[p].op_type() != op || !model.nodes[p].domain().empty() || used.contains(p)) return none;
        if (model.nodes[p].scope != model.nodes[add].scope || index.uses(v).size() != 1 || index.at(v).pinned) return none;
        if (is_interface_output(model, index, v)) return none;
        return p;
    }

    std::optional<std::vector<std::byte>> constant_bytes(const constant& c) const {
        if (c.inline_values) return std::nullopt;
        auto bytes = c.tensor != none ? context.reader.tensor_bytes(model, c.tensor) : context.reader.site_bytes(c.site);
        if (!bytes || bytes->size() > context.limits.fold_bytes) return std::nullopt;
        return std::move(*bytes);
    }

    // The Add's output is now produced by `producer`; the Add goes.
    void take_over(node_id producer, node_id add) {
        model.set_output(producer, 0, model.nodes[add].outputs[0]);
        model.remove_node(add);
    }

    bool conv_add(node_id add, std::size_t conv_slot) {
        const auto conv = sole_producer(add, conv_slot, "Conv");
        if (conv == none) return false;
        const auto& cv = model.nodes[conv];
        const auto w = index.input(conv, 1);
        const auto y = index.input(add, conv_slot);
        if (w == none || y == none || !shapes[w].dims || shapes[w].dims->size() < 3 || (*shapes[w].dims)[0] < 0) return false;
        const auto channels = (*shapes[w].dims)[0];
        const auto c = find_constant(model, index, index.input(add, 1 - conv_slot));
        if (!c || c->data_type != shapes[w].data_type || static_cast<std::int64_t>(c->element_count) != channels) return false;
        // Per channel: [C, 1, ...] / [1, C, 1, ...] lined up with axis 1 of the Conv output,
        // whose rank is the weight's.
        const auto rank = shapes[w].dims->size();
        if (c->dims.size() > rank) return false;
        const auto offset = rank - c->dims.size();
        for (std::size_t i = 0; i < c->dims.size(); ++i) {
            const auto axis = offset + i;
            if (c->dims[i] != (axis == 1 ? channels : 1)) return false;
        }
        if (c->dims.size() < rank - 1) return false;  // [C] alone would line up with the last axis
        if (cv.inputs.size() > 2 && cv.inputs[2] != empty_name) {
            note(add, finding_kind::skipped, "the Conv has a bias already (adding to it would round twice)");
            return false;
        }
        auto bytes = constant_bytes(*c);
        if (!bytes) return false;
        note(add, finding_kind::fused_node, "Conv + Add of a per-channel constant -> Conv with bias");
        ++changes;
        used.insert(conv);
        if (report_only) return true;
        computed_values values;
        values.has_bytes = true;
        values.bytes = std::move(*bytes);
        const auto name = model.names.fresh(std::string(model.text(cv.outputs[0])) + ".bias");
        (void)model.add_tensor(cv.scope, name, c->data_type, {channels}, std::move(values));
        model.set_input(conv, 2, name);
        take_over(conv, add);
        return true;
    }

    bool matmul_add(node_id add, std::size_t matmul_slot) {
        const auto mm = sole_producer(add, matmul_slot, "MatMul");
        if (mm == none || model.nodes[mm].inputs.size() != 2) return false;
        const auto a = index.input(mm, 0);
        const auto b = find_constant(model, index, index.input(mm, 1));
        const auto bias = find_constant(model, index, index.input(add, 1 - matmul_slot));
        if (a == none || !shapes[a].dims || shapes[a].dims->size() != 2 || !b || b->dims.size() != 2 || !bias) return false;
        const auto type = shapes[a].data_type;
        if (type != 1 || b->data_type != type || bias->data_type != type) return false;  // Gemm here: FLOAT only
        const auto n = b->dims[1];
        const bool row = (bias->dims.size() == 1 && bias->dims[0] == n) ||
                         (bias->dims.size() == 2 && bias->dims[0] == 1 && bias->dims[1] == n);
        if (!row) return false;
        note(add, finding_kind::fused_node, "MatMul + Add of a bias -> Gemm");
        ++changes;
        used.insert(mm);
        if (report_only) return true;
        const auto& nd = model.nodes[add];
        (void)model.add_node(nd.scope, add, "Gemm",
                             {model.nodes[mm].inputs[0], model.nodes[mm].inputs[1], nd.inputs[1 - matmul_slot]}, {nd.outputs[0]},
                             model.node_name(mm).empty() ? std::string() : std::string(model.node_name(mm)) + "_gemm");
        model.remove_node(mm);
        model.remove_node(add);
        return true;
    }

    // Pads, kernel sizes and spatial sizes beyond this are not fused (sums stay in range).
    static constexpr std::int64_t max_extent = std::int64_t{1} << 24;

    // Why Pad `pad` is not fused into `consumer`, with the consumer's new `pads` (and for an
    // AveragePool whether count_include_pad must be set) when it is.
    struct pad_plan {
        std::string why_not;
        std::vector<std::int64_t> pads;
        bool set_count_include_pad = false;
    };

    pad_plan plan_pad(node_id pad, node_id consumer) const {
        const std::string op(model.nodes[consumer].op_type());
        const auto x = index.input(pad, 0);
        if (x == none || !shapes[x].dims) return {"the rank of its input is not known", {}};
        const auto& dims = *shapes[x].dims;
        const auto rank = dims.size();
        if (rank < 3) return {"its input has no spatial axes", {}};
        if (const auto mode = model.attribute(pad, "mode"); mode && mode->s && *mode->s != "constant")
            return {"mode '" + std::string(*mode->s) + "' is not constant padding", {}};
        // The Pad's pads over every axis, and its value.
        std::optional<std::vector<std::int64_t>> given;
        std::optional<double> value = 0.0;
        std::vector<std::int64_t> axes;
        if (model.opset("") < 11) {
            if (const auto a = model.attribute(pad, "pads")) given = a->ints;
            if (const auto a = model.attribute(pad, "value"); a && a->f) value = *a->f;
        } else {
            given = constant_integers(model, index, context.reader, index.input(pad, 1), 1024);
            if (model.nodes[pad].inputs.size() > 2 && model.nodes[pad].inputs[2] != empty_name)
                value = constant_scalar(model, index, context.reader, index.input(pad, 2));
            if (model.nodes[pad].inputs.size() > 3 && model.nodes[pad].inputs[3] != empty_name) {
                const auto a = constant_integers(model, index, context.reader, index.input(pad, 3), 1024);
                if (!a) return {"its axes are not constant", {}};
                axes = *a;
            }
        }
        if (!given) return {"its pads are not constant", {}};
        if (!value) return {"its value is not constant", {}};
        if (axes.empty())
            for (std::size_t i = 0; i < rank; ++i) axes.push_back(static_cast<std::int64_t>(i));
        if (given->size() != 2 * axes.size()) return {"its pads do not match its axes", {}};
        std::vector<std::int64_t> all(2 * rank, 0);
        for (std::size_t k = 0; k < axes.size(); ++k) {
            const auto axis = axes[k] < 0 ? axes[k] + static_cast<std::int64_t>(rank) : axes[k];
            if (axis < 0 || axis >= static_cast<std::int64_t>(rank)) return {"an axis is out of range", {}};
            all[static_cast<std::size_t>(axis)] = (*given)[k];
            all[static_cast<std::size_t>(axis) + rank] = (*given)[k + axes.size()];
        }
        if (std::any_of(all.begin(), all.end(), [](std::int64_t p) { return p < 0; })) return {"negative pads crop", {}};
        if (std::any_of(all.begin(), all.end(), [](std::int64_t p) { return p > max_extent; }))
            return {"its pads are too large", {}};
        if (all[0] != 0 || all[1] != 0 || all[rank] != 0 || all[rank + 1] != 0) return {"it pads the batch or channel axis", {}};
        if (op == "MaxPool") {
            if (!std::isinf(*value) || *value > 0) return {"a MaxPool ignores padded cells: only a -inf Pad is the same", {}};
        } else if (*value != 0.0 || std::signbit(*value)) {
            char shown[32];
            (void)std::snprintf(shown, sizeof shown, "%g", *value);
            return {"it pads with " + std::string(shown) + ", the " + op + " pads with +0", {}};
        }
        // The consumer's own padding.
        if (const auto a = model.attribute(consumer, "auto_pad"); a && a->s && *a->s != "NOTSET")
            return {"the " + op + " has auto_pad " + std::string(*a->s), {}};
        const auto spatial = rank - 2;
        std::vector<std::int64_t> own(2 * spatial, 0);
        if (const auto a = model.attribute(consumer, "pads")) {
            if (a->ints.size() != own.size()) return {"the " + op + "'s pads do not match its rank", {}};
            own = a->ints;
            if (std::any_of(own.begin(), own.end(), [](std::int64_t p) { return p < 0 || p > max_extent; }))
                return {"the " + op + "'s pads are out of range", {}};
        }
        pad_plan plan;
        plan.pads = own;
        for (std::size_t i = 0; i < spatial; ++i) {
            plan.pads[i] += all[2 + i];
            plan.pads[spatial + i] += all[rank + 2 + i];
        }
        if (op == "Conv") return plan;
        if (const auto a = model.attribute(consumer, "ceil_mode"); a && a->i && *a->i != 0)
            return {"the " + op + " has ceil_mode 1", {}};
        if (op == "AveragePool") {
            const auto include = model.attribute(consumer, "count_include_pad");
            if (!include || !include->i || *include->i == 0) {
                if (std::any_of(own.begin(), own.end(), [](std::int64_t p) { return p != 0; }))
                    return {"the AveragePool leaves its own padded cells out of the average, and the Pad's in", {}};
                plan.set_count_include_pad = true;
            }
            return plan;
        }
        // MaxPool: every window of the fused node must hold an input cell, or it would give
        // the lowest float where the Pad's -inf gave -inf.
        if (model.nodes[consumer].outputs.size() > 1 && model.nodes[consumer].outputs[1] != empty_name)
            return {"the MaxPool's Indices would count the padded cells", {}};
        const auto kernel = model.attribute(consumer, "kernel_shape");
        const auto strides = model.attribute(consumer, "strides");
        const auto dilations = model.attribute(consumer, "dilations");
        if (!kernel || kernel->ints.size() != spatial) return {"the MaxPool's kernel_shape does not match its rank", {}};
        for (std::size_t i = 0; i < spatial; ++i) {
            const auto size = dims[2 + i];
            const auto k = kernel->ints[i];
            const auto stride = strides && strides->ints.size() == spatial ? strides->ints[i] : 1;
            const auto dilation = dilations && dilations->ints.size() == spatial ? dilations->ints[i] : 1;
            if (size < 0) return {"the spatial size of its input is not known", {}};
            const auto in_range = [](std::int64_t v) { return v >= 1 && v <= max_extent; };
            if (!in_range(k) || !in_range(stride) || !in_range(dilation) || size > max_extent)
                return {"the MaxPool's window is out of range", {}};
            const auto begin = plan.pads[i], end = plan.pads[spatial + i];
            const auto span = (k - 1) * dilation + 1;
            const auto outputs = (size + begin + end - span) / stride + 1;
            for (std::int64_t o = 0; o < outputs; ++o) {
                // The window's first tap at or after cell 0, and whether it is a cell.
                const auto start = o * stride - begin;
                const auto first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
                if (first >= k || start + first * dilation >= size)
                    return {"a window of the MaxPool would hold padded cells only", {}};
            }
        }
        return plan;
    }

    bool pad_into(node_id consumer) {
        const auto pad = sole_producer(consumer, 0, "Pad");
        if (pad == none || model.nodes[pad].inputs.empty()) return false;
        const std::string op(model.nodes[consumer].op_type());
        auto plan = plan_pad(pad, consumer);
        if (!plan.why_not.empty()) {
            note(pad, finding_kind::skipped, "not fused into the " + op + ": " + plan.why_not);
            return false;
        }
        note(pad, finding_kind::fused_node, "Pad + " + op + " -> " + op + " with pads");
        ++changes;
        used.insert(pad);
        used.insert(consumer);
        if (report_only) return true;
        model.set_input(consumer, 0, model.nodes[pad].inputs[0]);
        model.set_attribute(consumer, {"pads", std::nullopt, std::move(plan.pads)});
        if (plan.set_count_include_pad) model.set_attribute(consumer, {"count_include_pad", 1, {}});
        model.remove_node(pad);
        return true;
    }

    void visit(node_id n) {
        const auto& nd = model.nodes[n];
        if ((nd.op_type() == "Conv" || nd.op_type() == "AveragePool" || nd.op_type() == "MaxPool") && nd.domain().empty() &&
            !nd.inputs.empty() && !used.contains(n)) {
            (void)pad_into(n);
            return;
        }
        if (nd.op_type() != "Add" || !nd.domain().empty() || nd.inputs.size() != 2 || nd.outputs.size() != 1 || used.contains(n))
            return;
        if (index.at(index.output(n, 0)).pinned) return;
        for (std::size_t slot = 0; slot < 2; ++slot)
            if (conv_add(n, slot) || matmul_add(n, slot)) return;
    }

    void run() {
        if (!can_add_initializers(model)) return;
        model.for_each_live_node([this](node_id n) { visit(n); });
    }
};

}  // namespace

pass_entry fusion_pass() {
    return {.name = "fuse",
            .summary = "Conv + Add(per-channel constant) -> Conv bias; MatMul + Add(bias) -> Gemm; Pad -> Conv/Pool pads",
            .run = run_rewriter<fuser>,
            .analyze = analyze_rewriter<fuser>,
            .headline = {.kind = finding_kind::fused_node, .done = "fused", .would = "would fuse", .noun = "node pair"},
            .always_count_nodes = false};
}

}  // namespace onnxstream::passes
