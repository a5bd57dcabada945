#include <onnxstream/passes/pass_context.hpp>

namespace onnxstream::passes {

const char* to_string(finding_kind kind) noexcept {
    switch (kind) {
        case finding_kind::dead_node: return "dead_node";
        case finding_kind::isolated_component: return "isolated_component";
        case finding_kind::dead_branch: return "dead_branch";
        case finding_kind::duplicate_node: return "duplicate_node";
        case finding_kind::duplicate_initializer: return "duplicate_initializer";
        case finding_kind::unused_initializer: return "unused_initializer";
        case finding_kind::identity_node: return "identity_node";
        case finding_kind::unused_input: return "unused_input";
        case finding_kind::removed_value_info: return "removed_value_info";
        case finding_kind::removed_function: return "removed_function";
        case finding_kind::folded_batchnorm: return "folded_batchnorm";
        case finding_kind::folded_constant: return "folded_constant";
        case finding_kind::folded_shape: return "folded_shape";
        case finding_kind::nop_node: return "nop_node";
        case finding_kind::fused_node: return "fused_node";
        case finding_kind::skipped: return "skipped";
    }
    return "finding";
}

std::shared_ptr<const graph_index> pass_context::index() const {
    return indexes != nullptr ? indexes->current() : std::make_shared<const graph_index>(model);
}

std::shared_ptr<const shape_table> pass_context::shapes(const graph_index& index) const {
    return indexes != nullptr ? indexes->shapes(index, reader)
                              : std::make_shared<const shape_table>(infer_shapes(model, index, reader));
}

void pass_context::release_index() const noexcept {
    if (indexes != nullptr) indexes->release();
}

finding node_finding(const graph_model& model, node_id n, finding_kind kind, std::string detail) {
    finding f;
    f.kind = kind;
    f.scope = model.scope_path(model.nodes[n].scope);
    f.op_type = model.nodes[n].op_type();
    f.names.push_back(model.node_label(n));
    f.nodes = 1;
    f.detail = std::move(detail);
    return f;
}

}  // namespace onnxstream::passes
