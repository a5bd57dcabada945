#include <onnxstream/ops/analyze.hpp>

#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/passes/dead_code.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <algorithm>
#include <set>

namespace onnxstream::ops {

using graph::node_id;
using graph::none;
using passes::finding;
using passes::finding_kind;

analyze_totals analyze_report::totals(finding_kind kind) const {
    analyze_totals t;
    for (const auto& f : findings) {
        if (f.kind != kind) continue;
        t.count += f.count;
        t.nodes += f.nodes;
        t.bytes += f.bytes;
    }
    return t;
}

namespace {

// Findings about the model as it is: unused initializers and inputs, isolated components.
void static_findings(const graph::graph_model& model, std::vector<finding>& out) {
    const graph::graph_index index(model);
    // A million unused initializers are a million findings: room for them at once.
    std::size_t unused = 0;
    for (const auto v : index.value_ids()) unused += index.at(v).uses.empty() && !index.at(v).pinned ? 1U : 0U;
    out.reserve(out.size() + unused);
    for (const auto v : index.value_ids()) {
        const auto& val = index.at(v);
        if (!val.uses.empty() || val.pinned) continue;
        if (val.kind == graph::value_kind::graph_input && model.scopes[val.scope].kind == graph::scope_kind::main) {
            finding f;
            f.kind = finding_kind::unused_input;
            f.scope = model.scope_path(val.scope);
            f.names.emplace_back(model.text(val.name));
            f.detail = "reported only: graph inputs are the model's interface";
            out.push_back(std::move(f));
        } else if (val.kind == graph::value_kind::initializer && !val.overridable) {
            finding f;
            f.kind = finding_kind::unused_initializer;
            f.scope = model.scope_path(val.scope);
            f.names.emplace_back(model.text(val.name));
            f.bytes = model.tensor_bytes(val.tensor);
            f.detail = "nothing reads it";
            out.push_back(std::move(f));
        }
    }
    const auto live = passes::compute_liveness(model, index);
    for (const auto& c : passes::isolated_components(model, index, live)) {
        finding f;
        f.kind = finding_kind::isolated_component;
        f.scope = model.scope_path(c.scope);
        std::set<node_id> members(c.nodes.begin(), c.nodes.end());
        for (const auto n : c.nodes) {
            f.names.push_back(model.node_label(n));
            f.nodes += graph::nodes_within(model, n);
        }
        // Initializers only this component reads.
        std::set<graph::value_id> counted;
        for (const auto n : c.nodes)
            for (std::size_t k = 0; k < model.nodes[n].inputs.size(); ++k) {
                const auto v = index.input(n, k);
                if (v == none || index.at(v).kind != graph::value_kind::initializer || !counted.insert(v).second) continue;
                bool only_here = true;
                for (const auto& u : index.at(v).uses) only_here = only_here && u.node != none && members.contains(u.node);
                if (only_here && !index.at(v).overridable) f.bytes += model.tensor_bytes(index.at(v).tensor);
            }
        f.detail = "connected to neither the graph inputs nor its outputs";
        out.push_back(std::move(f));
    }
}

}  // namespace

result<analyze_report> analyze(const std::filesystem::path& path, const onnx::resolve_options& data_options) {
    // Tensors read when a pass asks (most never are): no table of a million tensor_infos,
    // and the tree without their bodies' fields.
    ONNXSTREAM_ASSIGN(const auto bound, onnx::bound_model::open(path, data_options, {}, onnx::tensor_reading::on_demand));
    const auto& model = bound.model;
    analyze_report report;
    report.path = path;
    report.warnings = bound.warnings();
    const graph::tensor_reader reader(model, &bound.data);

    std::vector<error> ignored;
    {
        ONNXSTREAM_ASSIGN(auto graph, graph::graph_model::build(model));
        for (const auto s : graph.scopes.ids()) report.scopes.push_back(graph.scope_path(s));
        report.nodes = graph.live_node_count();
        for (const auto t : graph.tensors.ids()) {
            ++report.initializers;
            report.initializer_bytes += graph.tensor_bytes(t);
        }
        static_findings(graph, report.findings);
    }
    // Each pass on its own fresh copy: every finding says what that one change would save.
    for (const auto& pass : passes::pass_registry()) {
        if (pass.analyze == nullptr) continue;
        ONNXSTREAM_ASSIGN(auto graph, graph::graph_model::build(model));
        passes::pass_context context{graph, reader, report.findings, ignored};
        pass.analyze(context);
    }
    // Several passes find the same node (a dead node inside an isolated component, an
    // Identity that is also dead), so the categories overlap: the total is what optimize
    // with the default passes removes, run to a fixed point on one more copy.
    {
        ONNXSTREAM_ASSIGN(auto graph, graph::graph_model::build(model));
        const auto live_nodes = [&graph] {
            std::uint64_t live = 0;
            for (const auto n : graph.nodes.ids()) live += graph.node_live(n) ? 1U : 0U;
            return live;
        };
        const auto before = live_nodes();
        std::vector<finding> scratch;
        constexpr std::uint32_t max_rounds = 100;  // optimize_options::max_rounds
        for (std::uint32_t round = 0; round < max_rounds; ++round) {
            std::uint64_t changes = 0;
            for (const auto& pass : passes::pass_registry()) {
                passes::pass_context context{graph, reader, scratch, ignored, {}, false};
                changes += pass.run(context);
                scratch.clear();
            }
            if (changes == 0) break;
        }
        report.removable_nodes = before - live_nodes();
    }
    // What was read through the mapping is only right if the file did not change meanwhile.
    ONNXSTREAM_TRY(bound.check_unchanged());
    return report;
}

}  // namespace onnxstream::ops
