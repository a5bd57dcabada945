#include <onnxstream/onnx/tensor_walker.hpp>

#include <onnxstream/onnx/fields.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

namespace onnxstream::onnx {

const char* to_string(tensor_role role) noexcept {
    switch (role) {
        case tensor_role::initializer: return "initializer";
        case tensor_role::sparse_initializer: return "sparse_initializer";
        case tensor_role::attribute: return "attribute";
        case tensor_role::sparse_attribute: return "sparse_attribute";
    }
    return "tensor";
}

namespace {

std::uint32_t enclosing(const message_tree& tree, std::uint32_t m, message_kind a, message_kind b = message_kind::model) {
    for (auto p = tree.at(m).parent; p != no_index; p = tree.at(p).parent) {
        const auto kind = tree.at(p).kind;
        if (kind == a || (b != message_kind::model && kind == b)) return p;
    }
    return no_index;
}

// The message that holds tensor m: its parent, or its SparseTensorProto's parent.
std::uint32_t holder_of(const message_tree& tree, std::uint32_t m) noexcept {
    const auto parent = tree.at(m).parent;
    return tree.at(parent).kind == message_kind::sparse_tensor ? tree.at(parent).parent : parent;
}

}  // namespace

std::uint32_t graph_of(const message_tree& tree, const tensor_site& site) noexcept {
    return enclosing(tree, site.message, message_kind::graph, message_kind::function);
}

std::uint32_t node_of(const message_tree& tree, const tensor_site& site) noexcept {
    if (site.role != tensor_role::attribute && site.role != tensor_role::sparse_attribute) return no_index;
    const auto node = tree.at(holder_of(tree, site.message)).parent;
    return tree.at(node).kind == message_kind::node ? node : no_index;  // not a FunctionProto.attribute_proto
}

indexed_vector<site_id, tensor_site> find_tensors(const message_tree& tree) {
    indexed_vector<site_id, tensor_site> sites;
    const auto messages = tree.messages();
    // Counted first: growing by doubling would hold 1.5 times the final size at the peak.
    sites.reserve(static_cast<std::size_t>(
        std::count_if(messages.begin(), messages.end(), [](const message& m) { return m.kind == message_kind::tensor; })));
    for (std::uint32_t m = 0; m < messages.size(); ++m) {
        if (messages[m].kind != message_kind::tensor) continue;
        tensor_site site;
        site.message = m;
        const auto holder = holder_of(tree, m);
        const bool sparse = holder != messages[m].parent;
        if (tree.at(holder).kind == message_kind::attribute)
            site.role = sparse ? tensor_role::sparse_attribute : tensor_role::attribute;
        else site.role = sparse ? tensor_role::sparse_initializer : tensor_role::initializer;
        sites.push_back(site);
    }
    return sites;
}

std::vector<std::uint32_t> find_nodes(const message_tree& tree) {
    std::vector<std::uint32_t> nodes;
    const auto messages = tree.messages();
    nodes.reserve(static_cast<std::size_t>(
        std::count_if(messages.begin(), messages.end(), [](const message& m) { return m.kind == message_kind::node; })));
    for (std::uint32_t m = 0; m < messages.size(); ++m)
        if (messages[m].kind == message_kind::node) nodes.push_back(m);
    return nodes;
}

std::unordered_set<std::string_view> shape_like_values(const message_tree& tree, const io::mapped_file* mapping) {
    struct shape_inputs {
        std::string_view op;
        std::uint32_t mask;  // bit i: input i is read while loading
    };
    // The inputs ONNX's shape inference parses as constants (`ctx.getInputData(i)` or
    // `getShapeInput(ctx, i)` in onnx/defs/*/defs.cc and old.cc, every opset version), which
    // fail on external data ("Cannot parse data from external tensors"), plus Resize's roi,
    // CumSum's axis and Trilu's k, which ONNX Runtime's kernels read when a session starts.
    // Data propagation (Shape/Gather/Concat arithmetic) is left out: it skips what it
    // cannot read instead of failing.
    static constexpr std::array<shape_inputs, 36> table{{
        {"Reshape", 0b10},
        {"Expand", 0b10},
        {"Tile", 0b10},
        {"Slice", 0b11110},
        {"Resize", 0b1110},
        {"Upsample", 0b10},
        {"ConstantOfShape", 0b1},
        {"Unsqueeze", 0b10},
        {"Squeeze", 0b10},
        {"Pad", 0b1110},
        {"ReduceSum", 0b10},
        {"ReduceMean", 0b10},
        {"ReduceMax", 0b10},
        {"ReduceMin", 0b10},
        {"ReduceProd", 0b10},
        {"ReduceL1", 0b10},
        {"ReduceL2", 0b10},
        {"ReduceLogSum", 0b10},
        {"ReduceLogSumExp", 0b10},
        {"ReduceSumSquare", 0b10},
        {"TopK", 0b10},
        {"Range", 0b111},
        {"OneHot", 0b11},
        {"Split", 0b10},
        {"CumSum", 0b10},
        {"Trilu", 0b10},
        {"SplitToSequence", 0b10},
        {"CenterCropPad", 0b10},
        {"Col2Im", 0b110},
        {"AffineGrid", 0b10},
        {"DFT", 0b110},
        {"STFT", 0b1010},
        {"MelWeightMatrix", 0b11},
        {"HannWindow", 0b1},
        {"HammingWindow", 0b1},
        {"BlackmanWindow", 0b1},
    }};
    std::unordered_set<std::string_view> names;
    std::vector<field_entry> dropped;  // a node's fields the tree dropped, read again
    std::optional<io::release_behind> behind;
    if (mapping != nullptr) behind.emplace(*mapping);
    for (const auto node : find_nodes(tree)) {
        if (behind) behind->reached(tree.payload_range(node).offset);
        const auto op = tree.find_text(node, number(node_field::op_type));
        std::uint32_t mask = 0;
        for (const auto& entry : table)
            if (entry.op == op) mask = entry.mask;
        if (mask == 0) continue;
        std::uint32_t input = 0;
        for (const auto& f : tree.read_fields(node, dropped)) {
            if (f.number() != number(node_field::input)) continue;
            if (input < 32 && (mask >> input) & 1U) names.insert(tree.text(f));
            ++input;
        }
    }
    if (behind) behind->finish(tree.bytes().size());
    return names;
}

std::string_view value_name(const message_tree& tree, const tensor_site& site) {
    const auto own = tree.find_text(site.message, number(tensor_field::name));
    if (const auto node = node_of(tree, site); site.role == tensor_role::attribute && node != no_index) {
        const auto output = tree.find_text(node, number(node_field::output));
        if (!output.empty()) return output;
    }
    return own;
}

}  // namespace onnxstream::onnx
