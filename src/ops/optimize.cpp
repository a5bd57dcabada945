#include <onnxstream/ops/optimize.hpp>

#include "bound_operation.hpp"
#include "kept_data.hpp"

#include <onnxstream/graph/model_edits.hpp>
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/tensor_encoding.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/passes/dead_code.hpp>
#include <onnxstream/passes/pass_driver.hpp>
#include <onnxstream/passes/pass_registry.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <set>
#include <span>
#include <string_view>
#include <tuple>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using detail::data_entry;
using graph::none;

result<std::vector<std::string>> parse_pass_list(std::string_view list) {
    ONNXSTREAM_ASSIGN(const auto entries, passes::parse_pass_list(list));
    std::vector<std::string> names;
    for (const auto* entry : entries) names.emplace_back(entry->name);
    return names;
}

namespace {

model_counts count(const graph::graph_model& model) {
    model_counts c;
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        ++c.nodes;
        if (model.nodes[n].scope == graph::main_scope) ++c.main_graph_nodes;
    }
    graph::file_walk walk(model);
    for (const auto t : model.tensors.ids()) {
        if (!model.tensor_live(t)) continue;
        walk.reached(t);
        ++c.initializers;
        c.initializer_bytes += model.tensor_bytes(t);
    }
    return c;
}

// A skipped thing's key: its scope and first name, hashed (what keep_skips_once compares).
std::uint64_t scoped_name_key(std::string_view scope, std::string_view name) {
    // One-shot over a copy: a streaming hasher's state is an aligned allocation, and a
    // million of them between the keys' growth left ~85 MB of heap holes (1M-node graph).
    std::string key;
    key.reserve(scope.size() + 1 + name.size());
    key.append(scope).push_back('\0');
    key.append(name);
    return io::xxh3_of(std::as_bytes(std::span(key)));
}

// A pass's findings when only totals and skips are shown (optimize_options::keep_findings
// false): a skip is kept whole, any other finding counted, and the key of what it did
// noted, so that a skip whose work a later round did can still be dropped.
struct counting_sink {
    finding_list& list;
    std::vector<std::uint64_t>& done;
    void add(const passes::finding& f) {
        if (f.kind == passes::finding_kind::skipped) {
            list.add(f);
            return;
        }
        list.count(f);
        if (!f.names.empty()) done.push_back(scoped_name_key(f.scope, f.names.front()));
    }
};

class optimizer : detail::bound_operation<optimize_options, optimize_report> {
public:
    using bound_operation::bound_operation;

    result<optimize_report> run() {
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, "optimized") : options_.output;
        report_.dry_run = options_.dry_run;
        std::vector<const passes::pass_entry*> entries;
        for (const auto& p : passes::pass_registry()) entries.push_back(&p);
        if (!options_.passes.empty()) {
            entries.clear();
            for (const auto& name : options_.passes) {
                const auto* entry = passes::find_pass(name);
                if (entry == nullptr)
                    return failure(error_code::invalid_argument, "unknown pass '" + name + "'",
                                   "the passes are " + passes::pass_names());
                entries.push_back(entry);
            }
        }

        // Tensors read when a pass or the writer asks; the tree drops their bodies' fields
        // (the edits address them by position).
        ONNXSTREAM_TRY(open_session(onnx::nodes_on_demand(), onnx::tensor_reading::on_demand, !options_.dry_run));
        const graph::tensor_reader reader(model_, &bound_.data);
        ONNXSTREAM_ASSIGN(graph_, graph::graph_model::build(model_));
        report_.before = count(graph_);
        // The counts read every tensor's body: their pages go until a pass needs them.
        session_.release_model_pages();

        for (const auto* entry : entries) report_.passes.push_back({std::string(entry->name), 0, {}});
        std::vector<std::vector<std::uint64_t>> counted_keys(entries.size());  // keep_findings false: counting_sink's
        std::vector<counting_sink> counting;
        for (std::size_t p = 0; p < entries.size(); ++p) counting.push_back({report_.passes[p].findings, counted_keys[p]});
        const auto sink_of = [&](std::size_t p) {
            return options_.keep_findings ? passes::finding_sink(report_.passes[p].findings) : passes::finding_sink(counting[p]);
        };
        passes::fixed_point_options driver;
        driver.limits.fold_bytes = options_.fold_limit;
        driver.max_rounds = options_.max_rounds;
        driver.cancel = options_.cancel;
        const auto ran = passes::run_to_fixed_point(graph_, reader, entries, sink_of, report_.warnings, driver);
        if (ran.cancelled) return failure(error_code::interrupted, "interrupted");
        for (std::size_t p = 0; p < entries.size(); ++p) report_.passes[p].changes = ran.changes[p];
        report_.rounds = ran.rounds;
        for (std::size_t p = 0; p < entries.size(); ++p) {
            std::sort(counted_keys[p].begin(), counted_keys[p].end());
            keep_skips_once(report_.passes[p].findings, counted_keys[p]);
        }
        if (report_.rounds > 0) report_.stale_value_info = passes::drop_stale_value_info(graph_);
        graph_.compact();
        report_.after = count(graph_);
        if (options_.dry_run) {
            ONNXSTREAM_TRY(bound_.check_unchanged());
            report_.storage = storage_name();
            return std::move(report_);
        }
        ONNXSTREAM_TRY(bound_.data.check_unchanged());  // what the passes read from it
        ONNXSTREAM_TRY(write(reader));
        return std::move(report_);
    }

