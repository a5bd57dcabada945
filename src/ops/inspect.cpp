#include <onnxstream/ops/inspect.hpp>

#include "bound_summary.hpp"

#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/tensor_type.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <array>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace onnxstream::ops {

using namespace onnxstream::onnx;

namespace {

value_summary summarize_value(const message_tree& tree, std::uint32_t value_info) {
    value_summary v;
    v.name = tree.find_text(value_info, number(value_info_field::name));
    const auto* type = tree.find(value_info, number(value_info_field::type));
    if (type == nullptr || type->type() != proto::wire_type::length_delimited) return v;
    const auto token = tree.token(*type);
    auto read = read_tensor_type(tree.bytes(), token.payload_offset, token.end_offset());
    v.type = std::move(read.element_type);
    v.shape = std::move(read.shape);
    v.has_shape = read.has_shape;
    return v;
}

void read_opset(const message_tree& tree, std::uint32_t opset, inspect_report& report) {
    const auto* version = tree.find(opset, number(operator_set_field::version));
    report.opsets.emplace_back(std::string(tree.find_text(opset, number(operator_set_field::domain))),
                               version != nullptr ? static_cast<std::int64_t>(tree.value(*version)) : 0);
}

void read_main_graph(const message_tree& tree, std::uint32_t graph, inspect_report& report) {
    report.graph_name = tree.find_text(graph, number(graph_field::name));
    for (const auto& g : tree.fields(graph)) {
        if (g.child == no_index) continue;
        if (g.number() == number(graph_field::input)) report.inputs.push_back(summarize_value(tree, g.child));
        if (g.number() == number(graph_field::output)) report.outputs.push_back(summarize_value(tree, g.child));
        if (g.number() == number(graph_field::node)) ++report.main_graph_nodes;
    }
}

function_summary summarize_function(const message_tree& tree, std::uint32_t function) {
    function_summary fn;
    fn.domain = tree.find_text(function, number(function_field::domain));
    fn.name = tree.find_text(function, number(function_field::name));
    for (const auto& ff : tree.fields(function))
        if (ff.number() == number(function_field::node)) ++fn.nodes;
    return fn;
}

// The ModelProto's own fields: versions, producer, opsets, the main graph's interface, functions.
void read_model_fields(const message_tree& tree, inspect_report& report) {
    for (const auto& f : tree.fields(0)) {
        const auto n = f.number();
        if (n == number(model_field::ir_version)) report.ir_version = static_cast<std::int64_t>(tree.value(f));
        else if (n == number(model_field::model_version)) report.model_version = static_cast<std::int64_t>(tree.value(f));
        else if (f.type() != proto::wire_type::length_delimited) continue;
        else if (n == number(model_field::producer_name)) report.producer_name = tree.text(f);
        else if (n == number(model_field::producer_version)) report.producer_version = tree.text(f);
        else if (n == number(model_field::domain)) report.domain = tree.text(f);
        else if (n == number(model_field::opset_import) && f.child != no_index) read_opset(tree, f.child, report);
        else if (n == number(model_field::graph) && f.child != no_index) read_main_graph(tree, f.child, report);
        else if (n == number(model_field::training_info)) ++report.training_infos;
        else if (n == number(model_field::functions) && f.child != no_index)
            report.functions.push_back(summarize_function(tree, f.child));
    }
}

// Nodes per (domain, op), counted by views into the model: a graph of a million nodes has
// a few dozen distinct ops, and a string per node would cost more than the count. A small
// table of the ops seen last, by length and end bytes, answers most nodes without hashing
// their strings; the map behind it answers the rest (any two ops a slot mixes up are
// still told apart: a slot holds its key and is checked in full).
class op_counts {
public:
    void add(std::string_view domain, std::string_view op) {
        auto& slot = recent_[slot_of(domain, op)];
        if (slot.count != nullptr && slot.op == op && slot.domain == domain) {
            ++*slot.count;
            return;
        }
        auto& count = counts_[{domain, op}];  // the map's values do not move
        ++count;
        slot = {domain, op, &count};
    }
    void report_into(inspect_report& report) const {
        for (const auto& [key, count] : counts_) {
            const auto& [domain, op] = key;
            report.op_types[domain.empty() ? std::string(op) : std::string(domain) + ":" + std::string(op)] += count;
        }
    }

private:
    using op_key = std::pair<std::string_view, std::string_view>;
    struct key_hash {
        std::size_t operator()(const op_key& k) const noexcept {
            return std::hash<std::string_view>{}(k.first) * 31U ^ std::hash<std::string_view>{}(k.second);
        }
    };
    struct recent_op {
        std::string_view domain;
        std::string_view op;
        std::uint64_t* count = nullptr;
    };
    static std::size_t slot_of(std::string_view domain, std::string_view op) noexcept {
        const auto last = [](std::string_view s) { return s.empty() ? 0U : static_cast<unsigned char>(s.back()); };
        const auto first = op.empty() ? 0U : static_cast<unsigned char>(op.front());
        return (op.size() * 7U + first * 3U + last(op) + domain.size() * 5U + last(domain)) % slots;
    }
    static constexpr std::size_t slots = 64;
    std::unordered_map<op_key, std::uint64_t, key_hash> counts_;
    std::array<recent_op, slots> recent_{};
};

// Messages are in file order: the pages behind the walk go, as they did behind the parse
// (a graph of a million nodes would map all of its file again). The counts' views stay
// valid: a released page comes back from the page cache when it is read.
void count_nodes(const model_file& model, inspect_report& report) {
    op_counts counts;
    const auto& tree = model.tree;
    const auto messages = tree.messages();
    io::release_behind behind(model.file.mapping());
    std::vector<field_entry> dropped;  // a node's fields the tree dropped, read again
    for (std::uint32_t node = 0; node < messages.size(); ++node) {
        const auto& m = messages[node];
        if (m.kind == message_kind::graph && m.parent != no_index && messages[m.parent].kind == message_kind::attribute)
            ++report.subgraphs;
        if (m.kind != message_kind::node) continue;
        ++report.nodes;
        behind.reached(tree.payload_range(node).offset);
        // find_text's answers for the domain and the op, in one walk over the node's fields.
        std::string_view domain;
        std::string_view op;
        bool domain_seen = false;
        bool op_seen = false;
        for (const auto& f : tree.read_fields(node, dropped)) {
            const auto n = f.number();
            if (n == number(node_field::domain) && !domain_seen) {
                domain_seen = true;
                if (f.type() == proto::wire_type::length_delimited) domain = tree.text(f);
            } else if (n == number(node_field::op_type) && !op_seen) {
                op_seen = true;
                if (f.type() == proto::wire_type::length_delimited) op = tree.text(f);
            }
            if (domain_seen && op_seen) break;
        }
        if (domain == "ai.onnx") domain = {};
        counts.add(domain, op);
    }
    behind.finish(model.file.size());
    counts.report_into(report);
}

void count_tensors(const bound_model& bound, inspect_report& report) {
    const auto& model = bound.model;
    tensor_pass pass(model);
    for (const auto t : model.sites.ids()) {
        const auto handle = pass.read(t);
        const auto& tensor = *handle;
        std::uint64_t bytes = 0;
        if (tensor.storage == tensor_storage::raw) {
            bytes = handle.tree().field(tensor.raw_field).payload_length();
        } else if (tensor.storage == tensor_storage::external) {
            // Only bytes that exist count: a tensor past the end of its file claims a
            // length that may be anything up to 2^64 - 1.
            const auto b = bound.binding_of(t);
            bytes = b != none && bound.data.tensors[b].usable ? bound.data.tensors[b].length : 0;
        } else {
            bytes = tensor.expected_bytes.value_or(0);
        }
        ++report.tensors;
        report.tensor_bytes += bytes;
        auto& type = report.by_type[data_type_name(tensor.data_type)];
        ++type.tensors;
        type.bytes += bytes;
        auto& storage = report.by_storage[to_string(tensor.storage)];
        ++storage.tensors;
        storage.bytes += bytes;
    }
}

void summarize_data_files(const external_data& data, inspect_report& report) {
    // Problems by file, in one pass: a model may name tens of thousands of files.
    indexed_vector<onnx::data_file_id, std::vector<const data_problem*>> problems_of(data.files.size());
    for (const auto& p : data.problems)
        if (problems_of.contains(p.file)) problems_of[p.file].push_back(&p);
    for (const auto f : data.files.ids()) {
        const auto& file = data.files[f];
        data_file_summary summary;
        describe_found_file(file, summary);
        summary.bytes_needed = file.bytes_needed;
        summary.bytes_referenced = file.bytes_referenced;
        for (const auto* p : problems_of[f]) {
            summary.problems.push_back(p->what.message);
            if (p->what.code == error_code::missing_data) {
                summary.hint = p->what.hint;
                summary.remedies = p->what.remedies;
            }
        }
        report.data_files.push_back(std::move(summary));
    }
    for (const auto& p : data.problems) report.problems.push_back(p.what.describe());
    for (const auto& g : data.guesses) report.warnings.push_back(g.what);
}

}  // namespace

result<inspect_report> inspect(const std::filesystem::path& path, const open_options& options) {
    // Every tensor is read once or twice here: none is kept (a million of them is 120 MB).
    ONNXSTREAM_ASSIGN(const auto bound, bound_model::open(path, options, nodes_on_demand(), tensor_reading::on_demand));
    inspect_report report;
    report.path = path;
    report.file_size = bound.model.file.size();
    read_model_fields(bound.model.tree, report);
    count_nodes(bound.model, report);
    count_tensors(bound, report);
    summarize_data_files(bound.data, report);
    if (bound.data.blocking_problem(true) == nullptr) {
        report.merged_size = inlined_size(bound.model, bound.data);
        report.fits_in_one_file = *report.merged_size <= plan::protobuf_limit;
    }
    // Names and numbers above came through the mapping: only true if the file held still.
    ONNXSTREAM_TRY(bound.model.file.check_unchanged());
    return report;
}

}  // namespace onnxstream::ops
