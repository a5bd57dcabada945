#include <onnxstream/passes/pass_registry.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/safe_text.hpp>
#include <onnxstream/report/text.hpp>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace onnxstream::report {

using passes::finding_kind;

namespace {

// Text built piece by piece with printf formats; each piece is made safe on its own, so
// that what is shown is exactly what printing each piece to a terminal would show.
class text_lines {
public:
#if defined(__MINGW32__)  // mingw's `printf` archetype is msvcrt's, which has no %zu
    void add(const char* format, ...) __attribute__((format(gnu_printf, 2, 3)));
#else
    void add(const char* format, ...) __attribute__((format(printf, 2, 3)));
#endif
    [[nodiscard]] std::string take() { return std::move(text_); }

private:
    std::string text_;
};

void text_lines::add(const char* format, ...) {
    std::va_list args;
    va_start(args, format);
    text_ += safe_vformat(format, args);
    va_end(args);
}

using ull = unsigned long long;

std::string describe_value(const ops::value_summary& v) {
    std::string text = v.name + ": " + (v.type.empty() ? "?" : v.type);
    if (v.has_shape) {
        text += "[";
        for (std::size_t i = 0; i < v.shape.size(); ++i) text += (i ? ", " : "") + v.shape[i];
        text += "]";
    }
    return text;
}

void add_data_files(text_lines& out, const std::vector<ops::written_data_file>& files) {
    for (const auto& f : files)
        out.add("  data %s: %s, %s\n", f.path.string().c_str(), plural(f.tensors, "tensor").c_str(), human_bytes(f.size).c_str());
}

std::string describe(const ops::finding_list::view& f) {
    std::string text;
    if (!f.op_type.empty()) text += terminal_safe(f.op_type) + " ";
    std::size_t i = 0;
    f.for_each_name([&](std::string_view name) {
        if (i < 8) text += (i ? ", " : "") + terminal_safe(name);
        ++i;
    });
    if (f.name_count > 8) text += ", ... (" + std::to_string(f.name_count) + ")";
    std::string saves;
    if (f.nodes > 0) saves += plural(f.nodes, "node");
    if (f.bytes > 0) saves += (saves.empty() ? "" : ", ") + human_bytes(f.bytes);
    if (!saves.empty()) text += " [" + saves + "]";
    if (!f.detail.empty()) text += ": " + terminal_safe(f.detail);
    return text;
}

std::string summary_line(const ops::pass_result& pass, bool dry_run) {
    const auto s = ops::totals(pass);
    std::string line;
    auto add = [&](const std::string& part) { line += (line.empty() ? "" : ", ") + part; };
    const auto* entry = passes::find_pass(pass.name);
    if (entry != nullptr && entry->headline.kind != finding_kind::skipped) {
        const auto& h = entry->headline;
        std::uint64_t count = 0;
        pass.findings.for_each([&](const ops::finding_list::view& f) { count += f.kind == h.kind ? 1U : 0U; });
        count += pass.findings.counted(h.kind).findings;
        add(std::string(dry_run ? h.would : h.done) + " " + plural(count, h.noun));
    }
    if (s.nodes > 0 || entry == nullptr || entry->always_count_nodes)
        add((dry_run ? "would remove " : "removed ") + plural(s.nodes, "node"));
    if (s.initializers > 0) add(plural(s.initializers, "initializer") + " (" + human_bytes(s.bytes) + ")");
    if (s.value_info > 0) add(plural(s.value_info, "value_info"));
    if (s.functions > 0) add(plural(s.functions, "function"));
    if (s.skipped > 0) add(std::to_string(s.skipped) + " skipped");
    return line;
}

std::string where(const ops::verify_problem& p) {
    std::string text;
    if (!p.tensor.empty()) text += "tensor '" + p.tensor + "'";
    if (!p.location.empty()) {
        text += (text.empty() ? "" : " in ") + p.location;
        if (p.file && p.file->filename().string() != p.location) text += " (" + p.file->string() + ")";
    }
    return text;
}

}  // namespace

