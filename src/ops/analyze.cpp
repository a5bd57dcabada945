#include <onnxstream/ops/analyze.hpp>

#include <onnxstream/graph/index_cache.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/ops/optimize.hpp>
#include <onnxstream/passes/dead_code.hpp>
#include <onnxstream/passes/pass_driver.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace onnxstream::ops {

using graph::node_id;
using graph::none;
using passes::finding;
using passes::finding_kind;

analyze_totals analyze_report::totals(finding_kind kind) const { return findings.totals(kind); }

namespace {

// The graph model as read, for one pass after another: built again only when the last
// pass changed it (graph_model::revision). Most passes change nothing in most models, and
// a build was most of analyze's time when each pass had its own (a dozen builds of a
// million-node graph). The old model goes before a new one is built: never two at once.
class graph_as_read {
public:
    explicit graph_as_read(const onnx::model_file& file) noexcept : file_(file) {}

    [[nodiscard]] result<graph::graph_model*> get() {
        if (graph_ && graph_->revision() == revision_) return &*graph_;
        indexes_.reset();
        graph_.reset();
        ONNXSTREAM_ASSIGN(auto built, graph::graph_model::build(file_));
        graph_.emplace(std::move(built));
        indexes_.emplace(*graph_);
        revision_ = graph_->revision();
        return &*graph_;
    }
    /// The index of the model `get` gave, shared by the passes while it lasts (it goes
    /// with that model).
    [[nodiscard]] graph::index_cache* indexes() noexcept { return indexes_ ? &*indexes_ : nullptr; }
    /// Lets go of the model and its index (what `get` gave is gone).
    void drop() noexcept {
        indexes_.reset();
        graph_.reset();
    }

private:
    const onnx::model_file& file_;
    std::optional<graph::graph_model> graph_;
    std::optional<graph::index_cache> indexes_;
    std::uint64_t revision_ = 0;
};

// Findings about the model as it is: unused initializers and inputs, isolated components.
// A model may have a million unused initializers: they go into the list with no `finding`
// struct each, and their scope path made once per scope. The index is gone before they
// do (a bit per initializer meanwhile), and so is the graph model (`as_read` drops it):
// the list, the index and the graph model, each about as large as the others, are never
// held together. The index is the one the passes shared when none of them changed the
// model (a second build of a million-node index was a tenth of analyze's time). What the
// findings name are views of the model's bytes (the graph model's names are views of them,
// the empty name aside), which stay mapped until analyze returns.
void static_findings(graph_as_read& as_read, const graph::graph_model& model, finding_list& out) {
    std::vector<graph::name_id> unused_inputs;  // the main graph's, in order
    std::vector<bool> unused_tensor(model.tensors.size(), false);
    std::uint64_t unused_tensors = 0;
    std::vector<finding> isolated;
    {
        auto* cache = as_read.indexes();
        const auto shared = cache->current();
        cache->release();  // the shapes go; the index stays while `shared` holds it
        const auto& index = *shared;
        for (const auto v : index.value_ids()) {
            const auto& val = index.at(v);
            if (!index.uses(v).empty() || val.pinned) continue;
            if (val.kind == graph::value_kind::graph_input && model.scopes[val.scope].kind == graph::scope_kind::main) {
                unused_inputs.push_back(val.name);
            } else if (val.kind == graph::value_kind::initializer && !val.overridable) {
                unused_tensor[val.tensor.value] = true;
                ++unused_tensors;
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
                    for (const auto& u : index.uses(v)) only_here = only_here && u.node != none && members.contains(u.node);
                    if (only_here && !index.at(v).overridable) f.bytes += model.tensor_bytes(index.at(v).tensor);
                }
            f.detail = "connected to neither the graph inputs nor its outputs";
            isolated.push_back(std::move(f));
        }
    }
    // What the findings need of the graph model, in the order they come: the main graph's
    // inputs, then scope by scope its initializers.
    struct unused_value {
        std::string_view name;
        std::uint64_t bytes = 0;
        graph::scope_id scope = none;
    };
    // A name's text outlives the graph model, but for the empty name: the table's own copy.
    const auto lasting_text = [&model](graph::name_id name) {
        return name == graph::empty_name ? std::string_view{} : model.text(name);
    };
    std::vector<unused_value> unused;
    unused.reserve(unused_inputs.size() + unused_tensors);
    for (const auto name : unused_inputs) unused.push_back({lasting_text(name), 0, graph::main_scope});
    const auto inputs = unused.size();
    {
        graph::file_walk walk(model);
        for (const auto s : model.scopes.ids()) {
            for (const auto t : model.scopes[s].initializers) {
                if (!unused_tensor[t.value]) continue;
                walk.reached(t);
                unused.push_back({lasting_text(model.tensors[t].name), model.tensor_bytes(t), s});
            }
        }
    }
    std::vector<std::string> scope_paths(model.scopes.size());
    std::vector<bool> path_made(model.scopes.size(), false);
    for (const auto& u : unused) {
        if (path_made[u.scope.value]) continue;
        scope_paths[u.scope.value] = model.scope_path(u.scope);
        path_made[u.scope.value] = true;
    }
    unused_tensor = {};
    const auto& file = model.file();  // outlives the graph model
    as_read.drop();                   // `model` is gone

    // The names are read again in file order: the pages behind them go as before.
    const auto bytes = file.tree.bytes();
    std::optional<io::release_behind> behind;
    if (file.reading != onnx::tensor_reading::kept) behind.emplace(file.file.mapping());
    out.reserve(unused.size(), 64);
    for (std::size_t i = 0; i < unused.size(); ++i) {
        const auto* at = reinterpret_cast<const std::byte*>(unused[i].name.data());
        if (behind && at >= bytes.data() && at < bytes.data() + bytes.size())
            behind->reached(static_cast<std::uint64_t>(at - bytes.data()));
        const std::array<std::string_view, 1> names{unused[i].name};
        if (i < inputs) {
            out.add(finding_kind::unused_input, scope_paths[unused[i].scope.value], {}, names, 0, 0, 1,
                    "reported only: graph inputs are the model's interface");
        } else {
            out.add(finding_kind::unused_initializer, scope_paths[unused[i].scope.value], {}, names, 0, unused[i].bytes, 1,
                    "nothing reads it");
        }
    }
    if (behind) behind->finish(file.file.size());
    for (const auto& f : isolated) out.add(f);
}

}  // namespace

