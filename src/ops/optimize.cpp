#include <onnxstream/ops/optimize.hpp>

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/ops/plan_output.hpp>
#include <onnxstream/passes/dead_code.hpp>
#include <onnxstream/passes/pass_registry.hpp>
#include <onnxstream/passes/model_edits.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_set>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using passes::none;

result<std::vector<std::string>> parse_pass_list(std::string_view list) {
    ONNXSTREAM_ASSIGN(const auto entries, passes::parse_pass_list(list));
    std::vector<std::string> names;
    for (const auto* entry : entries) names.emplace_back(entry->name);
    return names;
}

namespace {

constexpr std::uint64_t data_alignment = 4096;
constexpr std::uint64_t aligned_minimum = 1ULL << 20;

model_counts count(const passes::graph_model& model) {
    model_counts c;
    for (std::uint32_t n = 0; n < model.nodes.size(); ++n) {
        if (!model.node_live(n)) continue;
        ++c.nodes;
        if (model.nodes[n].scope == 0) ++c.main_graph_nodes;
    }
    for (std::uint32_t t = 0; t < model.tensors.size(); ++t) {
        if (!model.tensor_live(t)) continue;
        ++c.initializers;
        c.initializer_bytes += model.tensor_bytes(t);
    }
    return c;
}

// A tensor's place in the new data file.
struct data_entry {
    std::uint32_t source = 0;
    std::uint64_t source_offset = 0;
    std::uint64_t length = 0;
    std::uint64_t offset = 0;  // in the data file
};

class optimizer {
public:
    optimizer(const fs::path& model_path, const optimize_options& options) : model_path_(model_path), options_(options) {}

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

        ONNXSTREAM_ASSIGN(model_, onnx::model_file::open(model_path_));
        onnx::data_resolver resolver(model_path_, data_options_for(options_));
        data_ = onnx::external_data::bind(model_, resolver);
        if (const auto* problem = data_.blocking_problem(options_.allow_size_mismatch)) {
            if (!options_.dry_run) return failure(problem->what);
        }
        for (const auto& p : data_.problems) report_.warnings.push_back(p.what);
        for (const auto& g : data_.guesses) report_.warnings.push_back(g.what);
        const passes::tensor_reader reader(model_, &data_);
        ONNXSTREAM_ASSIGN(graph_, passes::graph_model::build(model_));
        report_.before = count(graph_);

        for (const auto* entry : entries) report_.passes.push_back({std::string(entry->name), 0, {}});
        for (std::uint32_t round = 0; round < options_.max_rounds; ++round) {
            std::uint64_t changes = 0;
            for (std::size_t p = 0; p < entries.size(); ++p) {
                if (options_.cancel != nullptr && options_.cancel->load())
                    return failure(error_code::interrupted, "interrupted");
                auto& pass = report_.passes[p];
                passes::pass_context context{graph_, reader, pass.findings, report_.warnings, {options_.fold_limit}};
                const auto done = entries[p]->run(context);
                pass.changes += done;
                changes += done;
            }
            if (changes == 0) break;
            report_.rounds = round + 1;
        }
        for (auto& pass : report_.passes) keep_skips_once(pass.findings);
        if (report_.rounds > 0) report_.stale_value_info = passes::drop_stale_value_info(graph_);
        graph_.compact();
        report_.after = count(graph_);
        if (options_.dry_run) {
            ONNXSTREAM_TRY(model_.file.check_unchanged());
            ONNXSTREAM_TRY(data_.check_unchanged());
            report_.storage = data_.files.empty() ? "embedded" : options_.reuse_data ? "reuse-data" : "external";
            return std::move(report_);
        }
        ONNXSTREAM_TRY(data_.check_unchanged());  // what the passes read from it
        ONNXSTREAM_TRY(write(reader));
        return std::move(report_);
    }

private:
    // A skip is reported once, and not at all when a later round did the work after all
    // (a BatchNormalization after another one folds once the first is gone).
    static void keep_skips_once(std::vector<passes::finding>& findings) {
        std::set<std::pair<std::string, std::string>> done;
        for (const auto& f : findings)
            if (f.kind != passes::finding_kind::skipped && !f.names.empty()) done.insert({f.scope, f.names[0]});
        std::set<std::tuple<std::string, std::vector<std::string>, std::string>> seen;
        std::erase_if(findings, [&](const passes::finding& f) {
            if (f.kind != passes::finding_kind::skipped) return false;
            if (!f.names.empty() && done.contains({f.scope, f.names[0]})) return true;
            return !seen.insert({f.scope, f.names, f.detail}).second;
        });
    }

