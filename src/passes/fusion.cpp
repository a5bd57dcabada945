// fuse: two nodes into one where the result is the same.
//   - Conv without bias, then Add of a per-channel constant ([C,1,...] or [1,C,1,...] of the
//     Conv's type): the constant becomes the Conv's bias. ONNX Runtime adds a bias
//     to each sum once, as the Add did: bit-identical.
//   - MatMul of a 2-D input by a 2-D constant, then Add of a constant [N] or [1,N]: one Gemm.
//     The sums are the same products; ONNX Runtime may add the bias before the last block
//     of them, so the result is within rounding (the fold-bn tolerance), not bit for bit.
// The first node's output must be read by the Add alone and be no graph output; the Add's
// output keeps its name (the fused node produces it). Pad into Conv / Pool is not done:
// it needs attributes rewritten, which the graph model does not do yet.
#include <onnxstream/graph/constant_values.hpp>

#include "node_rewriter.hpp"
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <unordered_set>

namespace onnxstream::passes {

namespace {

struct fuser : shape_rewriter {
    using shape_rewriter::shape_rewriter;
    std::unordered_set<std::uint32_t> used;  // nodes this run fused or rewired

    void note(std::uint32_t n, finding_kind kind, std::string detail) {
        finding f;
        f.kind = kind;
        f.scope = model.scope_path(model.nodes[n].scope);
        f.op_type = model.nodes[n].op_type;
        f.names.push_back(model.node_label(n));
        f.nodes = kind == finding_kind::fused_node ? 1 : 0;
        f.detail = std::move(detail);
        context.findings.push_back(std::move(f));
    }

    // The node feeding input `slot` of `add` when `add` is its only reader, in the same scope.
    std::uint32_t sole_producer(std::uint32_t add, std::size_t slot, std::string_view op) const {
        const auto v = index.input(add, slot);
        const auto p = index.producer(v);
        if (p == none || model.nodes[p].op_type != op || !model.nodes[p].domain.empty() || used.contains(p)) return none;
        if (model.nodes[p].scope != model.nodes[add].scope || index.at(v).uses.size() != 1 || index.at(v).pinned) return none;
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
    void take_over(std::uint32_t producer, std::uint32_t add) {
        model.set_output(producer, 0, model.nodes[add].outputs[0]);
        model.remove_node(add);
    }

    bool conv_add(std::uint32_t add, std::size_t conv_slot) {
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
        if (cv.inputs.size() > 2 && cv.inputs[2] != 0) {
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

    bool matmul_add(std::uint32_t add, std::size_t matmul_slot) {
        const auto mm = sole_producer(add, matmul_slot, "MatMul");
        if (mm == none || model.nodes[mm].inputs.size() != 2) return false;
        const auto a = index.input(mm, 0);
        const auto b = find_constant(model, index, index.input(mm, 1));
        const auto bias = find_constant(model, index, index.input(add, 1 - matmul_slot));
        if (a == none || !shapes[a].dims || shapes[a].dims->size() != 2 || !b || b->dims.size() != 2 || !bias) return false;
        const auto type = shapes[a].data_type;
        if (type != 1 || b->data_type != type || bias->data_type != type) return false;  // Gemm here: FLOAT only
        const auto n = b->dims[1];
        const bool row = (bias->dims.size() == 1 && bias->dims[0] == n) || (bias->dims.size() == 2 && bias->dims[0] == 1 && bias->dims[1] == n);
        if (!row) return false;
        note(add, finding_kind::fused_node, "MatMul + Add of a bias -> Gemm");
        ++changes;
        used.insert(mm);
        if (report_only) return true;
        const auto& nd = model.nodes[add];
        (void)model.add_node(nd.scope, add, "Gemm", {model.nodes[mm].inputs[0], model.nodes[mm].inputs[1], nd.inputs[1 - matmul_slot]},
                             {nd.outputs[0]}, model.nodes[mm].name.empty() ? std::string() : model.nodes[mm].name + "_gemm");
        model.remove_node(mm);
        model.remove_node(add);
        return true;
    }

    void visit(std::uint32_t n) {
        const auto& nd = model.nodes[n];
        if (nd.op_type != "Add" || !nd.domain.empty() || nd.inputs.size() != 2 || nd.outputs.size() != 1 || used.contains(n)) return;
        if (index.at(index.output(n, 0)).pinned) return;
        for (std::size_t slot = 0; slot < 2; ++slot)
            if (conv_add(n, slot) || matmul_add(n, slot)) return;
    }

    void run() {
        if (!can_add_initializers(model)) return;
        model.for_each_live_node([this](std::uint32_t n) { visit(n); });
    }
};

}  // namespace

pass_entry fusion_pass() {
    return {.name = "fuse",
            .summary = "Conv + Add(per-channel constant) -> Conv bias; MatMul + Add(bias) -> Gemm",
            .run = run_rewriter<fuser>,
            .analyze = analyze_rewriter<fuser>,
            .headline = {.kind = finding_kind::fused_node, .done = "fused", .would = "would fuse", .noun = "node pair"},
            .always_count_nodes = false};
}

}  // namespace onnxstream::passes
