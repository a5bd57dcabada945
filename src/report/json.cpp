#include <onnxstream/report/json.hpp>

#include <array>

namespace onnxstream::report {

using passes::finding_kind;

namespace {

constexpr std::array finding_categories{
    finding_category{finding_kind::dead_node, "dead_nodes", "dead nodes"},
    finding_category{finding_kind::isolated_component, "isolated_components", "isolated components"},
    finding_category{finding_kind::dead_branch, "dead_branches", "dead branches"},
    finding_category{finding_kind::duplicate_node, "duplicate_computations", "duplicate computations"},
    finding_category{finding_kind::duplicate_initializer, "duplicate_initializers", "duplicate initializers"},
    finding_category{finding_kind::unused_initializer, "unused_initializers", "unused initializers"},
    finding_category{finding_kind::identity_node, "identity_nodes", "Identity / no-op nodes"},
    finding_category{finding_kind::unused_input, "unused_inputs", "unused graph inputs"},
    finding_category{finding_kind::removed_function, "unused_functions", "unused local functions"},
    finding_category{finding_kind::folded_batchnorm, "folded_batchnorms", "BatchNormalizations folded"},
    finding_category{finding_kind::folded_constant, "folded_constants", "constants folded"},
    finding_category{finding_kind::folded_shape, "folded_shapes", "shapes folded"},
    finding_category{finding_kind::nop_node, "nop_nodes", "no-op nodes"},
    finding_category{finding_kind::fused_node, "fused_nodes", "nodes that fuse"},
    finding_category{finding_kind::skipped, "skipped", "left alone, and why"},
};

void write_names(json_writer& json, const ops::finding_list::view& f) {
    json.key("names").begin_array();
    f.for_each_name([&json](std::string_view name) { json.value(name); });
    json.end_array();
}

void write_warnings(json_writer& json, const std::vector<error>& warnings) {
    json.key("warnings").begin_array();
    for (const auto& w : warnings) json.value(w.message);
    json.end_array();
}

// The fields every rewrite's report opens with: ok, input and output.
template <class Report>
void begin_rewrite(json_writer& json, const Report& r) {
    json.begin_object().field("ok", true).field("input", r.input.string()).field("output", r.output.string());
}

// The warnings, the report's closing brace, and the document.
std::string finish(json_writer& json, const std::vector<error>& warnings) {
    write_warnings(json, warnings);
    json.end_object();
    return json.text();
}

void write_strings(json_writer& json, std::string_view key, const std::vector<std::string>& items) {
    json.key(key).begin_array();
    for (const auto& item : items) json.value(item);
    json.end_array();
}

void write_path_or_null(json_writer& json, const std::optional<std::filesystem::path>& path) {
    if (path) json.value(path->string());
    else json.null();
}

// "found_by": the step's stable name (null when the file was not found), and what that
// step was given: "data_dir" for the two --data-dir steps, "common_name" for that guess.
void write_found(json_writer& json, const onnx::how_found* how) {
    json.key("found_by");
    if (how == nullptr) {
        json.null();
        return;
    }
    json.value(to_string(how->step));
    if (!how->data_dir.empty()) json.field("data_dir", how->data_dir.string());
    if (!how->common_name.empty()) json.field("common_name", how->common_name);
}

// How a data file was found, where, its size and how many tensors it holds (inspect's and
// verify's per-file rows open alike).
template <class File>
void begin_data_file(json_writer& json, const File& f) {
    json.begin_object().field("location", f.location).key("path");
    write_path_or_null(json, f.path);
    write_found(json, f.how ? &*f.how : nullptr);
    json.field("guessed", f.guessed).field("size", f.size).field("tensors", f.tensors);
}

void write_value(json_writer& json, const ops::value_summary& v) {
    json.begin_object().field("name", v.name).field("type", v.type).key("shape");
    if (v.has_shape) {
        json.begin_array();
        for (const auto& d : v.shape) json.value(d);
        json.end_array();
    } else {
        json.null();
    }
    json.end_object();
}

void write_data_files(json_writer& json, const std::vector<ops::written_data_file>& files) {
    json.key("data_files").begin_array();
    for (const auto& f : files)
        json.begin_object().field("path", f.path.string()).field("size", f.size).field("tensors", f.tensors).end_object();
    json.end_array();
}

void write_finding(json_writer& json, const ops::finding_list::view& f) {
    json.begin_object();
    if (!f.op_type.empty()) json.field("op_type", f.op_type);
    json.key("names").begin_array();
    f.for_each_name([&json](std::string_view name) { json.value(name); });
    json.end_array();
    json.field("nodes", f.nodes).field("bytes", f.bytes);
    if (!f.detail.empty()) json.field("detail", f.detail);
    json.end_object();
}

void write_counts(json_writer& json, const ops::model_counts& c) {
    json.begin_object().field("nodes", c.nodes).field("main_graph_nodes", c.main_graph_nodes);
    json.field("initializers", c.initializers).field("initializer_bytes", c.initializer_bytes).end_object();
}

}  // namespace

std::span<const finding_category> analyze_categories() noexcept { return finding_categories; }

ops::finding_list::groups analyze_groups(const ops::analyze_report& r) {
    return r.findings.grouped(finding_categories.size(), [](finding_kind kind) {
        std::size_t c = 0;
        while (c < finding_categories.size() && finding_categories[c].kind != kind) ++c;
        return c;
    });
}

namespace {

void write_remedies(json_writer& json, std::span<const remedy_step> steps, const hint_wording& wording) {
    if (!wording.list_remedies || steps.empty()) return;
    json.key("remedies").begin_array();
    for (const auto& step : steps)
        json.begin_object().field("change", to_string(step.change)).field("argument", step.argument).end_object();
    json.end_array();
}

}  // namespace

void write_error(json_writer& json, const error& e, const hint_wording& wording) {
    json.begin_object().field("code", to_string(e.code)).field("message", e.message).field("hint", worded_hint(e, wording));
    write_remedies(json, e.remedies, wording);
    if (!e.field_path.empty()) json.field("field_path", e.field_path);
    if (e.offset != error::no_offset) json.field("offset", e.offset);
    json.end_object();
}

std::string error_json(const error& e, const hint_wording& wording) {
    json_writer json;
    json.begin_object().field("ok", false).key("error");
    write_error(json, e, wording);
    json.end_object();
    return json.text();
}

std::string to_json(const ops::inspect_report& r, const hint_wording& wording) {
    json_writer json;
    json.begin_object().field("ok", r.clean()).field("path", r.path.string()).field("file_size", r.file_size);
    json.field("ir_version", r.ir_version).field("producer_name", r.producer_name).field("producer_version", r.producer_version);
    json.field("domain", r.domain).field("model_version", r.model_version).field("graph_name", r.graph_name);
    json.key("opsets").begin_array();
    for (const auto& [domain, version] : r.opsets)
        json.object("domain", domain.empty() ? std::string("ai.onnx") : domain, "version", version);
    json.end_array();
    json.key("inputs").begin_array();
    for (const auto& v : r.inputs) write_value(json, v);
    json.end_array().key("outputs").begin_array();
    for (const auto& v : r.outputs) write_value(json, v);
    json.end_array();
    json.field("nodes", r.nodes).field("main_graph_nodes", r.main_graph_nodes).key("op_types").begin_object();
    for (const auto& [op, count] : r.op_types) json.field(op, count);
    json.end_object().field("subgraphs", r.subgraphs).field("training_infos", r.training_infos);
    json.key("functions").begin_array();
    for (const auto& f : r.functions)
        json.begin_object().field("domain", f.domain).field("name", f.name).field("nodes", f.nodes).end_object();
    json.end_array();
    json.field("tensors", r.tensors).field("tensor_bytes", r.tensor_bytes);
    json.key("tensors_by_type").begin_object();
    for (const auto& [type, count] : r.by_type)
        json.key(type).begin_object().field("tensors", count.tensors).field("bytes", count.bytes).end_object();
    json.end_object().key("tensors_by_storage").begin_object();
    for (const auto& [storage, count] : r.by_storage)
        json.key(storage).begin_object().field("tensors", count.tensors).field("bytes", count.bytes).end_object();
    json.end_object();
    json.key("external_data").begin_array();
    for (const auto& f : r.data_files) {
        begin_data_file(json, f);
        json.field("bytes_needed", f.bytes_needed).field("bytes_referenced", f.bytes_referenced);
        write_strings(json, "problems", f.problems);
        if (!f.hint.empty()) {
            json.field("hint", worded_hint(f.hint, f.remedies, wording));
            write_remedies(json, f.remedies, wording);
        }
        json.end_object();
    }
    json.end_array();
    write_strings(json, "problems", r.problems);
    write_warnings(json, r.warnings);
    json.field("merged_size", r.merged_size).field("fits_2gb", r.fits_in_one_file);
    json.end_object();
    return json.text();
}

void write_json(json_writer& json, const ops::analyze_report& r) {
    json.begin_object().field("ok", true).field("path", r.path.string()).field("nodes", r.nodes);
    json.field("initializers", r.initializers).field("initializer_bytes", r.initializer_bytes);
    const auto groups = analyze_groups(r);
    json.key("scopes").begin_array();
    for (const auto& scope : r.scopes) {
        json.begin_object().field("scope", scope);
        const auto key = r.findings.key_of_scope(scope);
        for (std::size_t c = 0; c < finding_categories.size(); ++c) {
            json.key(finding_categories[c].key).begin_array();
            for (const auto position : groups.of(key, c)) write_finding(json, r.findings.at(position));
            json.end_array();
        }
        json.end_object();
    }
    json.end_array().key("summary").begin_object();
    for (const auto& c : finding_categories) {
        const auto t = r.totals(c.kind);
        json.key(c.key).begin_object().field("count", t.count).field("nodes", t.nodes).field("bytes", t.bytes).end_object();
    }
    json.field("removable_nodes", r.removable_nodes);
    json.end_object();
    write_warnings(json, r.warnings);
    json.end_object();
}

std::string to_json(const ops::analyze_report& r) {
    json_writer json;
    write_json(json, r);
    return json.text();
}

std::string to_json(const ops::externalize_report& r) {
    json_writer json;
    begin_rewrite(json, r);
    json.field("output_size", r.output_size);
    write_data_files(json, r.data_files);
    json.field("tensors_external", r.tensors_external).field("bytes_external", r.bytes_external);
    json.field("kept_small", r.kept_small).field("kept_shape_like", r.kept_shape_like).field("kept_other", r.kept_other);
    json.field("converted_typed", r.converted_typed).field("inlined", r.inlined);
    json.field("deduplicated", r.deduplicated).field("bytes_saved", r.bytes_saved).field("writer", r.writer);
    return finish(json, r.warnings);
}

std::string to_json(const ops::optimize_report& r) {
    json_writer json;
    write_json(json, r);
    return json.text();
}

void write_json(json_writer& json, const ops::optimize_report& r) {
    begin_rewrite(json, r);
    json.field("dry_run", r.dry_run).field("storage", r.storage).field("output_size", r.output_size);
    write_data_files(json, r.data_files);
    json.field("rounds", r.rounds).key("before");
    write_counts(json, r.before);
    json.key("after");
    write_counts(json, r.after);
    json.key("passes").begin_array();
    for (const auto& pass : r.passes) {
        const auto s = totals(pass);
        json.begin_object().field("name", pass.name).field("changes", pass.changes);
        json.field("nodes_removed", s.nodes).field("initializers_removed", s.initializers).field("bytes_removed", s.bytes);
        json.field("value_info_removed", s.value_info).field("functions_removed", s.functions);
        json.field("folded", s.folded).field("branches_replaced", s.branches).field("skipped", s.skipped);
        json.key("findings").begin_array();
        pass.findings.for_each([&json](const ops::finding_list::view& f) {
            json.begin_object().field("kind", passes::to_string(f.kind)).field("scope", f.scope);
            if (!f.op_type.empty()) json.field("op_type", f.op_type);
            write_names(json, f);
            json.field("nodes", f.nodes).field("bytes", f.bytes);
            if (f.count != 1) json.field("count", f.count);
            if (!f.detail.empty()) json.field("detail", f.detail);
            json.end_object();
        });
        json.end_array().end_object();
    }
    json.end_array().field("stale_value_info", r.stale_value_info);
    write_warnings(json, r.warnings);
    json.field("writer", r.writer).end_object();
}

std::string to_json(const ops::verify_report& r, const hint_wording& wording) {
    json_writer json;
    json.begin_object().field("ok", r.clean()).field("path", r.path.string()).field("file_size", r.file_size);
    json.field("structure_ok", r.structure_ok).field("tensors", r.tensors).field("external_tensors", r.external_tensors);
    json.field("checksums", r.checksums).field("checksums_matched", r.checksums_matched).field("bytes_hashed", r.bytes_hashed);
    json.key("files").begin_array();
    for (const auto& f : r.files) {
        begin_data_file(json, f);
        json.field("bytes_referenced", f.bytes_referenced).field("unreferenced_bytes", f.unreferenced_bytes);
        json.end_object();
    }
    json.end_array().key("problems").begin_array();
    for (const auto& p : r.problems) {
        json.begin_object().field("check", to_string(p.check)).field("code", to_string(p.what.code));
        json.field("tensor", p.tensor).field("location", p.location).key("file");
        write_path_or_null(json, p.file);
        json.field("message", p.what.message).field("hint", worded_hint(p.what, wording));
        write_remedies(json, p.what.remedies, wording);
        json.field("field_path", p.what.field_path);
        json.end_object();
    }
    json.end_array();
    write_strings(json, "notes", r.notes);
    json.end_object();
    return json.text();
}

std::string to_json(const ops::diff_report& r) {
    json_writer json;
    json.begin_object().field("ok", r.equivalent).field("a", r.a.string()).field("b", r.b.string());
    json.field("equivalent", r.equivalent).field("byte_identical", r.byte_identical);
    json.key("tensors")
        .begin_object()
        .field("a", r.tensors_a)
        .field("b", r.tensors_b)
        .field("differing", r.differing_tensors)
        .end_object();
    json.key("nodes").begin_object().field("a", r.nodes_a).field("b", r.nodes_b).field("differing", r.differing_nodes).end_object();
    json.field("other_differences", r.other_differences).field("bytes_hashed", r.bytes_hashed);
    json.key("differences").begin_array();
    for (const auto& d : r.differences) {
        json.begin_object().field("kind", to_string(d.kind)).field("what", d.what).field("name", d.name);
        json.field("path", d.path).field("detail", d.detail).end_object();
    }
    json.end_array().end_object();
    return json.text();
}

std::string to_json(const ops::convert_report& r, std::string_view dtype) {
    json_writer json;
    begin_rewrite(json, r);
    json.field("dtype", dtype).field("output_size", r.output_size).field("external_layout", r.external_layout);
    write_data_files(json, r.data_files);
    json.field("tensors_converted", r.tensors_converted).field("tensors_kept_float32", r.tensors_kept_float32);
    json.field("bytes_before", r.bytes_before).field("bytes_after", r.bytes_after).field("saturated", r.saturated);
    json.field("casts_inserted", r.casts_inserted).field("nodes_blocked", r.nodes_blocked);
    json.field("types_changed", r.types_changed).field("cast_targets_changed", r.cast_targets_changed);
    json.field("casts_made_identity", r.casts_made_identity)
        .field("nodes_type_checked", r.nodes_type_checked)
        .field("bytes_kept_float32", r.bytes_kept_float32);
    json.key("kept_wide").begin_array();
    for (const auto& w : r.kept_wide)
        json.begin_object()
            .field("name", w.name)
            .field("values", w.values)
            .field("largest", static_cast<double>(w.largest))
            .end_object();
    json.end_array();
    json.field("writer", r.writer);
    return finish(json, r.warnings);
}

std::string to_json(const ops::safetensors_report& r) {
    json_writer json;
    json.begin_object().field("ok", true).field("input", r.input.string()).key("files").begin_array();
    for (const auto& f : r.files)
        json.begin_object().field("path", f.path.string()).field("size", f.size).field("tensors", f.tensors).end_object();
    json.end_array();
    if (r.index) json.field("index", r.index->string());
    if (r.linked)
        json.field("linked", r.linked->string()).field("linked_size", r.linked_size).field("kept_embedded", r.kept_embedded);
    json.field("tensors", r.tensors).field("bytes", r.bytes).field("writer", r.writer);
    return finish(json, r.warnings);
}

std::string to_json(const ops::export_caffe_report& r, double tolerance) {
    json_writer json;
    json.begin_object().field("ok", r.written && (!r.check.ran || r.check.passed)).field("input", r.input.string());
    json.field("prototxt", r.prototxt.string()).field("caffemodel", r.caffemodel.string()).field("dialect", r.dialect);
    json.field("written", r.written).field("layers", static_cast<std::uint64_t>(r.layers.size()));
    json.field("folded_batchnorms", r.folded_batchnorms).field("caffemodel_size", r.caffemodel_size);
    json.field("copied_weight_bytes", r.copied_bytes).field("computed_weight_bytes", r.computed_bytes);
    if (!r.report_json.empty()) json.field("report_json", r.report_json.string()).field("report_html", r.report_html.string());
    json.key("refusals").begin_array();
    for (const auto& x : r.refusals) json.object("op_type", x.op_type, "node", x.node, "why", x.why, "hint", x.hint);
    json.end_array().key("blocked").begin_array();
    for (const auto& b : r.blocked) json.value(b);
    json.end_array().key("decisions").begin_array();
    for (const auto& d : r.decisions)
        json.begin_object().field("kind", d.kind).field("layer", d.layer).field("detail", d.detail).end_object();
    json.end_array().key("check");
    if (!r.check.ran) {
        json.begin_object().field("ran", false).end_object();
    } else {
        json.begin_object().field("ran", true).field("passed", r.check.passed).field("tolerance", tolerance);
        json.field("max_relative_error", r.check.max_relative_error).field("compared_blobs", r.check.compared_blobs);
        json.field("reference_seconds", r.check.reference_seconds).field("opencv_seconds", r.check.opencv_seconds);
        json.key("outputs").begin_array();
        for (const auto& o : r.check.outputs)
            json.object("name", o.name, "max_abs_error", o.max_abs_error, "magnitude", o.magnitude, "relative_error",
                        o.relative_error);
        json.end_array().end_object();
    }
    write_warnings(json, r.warnings);
    json.field("seconds", r.seconds).end_object();
    return json.text();
}

void write_merged(json_writer& json, const std::string& input, const ops::merge_report& r) {
    json.begin_object().field("input", input).field("ok", true).field("output", r.output.string());
    json.field("output_size", r.output_size).field("tensors_inlined", r.tensors_inlined);
    json.field("bytes_inlined", r.bytes_inlined).field("writer", r.writer).key("data_files").begin_array();
    for (const auto& f : r.data_files) {
        json.begin_object().field("location", f.location).field("path", f.path.string());
        write_found(json, &f.how);
        json.field("guessed", f.guessed).field("tensors", f.tensors).field("bytes", f.bytes).end_object();
    }
    json.end_array();
    write_warnings(json, r.warnings);
    json.end_object();
}

void write_merge_failure(json_writer& json, const std::string& input, const error& e, const hint_wording& wording) {
    json.begin_object().field("input", input).field("ok", false).key("error");
    write_error(json, e, wording);
    json.end_object();
}

std::string merge_json(const std::string& input, const result<ops::merge_report>& r, const hint_wording& wording) {
    json_writer json;
    json.begin_object().key("models").begin_array();
    if (r) write_merged(json, input, *r);
    else write_merge_failure(json, input, r.error(), wording);
    json.end_array().field("ok", r.has_value()).end_object();
    return json.text();
}

}  // namespace onnxstream::report