std::string plural(std::uint64_t n, std::string_view word) {
    return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

std::string to_text(const ops::inspect_report& r, const hint_wording& wording) {
    text_lines out;
    out.add("%s  (%s)\n", terminal_safe(r.path.string()).c_str(), human_bytes(r.file_size).c_str());
    out.add("  IR version %lld", static_cast<long long>(r.ir_version));
    if (!r.producer_name.empty())
        out.add(", produced by %s%s%s", terminal_safe(r.producer_name).c_str(), r.producer_version.empty() ? "" : " ",
                terminal_safe(r.producer_version).c_str());
    out.add("\n  opsets:");
    for (const auto& [domain, version] : r.opsets)
        out.add(" %s %lld", domain.empty() ? "ai.onnx" : terminal_safe(domain).c_str(), static_cast<long long>(version));
    out.add("\n");
    if (!r.graph_name.empty()) out.add("  graph: %s\n", terminal_safe(r.graph_name).c_str());
    for (const auto& v : r.inputs) out.add("  input  %s\n", terminal_safe(describe_value(v)).c_str());
    for (const auto& v : r.outputs) out.add("  output %s\n", terminal_safe(describe_value(v)).c_str());
    out.add("  %s (%llu in the main graph), %s, %s\n", plural(r.nodes, "node").c_str(), static_cast<ull>(r.main_graph_nodes),
            plural(r.subgraphs, "subgraph").c_str(), plural(r.functions.size(), "function").c_str());
    std::string ops_line;
    for (const auto& [op, count] : r.op_types) ops_line += " " + terminal_safe(op) + " " + std::to_string(count) + ",";
    if (!ops_line.empty()) {
        ops_line.pop_back();
        out.add("   %s\n", ops_line.c_str());
    }
    out.add("  %s, %s\n", plural(r.tensors, "tensor").c_str(), human_bytes(r.tensor_bytes).c_str());
    for (const auto& [type, count] : r.by_type)
        out.add("    %-10s %6llu  %s\n", type.c_str(), static_cast<ull>(count.tensors), human_bytes(count.bytes).c_str());
    for (const auto& [storage, count] : r.by_storage)
        out.add("    stored %-8s %llu tensors, %s\n", storage.c_str(), static_cast<ull>(count.tensors),
                human_bytes(count.bytes).c_str());
    if (r.data_files.empty()) out.add("  no external data\n");
    for (const auto& f : r.data_files) {
        out.add("  external data '%s'\n", terminal_safe(f.location).c_str());
        if (f.path && f.how)
            out.add("    found: %s (%s)\n", terminal_safe(f.path->string()).c_str(),
                    worded_found(*f.how, *f.path, wording).c_str());
        else out.add("    NOT FOUND\n");
        out.add("    %s, needs %s", plural(f.tensors, "tensor").c_str(), human_bytes(f.bytes_needed).c_str());
        if (f.size) out.add(", file is %s", human_bytes(*f.size).c_str());
        out.add("\n");
        for (const auto& p : f.problems) out.add("    problem: %s\n", p.c_str());
        if (!f.hint.empty()) out.add("    %s\n", worded_hint(f.hint, f.remedies, wording).c_str());
    }
    if (r.merged_size)
        out.add("  merged: %s (%llu bytes), %s\n", human_bytes(*r.merged_size).c_str(), static_cast<ull>(*r.merged_size),
                r.fits_in_one_file ? "fits in one .onnx file" : "over the 2 GB limit: keep external data (repack)");
    else out.add("  merged: unknown until the problems above are fixed\n");
    return out.take();
}

std::string to_text(const ops::analyze_report& r) {
    text_lines out;
    out.add("%s: %s, %s (%s)\n", r.path.string().c_str(), plural(r.nodes, "node").c_str(),
            plural(r.initializers, "initializer").c_str(), human_bytes(r.initializer_bytes).c_str());
    bool any = false;
    const auto groups = analyze_groups(r);
    const auto categories = analyze_categories();
    for (const auto& scope : r.scopes) {
        bool header = false;
        const auto key = r.findings.key_of_scope(scope);
        for (std::size_t c = 0; c < categories.size(); ++c) {
            const auto items = groups.of(key, c);
            if (items.empty()) continue;
            if (!header) out.add("%s\n", scope.c_str());
            header = any = true;
            out.add("  %s: %zu\n", categories[c].title, items.size());
            for (std::size_t i = 0; i < items.size() && i < 20; ++i)
                out.add("    %s\n", describe(r.findings.at(items[i])).c_str());
            if (items.size() > 20) out.add("    ... and %zu more (the JSON report lists all)\n", items.size() - 20);
        }
    }
    // "Nothing" only when optimize would change nothing either: removable_nodes is its count.
    if (!any && r.removable_nodes == 0) {
        out.add("  nothing redundant found\n");
        return out.take();
    }
    out.add("summary:\n");
    for (const auto& c : analyze_categories()) {
        const auto t = r.totals(c.kind);
        if (t.count == 0) continue;
        out.add("  %-26s %6llu", c.title, static_cast<ull>(t.count));
        if (t.nodes > 0) out.add("  %s", plural(t.nodes, "node").c_str());
        if (t.bytes > 0) out.add("  %s", human_bytes(t.bytes).c_str());
        out.add("\n");
    }
    out.add("  %s removable in all (each counted once)\n", plural(r.removable_nodes, "node").c_str());
    return out.take();
}

std::string to_text(const ops::externalize_report& r) {
    text_lines out;
    out.add("%s -> %s (%s)\n", r.input.string().c_str(), r.output.string().c_str(), human_bytes(r.output_size).c_str());
    add_data_files(out, r.data_files);
    out.add("  %s external (%s); kept embedded: %llu small, %llu shape-like, %llu other\n",
            plural(r.tensors_external, "tensor").c_str(), human_bytes(r.bytes_external).c_str(), static_cast<ull>(r.kept_small),
            static_cast<ull>(r.kept_shape_like), static_cast<ull>(r.kept_other));
    if (r.converted_typed > 0)
        out.add("  %s converted from typed fields to raw bytes\n", plural(r.converted_typed, "tensor").c_str());
    if (r.deduplicated > 0)
        out.add("  %s deduplicated, %s saved\n", plural(r.deduplicated, "tensor").c_str(), human_bytes(r.bytes_saved).c_str());
    return out.take();
}

std::string to_text(const ops::optimize_report& r) {
    text_lines out;
    if (r.dry_run) out.add("%s (dry run, nothing written)", r.input.string().c_str());
    else out.add("%s -> %s (%s)", r.input.string().c_str(), r.output.string().c_str(), human_bytes(r.output_size).c_str());
    if (r.rounds == 0) out.add(", nothing to change\n");
    else out.add(", %s until nothing changed\n", plural(r.rounds, "round").c_str());
    add_data_files(out, r.data_files);
    out.add("  nodes %llu -> %llu (main graph %llu -> %llu), initializers %llu -> %llu (%s -> %s)\n",
            static_cast<ull>(r.before.nodes), static_cast<ull>(r.after.nodes), static_cast<ull>(r.before.main_graph_nodes),
            static_cast<ull>(r.after.main_graph_nodes), static_cast<ull>(r.before.initializers),
            static_cast<ull>(r.after.initializers), human_bytes(r.before.initializer_bytes).c_str(),
            human_bytes(r.after.initializer_bytes).c_str());
    int width = 0;
    for (const auto& pass : r.passes) width = std::max(width, static_cast<int>(pass.name.size() + 1));
    for (const auto& pass : r.passes) {
        out.add("  %-*s %s\n", width, (pass.name + ":").c_str(), summary_line(pass, r.dry_run).c_str());
        std::size_t shown = 0;
        pass.findings.for_each([&](const ops::finding_list::view& f) {
            if (f.kind != finding_kind::skipped || shown > 10) return;
            if (++shown > 10) {
                out.add("    ... (the JSON report lists every skip)\n");
                return;
            }
            std::string first;
            f.for_each_name([&first, i = 0](std::string_view name) mutable {
                if (i++ == 0) first = name;
            });
            out.add("    skipped %s%s: %s\n", f.op_type.empty() ? "" : (std::string(f.op_type) + " ").c_str(), first.c_str(),
                    std::string(f.detail).c_str());
        });
    }
    return out.take();
}

std::string to_text(const ops::verify_report& r, const hint_wording& wording, text_detail detail) {
    text_lines out;
    for (const auto& p : r.problems) {
        const auto place = where(p);
        out.add("problem: [%s] %s%s%s\n", to_string(p.check), terminal_safe(place).c_str(), place.empty() ? "" : ": ",
                terminal_safe(p.what.describe()).c_str());
        if (!p.what.hint.empty()) out.add("  %s\n", worded_hint(p.what, wording).c_str());
    }
    if (detail == text_detail::findings) return out.take();
    for (const auto& n : r.notes) out.add("note: %s\n", terminal_safe(n).c_str());
    out.add("%s: %s", r.path.string().c_str(), r.clean() ? "OK" : plural(r.problems.size(), "problem").c_str());
    if (r.structure_ok) {
        out.add(" (%s, %llu external in %s; ", plural(r.tensors, "tensor").c_str(), static_cast<ull>(r.external_tensors),
                plural(r.files.size(), "file").c_str());
        if (r.checksums == 0) out.add("no checksums)");
        else
            out.add("%llu of %s match, %s hashed)", static_cast<ull>(r.checksums_matched),
                    plural(r.checksums, "checksum").c_str(), human_bytes(r.bytes_hashed).c_str());
    }
    out.add("\n");
    return out.take();
}

std::string to_text(const ops::diff_report& r) {
    text_lines out;
    const auto a = r.a.string();
    const auto b = r.b.string();
    if (r.equivalent) {
        out.add("%s and %s are equivalent%s\n", a.c_str(), b.c_str(),
                r.byte_identical ? " (the .onnx files are byte-identical)" : " (stored differently)");
        return out.take();
    }
    out.add("%s and %s differ: %s, %s, %s%s\n", a.c_str(), b.c_str(), plural(r.differing_tensors, "tensor").c_str(),
            plural(r.differing_nodes, "node").c_str(), plural(r.other_differences, "other difference").c_str(),
            r.byte_identical ? " (yet the .onnx files are byte-identical: their external data differs)" : "");
    for (const auto& d : r.differences) {
        const char* side = d.kind == ops::difference_kind::only_in_b ? " [B]" : "";
        out.add("  %s%s%s at %s%s: %s\n", d.what.c_str(), d.name.empty() ? "" : " '",
                d.name.empty() ? "" : (terminal_safe(d.name) + "'").c_str(), terminal_safe(d.path).c_str(), side,
                terminal_safe(d.detail).c_str());
    }
    const auto listed = r.differences.size();
    const auto total = r.differing_tensors + r.differing_nodes + r.other_differences;
    if (total > listed) out.add("  ... and %llu more\n", static_cast<ull>(total - listed));
    return out.take();
}

std::string to_text(const ops::convert_report& r, std::string_view dtype) {
    text_lines out;
    const std::string type(dtype);
    out.add("%s -> %s (%s, %s)\n", r.input.string().c_str(), r.output.string().c_str(), type.c_str(),
            human_bytes(r.output_size).c_str());
    add_data_files(out, r.data_files);
    out.add("  %s converted: %s -> %s; %s kept float32\n", plural(r.tensors_converted, "tensor").c_str(),
            human_bytes(r.bytes_before).c_str(), human_bytes(r.bytes_after).c_str(),
            plural(r.tensors_kept_float32, "tensor").c_str());
    out.add("  %s inserted, %s computing in float32, %s retyped (inputs, outputs, value_info)\n",
            plural(r.casts_inserted, "Cast").c_str(), plural(r.nodes_blocked, "node").c_str(),
            plural(r.types_changed, "declared type").c_str());
    if (r.nodes_type_checked > 0)
        out.add("  %s of them so that the types check against the operator schemas\n",
                plural(r.nodes_type_checked, "node").c_str());
    if (!r.kept_wide.empty()) {
        out.add("  %s that float16 would saturate kept float32 (--allow-saturation converts anyway)\n",
                plural(r.kept_wide.size(), "tensor").c_str());
        constexpr std::size_t shown = 8;
        for (std::size_t i = 0; i < r.kept_wide.size() && i < shown; ++i)
            out.add("    %s: %s beyond +-65504, largest %g\n", terminal_safe(r.kept_wide[i].name).c_str(),
                    plural(r.kept_wide[i].values, "value").c_str(), static_cast<double>(r.kept_wide[i].largest));
        if (r.kept_wide.size() > shown) out.add("    ... and %zu more (--json lists them all)\n", r.kept_wide.size() - shown);
    }
    if (r.saturated > 0) out.add("  %s beyond the float16 range saturated to +-65504\n", plural(r.saturated, "value").c_str());
    return out.take();
}

std::string to_text(const ops::safetensors_report& r) {
    text_lines out;
    out.add("%s -> %s in %s (%s)\n", r.input.string().c_str(), plural(r.tensors, "tensor").c_str(),
            plural(r.files.size(), "safetensors file").c_str(), human_bytes(r.bytes).c_str());
    for (const auto& f : r.files)
        out.add("  %s: %s, %s\n", f.path.string().c_str(), plural(f.tensors, "tensor").c_str(), human_bytes(f.size).c_str());
    if (r.index) out.add("  index %s\n", r.index->string().c_str());
    if (r.linked) out.add("  linked model %s (%s)\n", r.linked->string().c_str(), human_bytes(r.linked_size).c_str());
    return out.take();
}

std::string to_text(const ops::export_caffe_report& r) {
    text_lines out;
    out.add("%s -> %s + %s (%s, %s; %s folded)\n", r.input.string().c_str(), r.prototxt.string().c_str(),
            r.caffemodel.string().c_str(), plural(r.layers.size(), "layer").c_str(), human_bytes(r.caffemodel_size).c_str(),
            plural(r.folded_batchnorms, "BatchNormalization").c_str());
    for (const auto& d : r.decisions)
        if (d.kind == "input-shape") out.add("  input %s: %s\n", d.layer.c_str(), d.detail.c_str());
    if (r.check.ran)
        out.add("  check: %s, largest error %.3g of the output's magnitude (%s compared; reference %.3f s, OpenCV %.3f s)\n",
                r.check.passed ? "passed" : "FAILED", r.check.max_relative_error, plural(r.check.compared_blobs, "blob").c_str(),
                r.check.reference_seconds, r.check.opencv_seconds);
    if (!r.report_html.empty()) out.add("  report: %s, %s\n", r.report_html.string().c_str(), r.report_json.string().c_str());
    return out.take();
}

std::string refusals_text(const ops::export_caffe_report& r, [[maybe_unused]] const hint_wording& wording) {
    // One line per operator and reason, in graph order of first appearance, with a count
    // and the first names: a hundred nodes refused for one reason are one line (--json
    // lists them all).
    struct group {
        const caffe::refusal* first;
        std::vector<const std::string*> nodes;
    };
    std::vector<group> groups;
    for (const auto& x : r.refusals) {
        auto same = std::find_if(groups.begin(), groups.end(), [&](const group& g) {
            return g.first->op_type == x.op_type && g.first->why == x.why && g.first->hint == x.hint;
        });
        if (same == groups.end()) same = groups.insert(groups.end(), group{&x, {}});
        same->nodes.push_back(&x.node);
    }
    constexpr std::size_t shown_names = 4;
    text_lines out;
    out.add("onnxstream: error: %s cannot be exported to Caffe exactly; nothing was written\n",
            plural(r.refusals.size(), "node").c_str());
    for (const auto& g : groups) {
        std::string names;
        for (std::size_t i = 0; i < g.nodes.size() && i < shown_names; ++i) names += (i ? ", " : "") + terminal_safe(*g.nodes[i]);
        if (g.nodes.size() > shown_names) names += " and " + std::to_string(g.nodes.size() - shown_names) + " more";
        out.add("  %s (%s: %s): %s (try: %s)\n", terminal_safe(g.first->op_type).c_str(), plural(g.nodes.size(), "node").c_str(),
                names.c_str(), terminal_safe(g.first->why).c_str(), terminal_safe(g.first->hint).c_str());
    }
    if (!r.blocked.empty())
        out.add("  %s after these were not checked: their inputs come from the nodes above\n",
                plural(r.blocked.size(), "more node").c_str());
    // No "run optimize first": the export folds what it needs itself.
    out.add("  change these nodes in the source model, then export again; --json lists every node\n");
    return out.take();
}

std::string merged_text(const std::string& input, const ops::merge_report& r, const hint_wording& wording) {
    text_lines out;
    if (r.tensors_inlined == 0) {
        out.add("%s -> %s: no external data; copied unchanged (%s)\n", input.c_str(), r.output.string().c_str(),
                human_bytes(r.output_size).c_str());
        return out.take();
    }
    out.add("%s -> %s: inlined %s (%s), output %s\n", input.c_str(), r.output.string().c_str(),
            plural(r.tensors_inlined, "tensor").c_str(), human_bytes(r.bytes_inlined).c_str(),
            human_bytes(r.output_size).c_str());
    for (const auto& f : r.data_files)
        out.add("  from %s (%s): %s\n", f.path.string().c_str(), worded_found(f.how, f.path, wording).c_str(),
                plural(f.tensors, "tensor").c_str());
    return out.take();
}

// The message is one line whatever a model's strings hold; a hint may list several.
std::string error_text(const error& e, severity level, const hint_wording& wording) {
    text_lines out;
    out.add("onnxstream: %s: %s\n", level == severity::error ? "error" : "warning", terminal_safe(e.describe()).c_str());
    if (!e.hint.empty()) out.add("  %s\n", worded_hint(e, wording).c_str());
    return out.take();
}

}  // namespace onnxstream::report