    result<void> write(const passes::tensor_reader& reader) {
        const bool external = !data_.files.empty();
        report_.storage = !external ? "embedded" : options_.reuse_data ? "reuse-data" : "external";
        const auto folder = report_.output.parent_path().empty() ? fs::path(".") : report_.output.parent_path();
        const auto data_name = report_.output.filename().string() + ".data";
        const auto data_path = folder / data_name;

        std::vector<io::file_identity> inputs{model_.file.identity()};
        std::vector<const io::source_file*> sources{&model_.file};
        for (const auto& f : data_.files) {
            inputs.push_back(f.file->identity());
            sources.push_back(&*f.file);
        }
        ONNXSTREAM_TRY(check_output(report_.output, inputs, options_.force));

        passes::storage_plan plan;
        plan.sites.resize(model_.sites.size());
        plan.computed.resize(graph_.tensors.size());
        plan.spill_source = static_cast<std::uint32_t>(sources.size());

        // Which tensors go to the new data file (decided before anything is computed).
        std::vector<data_entry> entries;
        std::vector<std::uint32_t> entry_site;     // per entry: site, or none for a computed tensor
        std::vector<std::uint32_t> entry_tensor;   // per entry: computed tensor, or none
        if (external) {
            const auto survive = passes::surviving_sites(graph_);
            std::vector<std::uint32_t> binding_of(model_.tensors.size(), none);
            for (std::uint32_t b = 0; b < data_.tensors.size(); ++b) binding_of[data_.tensors[b].tensor] = b;
            for (std::uint32_t site = 0; site < model_.sites.size(); ++site) {
                if (!survive[site] || binding_of[site] == none) continue;
                const auto& binding = data_.tensors[binding_of[site]];
                if (options_.reuse_data) {
                    ONNXSTREAM_TRY(reuse_location(site, binding, folder, plan));
                    continue;
                }
                entries.push_back({1 + binding.file, binding.offset, binding.length, 0});
                entry_site.push_back(site);
                entry_tensor.push_back(none);
            }
        }
        std::vector<std::uint32_t> computed;
        for (std::uint32_t t = 0; t < graph_.tensors.size(); ++t)
            if (graph_.tensor_live(t) && graph_.tensors[t].site == none) computed.push_back(t);
        std::vector<bool> computed_external(graph_.tensors.size(), false);
        // What a runtime reads while loading (Resize scales, Reshape shapes...) stays
        // embedded, as split and repack keep it: a folded value feeds the same inputs.
        std::unordered_set<std::string_view> load_time;
        if (external) load_time = onnx::shape_like_values(model_.tree);
        for (const auto t : computed) {
            if (!external || graph_.tensor_bytes(t) < options_.external_threshold) continue;
            if (load_time.contains(graph_.text(graph_.tensors[t].name))) continue;
            computed_external[t] = true;
            entries.push_back({plan.spill_source, 0, graph_.tensor_bytes(t), 0});
            entry_site.push_back(none);
            entry_tensor.push_back(t);
        }
        if (!entries.empty()) {
            if (data_path.filename() == report_.output.filename())
                return failure(error_code::invalid_argument, "the data file and the model would both be " + data_path.string(),
                               "choose another output name with {0}", {{remedy::choose_output, {}}});
            ONNXSTREAM_TRY(check_output(data_path, inputs, options_.force));
        }

        // Computed tensors, one at a time, into the spill file.
        ONNXSTREAM_ASSIGN(auto spill, passes::spill_file::create(folder));
        for (const auto t : computed) {
            const auto& x = graph_.tensors[t];
            ONNXSTREAM_ASSIGN(const auto bytes, reader.compute(x.data_type, x.dims, x.computed));
            auto& placed = plan.computed[t];
            placed.length = bytes.size();
            if (!computed_external[t]) {
                passes::encoded_message header;
                passes::encode_tensor_header(header, x.dims, x.data_type, graph_.text(x.name));
                const auto tag = proto::encode_varint(proto::make_tag(onnx::number(onnx::tensor_field::raw_data),
                                                                      proto::wire_type::length_delimited));
                const auto length = proto::encode_varint(bytes.size());
                header.append_bytes(tag.view());
                header.append_bytes(length.view());
                ONNXSTREAM_ASSIGN(placed.message_offset, spill.append(header.pool()));
                placed.message_length = header.size() + bytes.size();
            }
            ONNXSTREAM_ASSIGN(placed.data_offset, spill.append(bytes));
        }

        // The data file's layout.
        std::uint64_t size = 0;
        for (std::size_t i = 0; i < entries.size(); ++i) {
            auto& e = entries[i];
            if (entry_tensor[i] != none) e.source_offset = plan.computed[entry_tensor[i]].data_offset;
            const auto align = e.length >= aligned_minimum ? data_alignment : 1;
            e.offset = (size + align - 1) / align * align;
            size = e.offset + e.length;
            const passes::external_location where{data_name, e.offset, e.length};
            if (entry_site[i] != none) plan.sites[entry_site[i]] = where;
            else plan.computed[entry_tensor[i]].external = where;
        }

        // The model's edits; the spill file is readable while they stream into it.
        ONNXSTREAM_ASSIGN(auto spill_reader, spill.open_source());
        sources.push_back(&spill_reader);
        ONNXSTREAM_ASSIGN(const auto edits, passes::build_edits(graph_, plan, spill, sources));
        ONNXSTREAM_ASSIGN(auto spill_source, spill.open_source());
        sources.back() = &spill_source;
        auto planned = plan::plan_rewrite(model_.tree, edits, {0, plan::protobuf_limit});
        if (!planned) {
            auto e = std::move(planned).error();
            if (e.code == error_code::too_large && !external)
                e = with_remedies(std::move(e),
                                  "the optimized model does not fit in one .onnx file; move its weights out first with "
                                  "{0}, then optimize that",
                                  {{remedy::keep_external_data, {}}});
            return failure(std::move(e));
        }
        report_.output_size = planned->size();

        std::optional<io::output_file> data_output;
        if (!entries.empty()) {
            plan::write_plan data_plan;
            for (const auto& e : entries) {
                if (e.offset > data_plan.size()) data_plan.skip(e.offset - data_plan.size());
                data_plan.copy(e.source, e.source_offset, e.length);
            }
            ONNXSTREAM_ASSIGN(data_output, io::output_file::create(data_path, data_plan.size(), {options_.force, true}));
            ONNXSTREAM_ASSIGN(const auto written, write_planned(*data_output, data_plan, sources, options_,
                                                                "write " + data_name, report_.warnings));
            report_.writer = written.backend;
            report_.data_files.push_back({data_path, data_plan.size(), entries.size()});
        }
        ONNXSTREAM_ASSIGN(auto output, io::output_file::create(report_.output, planned->size(), {options_.force, true}));
        ONNXSTREAM_ASSIGN(const auto written, write_planned(output, *planned, sources, options_,
                                                            "write " + report_.output.filename().string(), report_.warnings));
        report_.writer = written.backend;
        // The data file and the model are committed as one: both or neither.
        std::vector<io::output_file*> outputs;
        if (data_output) outputs.push_back(&*data_output);
        outputs.push_back(&output);
        ONNXSTREAM_TRY(io::commit_outputs(outputs));
        return {};
    }