result<analyze_report> analyze(const std::filesystem::path& path, const analyze_options& options) {
    // Tensors read when a pass asks (most never are): no table of a million tensor_infos,
    // and the tree without their bodies' fields.
    ONNXSTREAM_ASSIGN(const auto bound,
                      onnx::bound_model::open(path, options, onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));
    const auto& model = bound.model;
    analyze_report report;
    report.path = path;
    report.warnings = bound.warnings();
    const graph::tensor_reader reader(model, &bound.data);

    std::vector<const passes::pass_entry*> all;
    for (const auto& pass : passes::pass_registry()) all.push_back(&pass);
    // Progress counts passes run: one per pass that analyze shows, then each pass of each
    // round of the fixed point (one round is counted ahead; a further round adds its own).
    const auto shown = static_cast<std::uint64_t>(
        std::count_if(all.begin(), all.end(), [](const passes::pass_entry* p) { return p->analyze != nullptr; }));
    progress_event progress{"analyze " + path.filename().string(), 0, shown + all.size(), {}, "passes"};
    const auto step = [&](std::string_view pass) {
        if (!options.on_progress) return;
        progress.tensor = pass;
        options.on_progress(progress);
        ++progress.done;
    };
    const auto cancelled = [&options] { return options.cancel != nullptr && options.cancel->load(); };
    const auto interrupted = [] { return failure(error_code::interrupted, "interrupted"); };

    std::vector<error> ignored;
    // Each pass on its own fresh copy: every finding says what that one change would save.
    // The model as it is comes last (static_findings): its findings may be a million
    // unused initializers, which then are not held while the passes run.
    // The passes add their findings straight to the list (the identity pass alone finds a
    // quarter of a million nodes in a graph of a million: not a vector of them first).
    finding_list pass_findings;
    graph_as_read as_read(model);
    for (const auto* pass : all) {
        if (pass->analyze == nullptr) continue;
        if (cancelled()) return interrupted();
        step(pass->name);
        ONNXSTREAM_ASSIGN(auto* graph, as_read.get());
        passes::pass_context context{*graph, reader, pass_findings, ignored};
        context.indexes = as_read.indexes();
        pass->analyze(context);
    }
    // Several passes find the same node (a dead node inside an isolated component, an
    // Identity that is also dead), so the categories overlap: the total is what optimize
    // with the default passes removes, by optimize's own driver on one more copy.
    {
        ONNXSTREAM_ASSIGN(auto* as_read_graph, as_read.get());
        auto& graph = *as_read_graph;
        const auto before = graph.live_node_count();
        std::vector<finding> scratch;
        const auto drop = [&scratch](std::size_t) {
            scratch.clear();  // what the previous pass found: not read (record is false)
            return passes::finding_sink(scratch);
        };
        const optimize_options defaults;  // what `onnxstream optimize` runs with
        passes::fixed_point_options driver;
        driver.limits.fold_bytes = defaults.fold_limit;
        driver.max_rounds = defaults.max_rounds;
        driver.record = false;
        driver.cancel = options.cancel;
        driver.indexes = as_read.indexes();
        driver.on_pass = [&](std::uint32_t round, std::size_t p) {
            if (round > 0 && p == 0) progress.total += all.size();
            step(all[p]->name);
        };
        const auto ran = passes::run_to_fixed_point(graph, reader, all, drop, ignored, driver);
        if (ran.cancelled) return interrupted();
        // A fusion may add a node for two it removes; never more than the model has.
        const auto after = graph.live_node_count();
        report.removable_nodes = before > after ? before - after : 0;
    }
    {
        ONNXSTREAM_ASSIGN(const auto* graph, as_read.get());
        for (const auto s : graph->scopes.ids()) report.scopes.push_back(graph->scope_path(s));
        report.nodes = graph->live_node_count();
        {
            graph::file_walk walk(*graph);
            for (const auto t : graph->tensors.ids()) {
                walk.reached(t);
                ++report.initializers;
                report.initializer_bytes += graph->tensor_bytes(t);
            }
        }
        static_findings(as_read, *graph, report.findings);
    }
    report.findings.append(pass_findings);
    // What was read through the mapping is only right if the file did not change meanwhile.
    ONNXSTREAM_TRY(bound.check_unchanged());
    return report;
}

result<analyze_report> analyze(const std::filesystem::path& path, const onnx::open_options& options) {
    analyze_options all;
    static_cast<onnx::open_options&>(all) = options;
    return analyze(path, all);
}

}  // namespace onnxstream::ops
