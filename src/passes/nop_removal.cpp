// nop: nodes that hand their input on unchanged are removed and their consumers read the
// input: Cast to the type it has, Reshape / Flatten / Expand / Squeeze / Unsqueeze to the
// shape it has, Expand by ones, Transpose by the identity permutation (or undoing the
// Transpose before it), Squeeze undoing the Unsqueeze before it and the other way round,
// Slice of everything with positive steps, Pad of zeros, Concat of one input, Split into
// one part, Concat of every dim of a Shape gathered back in order, Mul / Div by ones and
// Add / Sub of zeros that do not broadcast (floats: only where the sign of zero survives).
// A Reshape of a Reshape reads the first one's input instead (its shape has no 0 to
// copy); a Transpose of a Transpose read by nothing else transposes the first one's input
// by the two permutations composed (dce then removes the first).
// Shapes and types come from graph/value_shapes.hpp: only what is known for certain.
// As with identity, an output that is a graph output keeps its node.
#include <onnxstream/graph/constant_values.hpp>

#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/passes/pass_registry.hpp>
#include "node_rewriter.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <unordered_set>

namespace onnxstream::passes {

namespace {

struct nop_remover : shape_rewriter {
    using shape_rewriter::shape_rewriter;
    std::unordered_set<value_id> touched;  // values this run renamed or rewired: judged next run

    std::vector<std::int64_t> perm_of(node_id n, std::size_t rank) const {
        std::vector<std::int64_t> perm(rank);
        for (std::size_t i = 0; i < rank; ++i) perm[i] = static_cast<std::int64_t>(rank - 1 - i);
        if (const auto a = model.attribute(n, "perm")) perm = a->ints;
        return perm;
    }

    // Whether input `slot` of arithmetic node `n` is a constant that leaves the other input
    // as it is, bit for bit, without broadcasting it to a larger shape: 1 for Mul/Div, for
    // Add/Sub an integer 0, or a float -0.0 for Add (x + 0.0 turns -0.0 into 0.0) and 0.0
    // for Sub (x - 0.0 keeps -0.0).
    bool neutral_operand(node_id n, std::size_t slot) const {
        const auto& op = model.nodes[n].op_type();
        const auto other = index.input(n, slot == 0 ? 1 : 0);
        const auto c_value = index.input(n, slot);
        if (other == none || c_value == none || !shapes[other].dims) return false;
        const auto c = find_constant(model, index, c_value);
        if (!c || c->data_type != shapes[other].data_type || c->dims.size() > shapes[other].dims->size()) return false;
        const auto& dims = *shapes[other].dims;
        for (std::size_t i = 0; i < c->dims.size(); ++i) {
            const auto d = dims[dims.size() - c->dims.size() + i];
            if (c->dims[i] != 1 && c->dims[i] != d) return false;
        }
        const auto values = constant_elements(model, context.reader, *c, 1024);
        if (!values || values->empty()) return false;
        const bool is_float = c->data_type == 1 || c->data_type == 10 || c->data_type == 11 || c->data_type == 16;
        return std::all_of(values->begin(), values->end(), [&](double x) {
            if (op == "Mul" || op == "Div") return x == 1.0;
            if (!is_float) return x == 0.0;
            return x == 0.0 && std::signbit(x) == (op == "Add");
        });
    }

    // The Shape value a Concat rebuilds: Concat(Unsqueeze(Gather(S, 0), [0]), ...,
    // Unsqueeze(Gather(S, r-1), [0])) where S = Shape(x) of a tensor of rank r is S itself
    // (exporters write this for `x.reshape(*x.shape)`-style code). None when it is not that.
    value_id rebuilt_shape(node_id n) const {
        const auto& nd = model.nodes[n];
        const auto axis = model.attribute(n, "axis");
        if (!axis || !axis->i || (*axis->i != 0 && *axis->i != -1)) return none;
        value_id shape = none;
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
            const auto u = index.producer(index.input(n, k));
            if (u == none || model.nodes[u].op_type() != "Unsqueeze" || !model.nodes[u].domain().empty()) return none;
            std::optional<std::vector<std::int64_t>> axes;
            if (model.opset("") >= 13) axes = constant_integers(model, index, context.reader, index.input(u, 1));
            else if (const auto a = model.attribute(u, "axes")) axes = a->ints;
            if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return none;
            const auto g = index.producer(index.input(u, 0));
            if (g == none || model.nodes[g].op_type() != "Gather" || model.nodes[g].inputs.size() != 2) return none;
            if (const auto a = model.attribute(g, "axis"); a && a->i && *a->i != 0) return none;
            const auto picked = constant_integers(model, index, context.reader, index.input(g, 1));
            const auto c = find_constant(model, index, index.input(g, 1));
            const auto source = index.input(g, 0);
            if (!picked || !c || !c->dims.empty() || picked->size() != 1) return none;
            const auto rank = static_cast<std::int64_t>(nd.inputs.size());
            const auto at = (*picked)[0] < 0 ? (*picked)[0] + rank : (*picked)[0];
            if (at != static_cast<std::int64_t>(k) || (shape != none && source != shape)) return none;
            shape = source;
        }
        const auto s = index.producer(shape);
        if (s == none || model.nodes[s].op_type() != "Shape" || model.nodes[s].domain() != "" || model.attribute(s, "start") ||
            model.attribute(s, "end"))
            return none;
        const auto x = index.input(s, 0);
        if (x == none || !shapes[x].dims || shapes[x].dims->size() != nd.inputs.size()) return none;
        return shape;
    }