    // --reuse-data: the output points at the original data file, by a path from its folder.
    result<void> reuse_location(std::uint32_t site, const onnx::external_tensor& binding, const fs::path& folder,
                                passes::storage_plan& plan) {
        const auto& file = data_.files[binding.file];
        std::error_code ec;
        const auto data_real = fs::canonical(file.found->path, ec);
        const auto folder_real = fs::canonical(folder, ec);
        const auto relative = ec ? fs::path() : data_real.lexically_relative(folder_real);
        const bool leaves = relative.empty() || relative.is_absolute() ||
                            std::any_of(relative.begin(), relative.end(), [](const fs::path& part) { return part == ".."; });
        if (leaves)
            return failure(error_code::invalid_argument,
                           "--reuse-data needs the data file " + file.found->path.string() + " inside the output's folder " +
                               folder.string(),
                           "write the output beside the input model, or leave out {0} to write a new data file",
                           {{remedy::reuse_data, {}}});
        const auto location = relative.generic_string();
        if (location == file.location) return {};
        plan.sites[site] = passes::external_location{location, binding.offset, binding.length};
        return {};
    }

    const fs::path& model_path_;
    const optimize_options& options_;
    optimize_report report_;
    onnx::model_file model_;
    onnx::external_data data_;
    passes::graph_model graph_;
};

}  // namespace

result<optimize_report> optimize(const fs::path& model, const optimize_options& options) {
    return optimizer(model, options).run();
}

}  // namespace onnxstream::ops