private:
    // A skip is reported once, and not at all when a later round did the work after all
    // (a BatchNormalization after another one folds once the first is gone). `counted`:
    // the sorted keys (scoped_name_key) of the findings only counted.
    static void keep_skips_once(finding_list& findings, std::span<const std::uint64_t> counted) {
        using passes::finding_kind;
        using view = finding_list::view;
        // Skips are few, the other findings may be a million (an unused initializer each):
        // only the work done on something skipped is remembered, not every finding's name.
        // The views stay valid: nothing is added to `findings` until it is rebuilt.
        std::vector<view> skips;
        findings.for_each([&skips](const view& v) {
            if (v.kind == finding_kind::skipped) skips.push_back(v);
        });
        if (skips.empty()) return;
        const auto first_name = [](const view& v) {
            std::string_view first;
            std::uint64_t i = 0;
            v.for_each_name([&](std::string_view name) {
                if (i++ == 0) first = name;
            });
            return first;
        };
        using scoped_name = std::pair<std::string_view, std::string_view>;
        std::set<scoped_name> skipped;
        for (const auto& v : skips)
            if (v.name_count > 0) skipped.insert({v.scope, first_name(v)});
        std::set<scoped_name> done;
        findings.for_each([&](const view& v) {
            if (v.kind == finding_kind::skipped || v.name_count == 0) return;
            const scoped_name key{v.scope, first_name(v)};
            if (skipped.contains(key)) done.insert(key);
        });
        for (const auto& key : skipped)
            if (std::binary_search(counted.begin(), counted.end(), scoped_name_key(key.first, key.second))) done.insert(key);
        std::set<std::tuple<std::string_view, std::vector<std::string>, std::string_view>> seen;
        std::vector<std::uint64_t> dropped;  // positions, ascending
        for (const auto& v : skips) {
            if ((v.name_count > 0 && done.contains({v.scope, first_name(v)})) ||
                !seen.insert({v.scope, v.names(), v.detail}).second)
                dropped.push_back(v.position);
        }
        if (dropped.empty()) return;
        finding_list kept;
        kept.add_counted(findings);
        findings.for_each([&](const view& v) {
            if (!std::binary_search(dropped.begin(), dropped.end(), v.position)) kept.add(v.to_finding());
        });
        findings = std::move(kept);
    }

    result<void> write(const graph::tensor_reader& reader) {
        const bool external = !bound_.data.files.empty();
        report_.storage = storage_name();
        const auto folder = report_.output.parent_path().empty() ? fs::path(".") : report_.output.parent_path();
        const auto data_path = folder / (report_.output.filename().string() + ".data");

        ONNXSTREAM_TRY(session_.claim_output(report_.output));

        graph::storage_plan plan;
        plan.spill_source = static_cast<std::uint32_t>(session_.sources().size());

        std::vector<data_entry> entries;
        if (external) ONNXSTREAM_TRY(detail::keep_surviving_external(bound_, graph_, options_.reuse_data, folder, plan, entries));
        const auto computed = computed_tensors();
        const auto computed_external = choose_computed_external(computed, plan.spill_source, entries);
        if (!entries.empty())
            ONNXSTREAM_TRY(
                session_.claim_output(data_path, {.model_output = report_.output, .rename_data = remedy::choose_output}));
        ONNXSTREAM_ASSIGN(auto spill, io::spill_file::create(folder));
        ONNXSTREAM_TRY(spill_computed(reader, computed, computed_external, spill, plan));
        detail::lay_out(data_path.filename().string(), entries, plan);

        // The model's edits; the spill file is readable while they stream into it.
        ONNXSTREAM_ASSIGN(auto spill_reader, spill.open_source());
        const auto spill_index = session_.add_source(spill_reader);
        ONNXSTREAM_ASSIGN(const auto edits, graph::build_edits(graph_, plan, spill, session_.sources()));
        // The edits hold what they need (copies of the names and places they write): the graph
        // model and the plan (a tensor and a name each, a million of them in a model of tiny
        // initializers) go before the planner and the writer take their share.
        graph_ = graph::graph_model{};
        plan = graph::storage_plan{};
        ONNXSTREAM_ASSIGN(auto spill_source, spill.open_source());
        session_.replace_source(spill_index, spill_source);
        // The passes and the edits read names and bodies all over the file; the planner
        // reads the edited bodies again in file order (releasing the pages behind it).
        session_.release_model_pages();
        ONNXSTREAM_ASSIGN(auto planned, plan_model(edits, external));
        return finish_rewrite(planned, edits, data_path, entries);
    }

    std::string storage_name() const {
        return bound_.data.files.empty() ? "embedded" : options_.reuse_data ? "reuse-data" : "external";
    }

    std::vector<graph::tensor_id> computed_tensors() const {
        std::vector<graph::tensor_id> computed;
        for (const auto t : graph_.tensors.ids())
            if (graph_.tensor_live(t) && graph_.tensors[t].site == none) computed.push_back(t);
        return computed;
    }

    // Which computed tensors go to the data file (decided before anything is computed).
    // What a runtime reads while loading (Resize scales, Reshape shapes...) stays
    // embedded, as split and repack keep it: a folded value feeds the same inputs.
    indexed_vector<graph::tensor_id, bool> choose_computed_external(std::span<const graph::tensor_id> computed,
                                                                    std::uint32_t spill_source,
                                                                    std::vector<data_entry>& entries) const {
        indexed_vector<graph::tensor_id, bool> computed_external(graph_.tensors.size(), false);
        if (bound_.data.files.empty()) return computed_external;
        const auto load_time = onnx::shape_like_values(model_.tree, &model_.file.mapping());
        for (const auto t : computed) {
            if (graph_.tensor_bytes(t) < options_.external_threshold) continue;
            if (load_time.contains(graph_.text(graph_.tensors[t].name))) continue;
            computed_external[t] = true;
            entries.push_back({spill_source, 0, graph_.tensor_bytes(t), 0, none, t});
        }
        return computed_external;
    }

    // Computed tensors, one at a time, into the spill file: the embedded ones as whole
    // TensorProtos, the external ones as their bytes.
    result<void> spill_computed(const graph::tensor_reader& reader, std::span<const graph::tensor_id> computed,
                                const indexed_vector<graph::tensor_id, bool>& computed_external, io::spill_file& spill,
                                graph::storage_plan& plan) const {
        for (const auto t : computed) {
            const auto& x = graph_.tensors[t];
            // Every tensor without a site is add_tensor's (computed_tensors): the check only
            // spares GCC's null-dereference warning the proof.
            const auto* c = graph_.computed(t);
            if (c == nullptr) continue;
            ONNXSTREAM_ASSIGN(const auto bytes, reader.compute(c->data_type, c->dims, c->values));
            auto& placed = plan.placement(t);
            placed.length = bytes.size();
            if (!computed_external[t]) {
                proto::encoded_message header;
                onnx::encode_tensor_header(header, c->dims, c->data_type, graph_.text(x.name));
                const auto tag = proto::encode_varint(
                    proto::make_tag(onnx::number(onnx::tensor_field::raw_data), proto::wire_type::length_delimited));
                const auto length = proto::encode_varint(bytes.size());
                header.append_bytes(tag.view());
                header.append_bytes(length.view());
                ONNXSTREAM_ASSIGN(placed.message_offset, spill.append(header.pool()));
                placed.message_length = header.size() + bytes.size();
            }
            ONNXSTREAM_ASSIGN(placed.data_offset, spill.append(bytes));
        }
        return {};
    }

    // The model's plan, a window at a time (a plan of a million operations is not held).
    result<planned_model> plan_model(const onnx::tree_edits& edits, bool external) const {
        auto planned = session_.plan_model(edits);
        if (!planned && planned.error().code == error_code::too_large && !external) {
            auto e = std::move(planned).error();
            e = with_remedies(std::move(e),
                              "the optimized model does not fit in one .onnx file; move its weights out first with "
                              "{0}, then optimize that",
                              {{remedy::keep_external_data, {}}});
            return failure(std::move(e));
        }
        return planned;
    }

    graph::graph_model graph_;
};

}  // namespace

result<optimize_report> optimize(const fs::path& model, const optimize_options& options) {
    return optimizer(model, options).run();
}

}  // namespace onnxstream::ops