    // Why node `n` computes nothing; empty when it does.
    std::optional<std::string> why_nop(node_id n) const {
        const auto& nd = model.nodes[n];
        // The operators a rule below names: any other is no no-op, known before its values
        // and shapes are looked up (a million Relus, each two index lookups and a copy).
        static constexpr std::array<std::string_view, 15> ruled{"Cast",      "Reshape",   "Flatten", "Expand", "Squeeze",
                                                                "Unsqueeze", "Transpose", "Slice",   "Concat", "Split",
                                                                "Mul",       "Div",       "Add",     "Sub",    "Pad"};
        if (std::find(ruled.begin(), ruled.end(), nd.op_type()) == ruled.end()) return std::nullopt;
        const std::string op(nd.op_type());
        const auto in = index.input(n, 0);
        const auto out = index.output(n, 0);
        if (in == none || out == none) return std::nullopt;
        const auto& x = shapes[in];
        const auto& y = shapes[out];
        if (op == "Cast") {
            const auto to = model.attribute(n, "to");
            if (x.data_type != 0 && to && to->i && *to->i == x.data_type) return "Cast to the type it has";
            return std::nullopt;
        }
        const bool same_shape = x.fully_known() && y.dims && *x.dims == *y.dims;
        if (op == "Reshape" || op == "Flatten" || op == "Expand" || op == "Squeeze" || op == "Unsqueeze") {
            if (same_shape) return op + " to the shape it has";
            if (op == "Expand" && nd.inputs.size() == 2 && x.dims) {
                // Expand by ones of no more than the input's rank broadcasts nothing.
                const auto to = constant_integers(model, index, context.reader, index.input(n, 1), 1024);
                if (to && to->size() <= x.dims->size() &&
                    std::all_of(to->begin(), to->end(), [](std::int64_t d) { return d == 1; }))
                    return std::string("Expand by ones");
            }
            return std::nullopt;
        }
        if (op == "Transpose") {
            if (!x.dims) return std::nullopt;
            const auto perm = perm_of(n, x.dims->size());
            bool identity = true;
            for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<std::int64_t>(i);
            if (identity) return "Transpose by the identity permutation";
            return std::nullopt;
        }
        if (op == "Slice" && model.opset("") >= 10) {
            if (!same_shape) return std::nullopt;
            if (nd.inputs.size() > 4 && nd.inputs[4] != empty_name) {
                const auto steps = constant_integers(model, index, context.reader, index.input(n, 4));
                if (!steps || std::any_of(steps->begin(), steps->end(), [](std::int64_t s) { return s <= 0; }))
                    return std::nullopt;
            }
            return "Slice of everything";
        }
        if (op == "Concat" && nd.inputs.size() == 1) return "Concat of one input";
        if (op == "Split") return "Split into one part";  // visit() sees only nodes of one output
        if ((op == "Mul" || op == "Div" || op == "Add" || op == "Sub") && nd.inputs.size() == 2) {
            if (neutral_operand(n, 1)) return op + " by its neutral element";
        }
        if (op == "Pad" && model.opset("") >= 11 && nd.inputs.size() >= 2) {
            const auto pads = constant_integers(model, index, context.reader, index.input(n, 1), 1024);
            if (pads && std::all_of(pads->begin(), pads->end(), [](std::int64_t p) { return p == 0; })) return "Pad of zeros";
        }
        return std::nullopt;
    }

