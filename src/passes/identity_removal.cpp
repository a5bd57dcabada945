#include <onnxstream/passes/identity_removal.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <onnxstream/graph/constant_values.hpp>

#include <memory>
#include <vector>

namespace onnxstream::passes {

bool is_inference_dropout(const graph_model& model, const graph_index& index, const tensor_reader& reader, node_id n) {
    const auto& nd = model.nodes[n];
    if (nd.op_type() != "Dropout" || !nd.domain().empty()) return false;
    const auto opset = model.opset("");
    if (opset < 7) {
        const auto is_test = model.attribute(n, "is_test");
        return is_test && is_test->i && *is_test->i == 1;
    }
    if (opset < 12) return true;
    if (nd.inputs.size() < 3 || nd.inputs[2] == empty_name) return true;
    const auto training = constant_condition(model, index, reader, index.input(n, 2));
    return training && !*training;
}

std::uint64_t remove_identities(pass_context& context) {
    auto& model = context.model;
    const auto held = context.index();
    const graph_index& index = *held;
    // Values this run changed, judged again on the next run: `gone` no longer exists under
    // its name; `gained` has consumers the index does not know of. A bit per value: a
    // quarter of a graph's nodes may be Identity, and a hash set would take ~40 bytes
    // for each.
    std::vector<bool> gone(index.size(), false);
    std::vector<bool> gained(index.size(), false);
    std::uint64_t removed = 0;
    file_walk walk(model);
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        walk.reached(n);
        const auto& nd = model.nodes[n];
        const bool identity = nd.op_type() == "Identity" && nd.domain().empty();
        if (!identity && !is_inference_dropout(model, index, context.reader, n)) continue;
        if (nd.inputs.empty() || nd.outputs.empty()) continue;
        if (!identity && nd.outputs.size() > 1 && nd.outputs[1] != empty_name) {
            const auto mask = index.output(n, 1);
            if (mask != none && !index.uses(mask).empty()) continue;
        }
        const auto in = index.input(n, 0);
        const auto out = index.output(n, 0);
        if (in == none || out == none || gone[in.value] || gone[out.value] || gained[out.value]) continue;
        if (index.at(in).pinned || index.at(out).pinned || index.at(in).kind == value_kind::undefined) continue;

        if (!is_interface_output(model, index, out)) {
            if (!can_replace_uses(model, index, out, in)) continue;
            replace_uses(model, index, out, index.at(in).name);
            gone[out.value] = true;
            gained[in.value] = true;
        } else {
            // The output's name is the interface: the input's producer takes it over.
            const auto& input = index.at(in);
            if (input.kind != value_kind::node_output || input.scope != nd.scope || is_interface_output(model, index, in))
                continue;
            if (!can_replace_uses(model, index, in, out)) continue;
            replace_uses(model, index, in, index.at(out).name);
            model.set_output(input.node, input.slot, index.at(out).name);
            gone[in.value] = true;
            gained[out.value] = true;
        }
        if (context.record) context.findings.add(node_finding(model, n, finding_kind::identity_node));
        model.remove_node(n);
        ++removed;
    }
    model.compact();
    return removed;
}

namespace {
void analyze_identities(pass_context& context) { (void)remove_identities(context); }
}  // namespace

pass_entry identity_pass() {
    return {.name = "identity",
            .summary = "Identity and inference-mode Dropout removed",
            .run = remove_identities,
            .analyze = analyze_identities};
}

}  // namespace onnxstream::passes