    // The value node `n` hands on when it undoes the Transpose before it.
    value_id undone_transpose(node_id n) const {
        const auto in = index.input(n, 0);
        const auto before = index.producer(in);
        if (before == none || model.nodes[before].op_type() != "Transpose" || !shapes[in].dims || touched.contains(in))
            return none;
        const auto rank = shapes[in].dims->size();
        const auto outer = perm_of(n, rank), inner = perm_of(before, rank);
        if (outer.size() != rank || inner.size() != rank) return none;
        for (std::size_t i = 0; i < rank; ++i) {
            const auto o = outer[i];
            if (o < 0 || static_cast<std::size_t>(o) >= rank ||
                inner[static_cast<std::size_t>(o)] != static_cast<std::int64_t>(i))
                return none;
        }
        return index.input(before, 0);
    }

    // The axes of Squeeze / Unsqueeze `n`, sorted, as given (negative ones count from the end
    // of the rank given; for a pair that is the rank of the value between them, the same for
    // both). Empty when they are not constant or not given.
    std::optional<std::vector<std::int64_t>> squeeze_axes(node_id n, std::int64_t rank) const {
        std::optional<std::vector<std::int64_t>> axes;
        if (model.opset("") >= 13) {
            if (model.nodes[n].inputs.size() > 1 && model.nodes[n].inputs[1] != empty_name)
                axes = constant_integers(model, index, context.reader, index.input(n, 1), 1024);
        } else if (const auto a = model.attribute(n, "axes")) {
            axes = a->ints;
        }
        if (!axes || axes->empty()) return std::nullopt;
        if (rank >= 0)
            for (auto& a : *axes) a = a < 0 ? a + rank : a;
        std::sort(axes->begin(), axes->end());
        return axes;
    }

    // The value node `n` hands on when it is a Squeeze undoing the Unsqueeze before it (or an
    // Unsqueeze undoing the Squeeze): both name the same axes of the value between them.
    value_id undone_squeeze(node_id n) const {
        const auto& op = model.nodes[n].op_type();
        const auto in = index.input(n, 0);
        const auto before = index.producer(in);
        if (before == none || !model.nodes[before].domain().empty() || touched.contains(in)) return none;
        const auto& inner = model.nodes[before].op_type();
        if (!((op == "Squeeze" && inner == "Unsqueeze") || (op == "Unsqueeze" && inner == "Squeeze"))) return none;
        // The axes count in the rank of the Unsqueeze's output (Unsqueeze, then Squeeze), or
        // of the Squeeze's input (Squeeze, then Unsqueeze).
        const auto between = op == "Squeeze" ? in : index.input(before, 0);
        const auto rank = between != none && shapes[between].dims ? static_cast<std::int64_t>(shapes[between].dims->size()) : -1;
        const auto outer = squeeze_axes(n, rank), first = squeeze_axes(before, rank);
        if (!outer || !first || *outer != *first) return none;
        // Without the rank, -1 and 2 may name the same axis or not: only the same signs agree.
        if (rank < 0 && !std::all_of(outer->begin(), outer->end(), [&](std::int64_t a) { return (a < 0) == ((*outer)[0] < 0); }))
            return none;
        return index.input(before, 0);
    }

    // Transpose `n` of Transpose `before`, which nothing else reads: `n` reads the first
    // one's input, transposed by the two permutations composed.
    void compose_transposes(node_id n) {
        const auto in = index.input(n, 0);
        const auto before = index.producer(in);
        if (before == none || model.nodes[before].op_type() != "Transpose" || !model.nodes[before].domain().empty()) return;
        if (touched.contains(in) || index.uses(in).size() != 1 || index.at(in).pinned || is_interface_output(model, index, in))
            return;
        const auto source = index.input(before, 0);
        if (source == none || touched.contains(source) || index.resolve(model.nodes[n].scope, index.at(source).name) != source)
            return;
        std::size_t rank = 0;
        if (shapes[in].dims) rank = shapes[in].dims->size();
        else if (const auto a = model.attribute(n, "perm")) rank = a->ints.size();
        const auto outer = perm_of(n, rank), inner = perm_of(before, rank);
        if (rank == 0 || outer.size() != rank || inner.size() != rank) return;
        std::vector<std::int64_t> perm(rank);
        for (std::size_t i = 0; i < rank; ++i) {
            if (outer[i] < 0 || static_cast<std::size_t>(outer[i]) >= rank) return;
            perm[i] = inner[static_cast<std::size_t>(outer[i])];
        }
        note(n, finding_kind::nop_node, 0, "Transpose of a Transpose: one Transpose by the permutations composed");
        ++changes;
        touched.insert(in);
        touched.insert(source);
        touched.insert(index.output(n, 0));  // its producer reads and computes something else now
        if (report_only) return;
        model.set_input(n, 0, index.at(source).name);
        model.set_attribute(n, {"perm", std::nullopt, std::move(perm)});
    }

    void note(node_id n, finding_kind kind, std::uint64_t nodes, std::string detail) {
        finding f;
        f.kind = kind;
        f.scope = model.scope_path(model.nodes[n].scope);
        f.op_type = model.nodes[n].op_type();
        f.names.push_back(model.node_label(n));
        f.nodes = nodes;
        f.detail = std::move(detail);
        context.findings.add(std::move(f));
    }

    // Node `n`'s consumers read `source` instead; false when that cannot be done safely.
    bool bypass(node_id n, value_id source, const std::string& why) {
        const auto out = index.output(n, 0);
        if (source == none || out == none || touched.contains(out) || touched.contains(source)) return false;
        if (index.at(out).pinned || index.at(source).kind == value_kind::undefined) return false;
        if (is_interface_output(model, index, out)) {
            note(n, finding_kind::skipped, 0, why + ", but its output is a graph output");
            return false;
        }
        if (!can_replace_uses(model, index, out, source)) return false;
        note(n, finding_kind::nop_node, 1, why);
        ++changes;
        touched.insert(out);
        touched.insert(source);
        if (report_only) return true;
        replace_uses(model, index, out, index.at(source).name);
        model.remove_node(n);
        return true;
    }

    void visit(node_id n) {
        const auto& nd = model.nodes[n];
        if ((!nd.domain().empty() && nd.domain() != "ai.onnx") || nd.inputs.empty() || nd.outputs.size() != 1) return;
        if (const auto why = why_nop(n)) {
            (void)bypass(n, index.input(n, 0), *why);
            return;
        }
        if ((nd.op_type() == "Mul" || nd.op_type() == "Add") && nd.inputs.size() == 2 && neutral_operand(n, 0)) {
            (void)bypass(n, index.input(n, 1), std::string(nd.op_type()) + " by its neutral element");
            return;
        }
        if (nd.op_type() == "Transpose") {
            if (const auto source = undone_transpose(n); source != none)
                (void)bypass(n, source, "Transpose undoing the Transpose before it");
            else compose_transposes(n);
            return;
        }
        if (nd.op_type() == "Squeeze" || nd.op_type() == "Unsqueeze") {
            if (const auto source = undone_squeeze(n); source != none)
                (void)bypass(n, source,
                             std::string(nd.op_type()) + " undoing the " +
                                 std::string(model.nodes[index.producer(index.input(n, 0))].op_type()) + " before it");
            return;
        }
        if (nd.op_type() == "Concat" && nd.inputs.size() > 1) {
            if (const auto shape = rebuilt_shape(n); shape != none) (void)bypass(n, shape, "Concat rebuilding a Shape");
            return;
        }
        if (nd.op_type() == "Reshape" && nd.inputs.size() == 2 && !report_only) {
            const auto in = index.input(n, 0);
            const auto before = index.producer(in);
            if (before == none || model.nodes[before].op_type() != "Reshape" || touched.contains(in)) return;
            const auto shape = constant_integers(model, index, context.reader, index.input(n, 1), 1024);
            const auto zero = model.attribute(n, "allowzero");
            if (!shape || (std::find(shape->begin(), shape->end(), 0) != shape->end() && !(zero && zero->i && *zero->i != 0)))
                return;
            const auto source = index.input(before, 0);
            if (source == none || index.resolve(nd.scope, index.at(source).name) != source) return;
            note(n, finding_kind::nop_node, 0, "Reshape of a Reshape reads the first one's input");
            ++changes;
            touched.insert(in);
            model.set_input(n, 0, index.at(source).name);
        }
    }

    void run() {
        model.for_each_live_node([this](node_id n) { visit(n); });
    }
};

}  // namespace

pass_entry nop_removal_pass() {
    return {"nop", "no-op Cast, Reshape, Transpose, Squeeze, Slice, Pad, Concat, Split, Mul by 1... removed; Transposes composed",
            run_rewriter<nop_remover>, analyze_rewriter<nop_remover>};
}

}  // namespace onnxstream::passes
