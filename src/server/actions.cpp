#include "actions.hpp"

#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/ops/analyze.hpp>
#include <onnxstream/ops/convert.hpp>
#include <onnxstream/ops/diff.hpp>
#include <onnxstream/ops/export_caffe.hpp>
#include <onnxstream/ops/export_safetensors.hpp>
#include <onnxstream/ops/externalize.hpp>
#include <onnxstream/ops/merge.hpp>
#include <onnxstream/ops/optimize.hpp>
#include <onnxstream/ops/verify.hpp>
#include <onnxstream/report/byte_size.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/text.hpp>

#include <array>
#include <charconv>
#include <cstdlib>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- field values

result<std::uint64_t> parse_size(std::string_view text, std::string_view name) {
    if (const auto size = report::parse_size(text)) return *size;
    return failure(
        error_code::invalid_argument,
        "the field '" + std::string(name) + "' takes a size such as 4096, 64K, 1M or 2G, not '" + std::string(text) + "'");
}

// Sets `target` from the size field `name` when it is given.
template <class Target>  // std::uint64_t or std::optional<std::uint64_t>
result<void> read_size(const action_input& in, std::string_view name, Target& target) {
    if (const auto v = in.text(name); !v.empty()) {
        ONNXSTREAM_ASSIGN(target, parse_size(v, name));
    }
    return {};
}

// The shard-size field: a size, more than 0.
result<void> read_shard_size(const action_input& in, std::uint64_t& target) {
    ONNXSTREAM_TRY(read_size(in, "shard-size", target));
    if (!in.text("shard-size").empty() && target == 0)
        return failure(error_code::invalid_argument, "the shard size must be more than 0");
    return {};
}

result<unsigned> parse_count(std::string_view text, std::string_view name) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        return failure(error_code::invalid_argument,
                       "the field '" + std::string(name) + "' takes a whole number, not '" + std::string(text) + "'");
    return value;
}

// The fields data, data-dir and threads (the CLI's --data, --data-dir, --threads).
template <class Options>
result<void> fill_inputs(const action_input& in, Options& options) {
    ONNXSTREAM_ASSIGN(const auto data, in.path_field("data"));
    if (!data.empty()) options.data.data_files.push_back(data);
    ONNXSTREAM_ASSIGN(const auto data_dir, in.path_field("data-dir"));
    if (!data_dir.empty()) options.data.data_dirs.push_back(data_dir);
    if (const auto threads = in.text("threads"); !threads.empty()) {
        ONNXSTREAM_ASSIGN(options.threads, parse_count(threads, "threads"));
    }
    options.cancel = in.cancel;
    options.on_progress = in.on_progress;
    return {};
}

// The output field, or `fallback` when it is empty.
result<fs::path> output_or(const action_input& in, const fs::path& fallback) {
    ONNXSTREAM_ASSIGN(auto output, in.path_field("output"));
    if (output.empty()) output = fallback;
    return output;
}

// Fields every rewriting action shares (the CLI's --data, --data-dir, --threads, ...).
result<void> fill_rewrite(const action_input& in, ops::rewrite_options& options, std::string_view suffix) {
    ONNXSTREAM_TRY(fill_inputs(in, options));
    options.backend = in.writer;
    options.force = in.flag("force");
    options.allow_size_mismatch = in.flag("allow-size-mismatch");
    options.strict = in.flag("strict");
    if (!suffix.empty()) {
        ONNXSTREAM_ASSIGN(options.output, output_or(in, ops::default_output(in.model, std::string(suffix))));
    }
    return {};
}

template <class Report>
std::vector<fs::path> written(const Report& r) {
    std::vector<fs::path> files{r.output};
    for (const auto& f : r.data_files) files.push_back(f.path);
    return files;
}

// ---------------------------------------------------------------- the actions

constexpr field_spec output_field{"output", field_kind::path, "", "the output model (default: beside the input)"};
constexpr field_spec data_field{"data", field_kind::path, "", "an external data file, if it is not beside the model"};
constexpr field_spec data_dir_field{"data-dir", field_kind::path, "", "a folder to look for external data files in"};
constexpr field_spec threads_field{"threads", field_kind::count, "", "worker threads (default: the number of cores)"};
constexpr field_spec force_field{"force", field_kind::flag, "", "replace existing outputs"};

constexpr field_spec data_name_field{"data-name", field_kind::text, "",
                                     "the data file's name (default: <output file name>.data)"};
constexpr field_spec threshold_field{"threshold", field_kind::size, "1024", "smallest tensor to move out (sizes take K, M, G)"};
constexpr field_spec align_field{"align", field_kind::size, "4096", "offset alignment of large tensors (0 = dense)"};
constexpr field_spec shard_size_field{"shard-size", field_kind::size, "", "several data files of at most this size"};
constexpr field_spec align_threshold_field{"align-threshold", field_kind::size, "1M",
                                           "only tensors at least this large are aligned; smaller stay dense"};

constexpr std::array merge_fields{
    output_field,
    data_field,
    data_dir_field,
    threads_field,
    field_spec{"allow-size-mismatch", field_kind::flag, "", "warn instead of failing when bytes != dims x element size"},
    field_spec{"strict", field_kind::flag, "", "fail when a SHA-1 checksum does not match"},
    force_field};

result<action_outcome> run_merge(const action_input& in) {
    ops::rewrite_options options;
    ONNXSTREAM_TRY(fill_rewrite(in, options, "merged"));
    ONNXSTREAM_ASSIGN(const auto r, ops::merge(in.model, options));
    return action_outcome{report::merge_json(in.model.string(), r, page_wording()),
                          report::merged_text(in.model.string(), r, page_wording()),
                          {r.output}};
}

constexpr std::array split_fields{output_field, data_name_field, threshold_field, align_field, align_threshold_field,
                                  data_field,   data_dir_field,  threads_field,   force_field};

constexpr std::array repack_fields{
    output_field,
    data_name_field,
    threshold_field,
    align_field,
    align_threshold_field,
    shard_size_field,
    field_spec{"dedupe", field_kind::flag, "", "store identical tensors once"},
    field_spec{"write-checksums", field_kind::flag, "", "write each tensor's SHA-1 into its 'checksum' key"},
    data_field,
    data_dir_field,
    threads_field,
    force_field};

result<action_outcome> run_externalize(const action_input& in, ops::externalize_kind kind) {
    auto options = ops::externalize_defaults(kind);
    ONNXSTREAM_TRY(fill_rewrite(in, options, options.output_suffix));
    options.data_name = std::string(in.text("data-name"));  // ops refuses a path here
    ONNXSTREAM_TRY(read_size(in, "threshold", options.threshold));
    ONNXSTREAM_TRY(read_size(in, "align", options.alignment));
    ONNXSTREAM_TRY(read_size(in, "align-threshold", options.align_threshold));
    ONNXSTREAM_TRY(read_shard_size(in, options.shard_size));
    options.dedupe = in.flag("dedupe");
    options.write_checksums = in.flag("write-checksums");
    ONNXSTREAM_ASSIGN(const auto r, ops::externalize(in.model, options));
    return action_outcome{report::to_json(r), report::to_text(r), written(r)};
}

result<action_outcome> run_split(const action_input& in) { return run_externalize(in, ops::externalize_kind::split); }
result<action_outcome> run_repack(const action_input& in) { return run_externalize(in, ops::externalize_kind::repack); }

constexpr std::array optimize_fields{
    output_field,
    field_spec{"passes", field_kind::text, "", "comma-separated passes, in order (default: all of them)"},
    field_spec{"fold-limit", field_kind::size, "1M", "the largest tensor folding may create or read"},
    data_field,
    data_dir_field,
    field_spec{"dry-run", field_kind::flag, "", "run the passes and report, write nothing"},
    field_spec{"reuse-data", field_kind::flag, "", "point at the input's data files instead of copying them"},
    threads_field,
    force_field};

result<action_outcome> run_optimize(const action_input& in) {
    ops::optimize_options options;
    ONNXSTREAM_TRY(fill_rewrite(in, options, "optimized"));
    if (const auto list = in.text("passes"); !list.empty()) {
        ONNXSTREAM_ASSIGN(options.passes, ops::parse_pass_list(list));
    }
    ONNXSTREAM_TRY(read_size(in, "fold-limit", options.fold_limit));
    options.dry_run = in.flag("dry-run");
    options.reuse_data = in.flag("reuse-data");
    ONNXSTREAM_ASSIGN(const auto r, ops::optimize(in.model, options));
    return action_outcome{report::to_json(r), report::to_text(r), r.dry_run ? std::vector<fs::path>{} : written(r)};
}

constexpr std::array verify_fields{data_field, data_dir_field, threads_field};

result<action_outcome> run_verify(const action_input& in) {
    ops::verify_options options;
    ONNXSTREAM_TRY(fill_inputs(in, options));
    ONNXSTREAM_ASSIGN(const auto r, ops::verify(in.model, options));
    return action_outcome{.report_json = report::to_json(r, page_wording()),
                          .report_text = report::to_text(r, page_wording()),
                          .outputs = {},
                          .passed = r.clean()};
}

constexpr std::array analyze_fields{data_field, data_dir_field};

// The model view's redundancy report, as a job: it may take a minute on a large model.
result<action_outcome> run_analyze(const action_input& in) {
    ops::analyze_options options;
    ONNXSTREAM_ASSIGN(const auto data, in.path_field("data"));
    if (!data.empty()) options.data.data_files.push_back(data);
    ONNXSTREAM_ASSIGN(const auto data_dir, in.path_field("data-dir"));
    if (!data_dir.empty()) options.data.data_dirs.push_back(data_dir);
    options.cancel = in.cancel;
    options.on_progress = in.on_progress;
    ONNXSTREAM_ASSIGN(const auto r, ops::analyze(in.model, options));
    return action_outcome{.report_json = report::to_json(r), .report_text = report::to_text(r), .outputs = {}, .passed = true};
}

constexpr std::array diff_fields{field_spec{"other", field_kind::model, "", "the model to compare with"}, threads_field};

result<action_outcome> run_diff(const action_input& in) {
    ONNXSTREAM_ASSIGN(const auto other, in.path_field("other"));
    if (other.empty()) return failure(error_code::invalid_argument, "diff needs a second model", "pick it in the field 'other'");
    ops::diff_options options;
    ONNXSTREAM_TRY(fill_inputs(in, options));
    ONNXSTREAM_ASSIGN(const auto r, ops::diff(in.model, other, options));
    return action_outcome{
        .report_json = report::to_json(r), .report_text = report::to_text(r), .outputs = {}, .passed = r.equivalent};
}

constexpr std::array convert_fields{
    output_field,
    field_spec{"dtype", field_kind::text, "fp16", "fp16 or bf16"},
    field_spec{"keep-io-types", field_kind::flag, "", "keep the graph's inputs and outputs float32 (Casts at the boundary)"},
    field_spec{"block-ops", field_kind::text, "", "operators kept in float32, comma-separated (default: the built-in list)"},
    field_spec{"data-name", field_kind::text, "", "the data file's name, for external layouts"},
    align_field,
    shard_size_field,
    data_field,
    data_dir_field,
    force_field};

result<ops::half_type> dtype_field(const action_input& in) {
    const auto dtype = in.text("dtype");
    if (dtype.empty() || dtype == "fp16") return ops::half_type::float16;
    if (dtype == "bf16") return ops::half_type::bfloat16;
    return failure(error_code::invalid_argument, "the field 'dtype' takes fp16 or bf16, not '" + std::string(dtype) + "'");
}

result<fs::path> convert_output(const action_input& in) {
    ONNXSTREAM_ASSIGN(const auto type, dtype_field(in));
    return output_or(in, ops::default_output(in.model, type == ops::half_type::float16 ? "fp16" : "bf16"));
}

std::vector<std::string> comma_list(std::string_view text) {
    std::vector<std::string> items;
    while (!text.empty()) {
        const auto comma = text.find(',');
        if (const auto item = text.substr(0, comma); !item.empty()) items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    return items;
}

result<action_outcome> run_convert(const action_input& in) {
    ops::convert_options options;
    ONNXSTREAM_TRY(fill_rewrite(in, options, ""));
    ONNXSTREAM_ASSIGN(options.target, dtype_field(in));
    ONNXSTREAM_ASSIGN(options.output, convert_output(in));
    options.keep_io_types = in.flag("keep-io-types");
    if (const auto v = in.text("block-ops"); !v.empty()) options.block_ops = comma_list(v);
    options.data_name = std::string(in.text("data-name"));  // ops refuses a path here
    ONNXSTREAM_TRY(read_size(in, "align", options.alignment));
    ONNXSTREAM_TRY(read_shard_size(in, options.shard_size));
    ONNXSTREAM_ASSIGN(const auto r, ops::convert(in.model, options));
    const bool half = options.target == ops::half_type::float16;
    return action_outcome{report::to_json(r, half ? "fp16" : "bf16"), report::to_text(r, half ? "float16" : "bfloat16"),
                          written(r)};
}

// export --to caffe: the output field is the PREFIX of PREFIX.prototxt + PREFIX.caffemodel.
constexpr std::array caffe_fields{
    field_spec{"output", field_kind::path, "", "the outputs' prefix (default: the model's folder and stem)"},
    field_spec{"dialect", field_kind::text, "opencv", "opencv (what OpenCV 4.6 loads) or bvlc (BVLC Caffe 1.0 only)"},
    field_spec{"no-fold-bn", field_kind::flag, "", "keep BatchNorm + Scale layers instead of folding"},
    field_spec{"check", field_kind::flag, "", "run the export in OpenCV and compare it with the original"},
    field_spec{"tolerance", field_kind::text, "1e-4", "the largest error the check allows, of the output's magnitude"},
    field_spec{"report", field_kind::flag, "", "also write the audit report (.caffe-report.html and .json)"},
    data_field,
    data_dir_field,
    force_field};

result<fs::path> caffe_prefix(const action_input& in) { return output_or(in, in.model.parent_path() / in.model.stem()); }

result<fs::path> caffe_claim(const action_input& in) {
    ONNXSTREAM_ASSIGN(auto prefix, caffe_prefix(in));
    return fs::path(prefix.string() + ".prototxt");
}

result<action_outcome> run_export_caffe(const action_input& in) {
    ops::export_caffe_options options;
    ONNXSTREAM_TRY(fill_rewrite(in, options, ""));
    ONNXSTREAM_ASSIGN(options.output, caffe_prefix(in));
    const auto dialect = in.text("dialect");
    if (dialect.empty() || dialect == "opencv") options.dialect = caffe::dialect::opencv;
    else if (dialect == "bvlc") options.dialect = caffe::dialect::bvlc;
    else
        return failure(error_code::invalid_argument,
                       "the field 'dialect' takes opencv or bvlc, not '" + std::string(dialect) + "'");
    options.fold_batchnorm = !in.flag("no-fold-bn");
    options.check = in.flag("check");
    options.report = in.flag("report");
    if (const auto v = in.text("tolerance"); !v.empty()) {
        const std::string text(v);
        char* end = nullptr;
        options.tolerance = std::strtod(text.c_str(), &end);
        if (end != text.c_str() + text.size() || !(options.tolerance > 0))
            return failure(error_code::invalid_argument, "the field 'tolerance' takes a positive number such as 1e-4");
    }
    ONNXSTREAM_ASSIGN(const auto r, ops::export_caffe(in.model, options));
    if (!r.refusals.empty()) {
        std::string what;
        for (const auto& x : r.refusals) what += (what.empty() ? "" : "; ") + x.op_type + " " + x.node + ": " + x.why;
        return failure(error_code::invalid_argument, "the model cannot be exported to Caffe exactly (" + what + ")",
                       "change these nodes in the source model (or run {0} first), then export again",
                       {{remedy::optimize_first, {}}});
    }
    std::vector<fs::path> outputs;
    if (r.written) outputs = {r.prototxt, r.caffemodel};
    if (!r.report_html.empty()) {
        outputs.push_back(r.report_html);
        outputs.push_back(r.report_json);
    }
    return action_outcome{.report_json = report::to_json(r, options.tolerance),
                          .report_text = report::to_text(r),
                          .outputs = outputs,
                          .passed = !r.check.ran || r.check.passed};
}

constexpr std::array safetensors_fields{
    field_spec{"output", field_kind::path, "", "the .safetensors file (default: <stem>.safetensors beside the model)"},
    field_spec{"shard-size", field_kind::size, "", "shards of at most this size, with the Hugging Face index"},
    field_spec{"link", field_kind::flag, "", "also write <stem>.linked.onnx reading its weights from the safetensors"},
    data_field,
    data_dir_field,
    force_field};

result<fs::path> safetensors_claim(const action_input& in) {
    return output_or(in, in.model.parent_path() / (in.model.stem().string() + ".safetensors"));
}

result<action_outcome> run_export_safetensors(const action_input& in) {
    ops::safetensors_options options;
    ONNXSTREAM_TRY(fill_rewrite(in, options, ""));
    ONNXSTREAM_ASSIGN(options.output, in.path_field("output"));
    ONNXSTREAM_TRY(read_shard_size(in, options.shard_size));
    options.link = in.flag("link");
    ONNXSTREAM_ASSIGN(const auto r, ops::export_safetensors(in.model, options));
    std::vector<fs::path> outputs;
    for (const auto& f : r.files) outputs.push_back(f.path);
    if (r.index) outputs.push_back(*r.index);
    if (r.linked) outputs.push_back(*r.linked);
    return action_outcome{report::to_json(r), report::to_text(r), outputs};
}

constexpr std::array action_table{
    action{"merge", "Merge", "inline external data into one self-contained .onnx", merge_fields, "merged", run_merge},
    action{"split", "Split", "move large tensors out to an aligned data file", split_fields, "split", run_split},
    action{"repack", "Repack", "rewrite all weights into fresh aligned data files", repack_fields, "repacked", run_repack},
    action{"optimize", "Optimize", "graph passes: dead code, constant folding, no-ops, BatchNorm folding, fusion",
           optimize_fields, "optimized", run_optimize},
    action{"verify", "Verify", "check external references, sizes and SHA-1 checksums", verify_fields, "", run_verify},
    action{"diff", "Diff", "compare with a second model's graph and tensor values", diff_fields, "", run_diff},
    // Run by the model view itself (no button): its result is kept per file identity.
    action{"analyze", "Analyze", "dead, duplicate and no-op parts, and what optimize would remove", analyze_fields, "",
           run_analyze, nullptr, true},
    action{"convert", "Convert", "float32 weights and computation to fp16 or bf16", convert_fields, "fp16", run_convert,
           convert_output},
    action{"export-caffe", "Export to Caffe", "a .prototxt + .caffemodel, BatchNorm folded", caffe_fields, "caffe",
           run_export_caffe, caffe_claim},
    action{"export-safetensors", "Export to safetensors", "the weights as safetensors, optionally linked from an .onnx",
           safetensors_fields, "safetensors", run_export_safetensors, safetensors_claim},
};

const char* to_string(field_kind kind) {
    switch (kind) {
        case field_kind::text: return "text";
        case field_kind::path: return "path";
        case field_kind::model: return "model";
        case field_kind::size: return "size";
        case field_kind::count: return "count";
        case field_kind::flag: return "flag";
    }
    return "text";
}

}  // namespace

result<fs::path> action_input::path_field(std::string_view name) const {
    const auto value = text(name);
    if (value.empty()) return fs::path();
    if (!locate) return failure(error_code::invalid_argument, "the field '" + std::string(name) + "' cannot be used here");
    auto confined = locate(name, value);
    if (!confined) {
        auto e = std::move(confined).error();
        e.message = "the field '" + std::string(name) + "': " + e.message;
        return failure(std::move(e));
    }
    return confined;
}

std::string_view action_input::text(std::string_view name) const {
    const auto it = fields.find(name);
    return it == fields.end() ? std::string_view() : std::string_view(it->second);
}

bool action_input::flag(std::string_view name) const {
    const auto value = text(name);
    return value == "1" || value == "on" || value == "true";
}

namespace {

std::string field(std::string_view name) { return "the field '" + std::string(name) + "'"; }

std::string page_words(const remedy_step& step) {
    switch (step.change) {
        case remedy::replace_output: return "tick 'force'";
        case remedy::choose_output: return field("output");
        case remedy::give_data_file: return field("data");
        case remedy::give_data_folder: return field("data-dir");
        case remedy::give_data_location:
            return "drop the file on the page to copy it beside the model, or give it in an action's 'data' or 'data-dir' field";
        case remedy::refuse_guesses: return "'strict'";
        case remedy::accept_size_mismatch: return "'allow-size-mismatch'";
        case remedy::choose_data_name: return field("data-name");
        case remedy::repack_in_place: return "Repack with 'force' ticked and no other output";
        case remedy::keep_external_data: return "Repack";
        case remedy::embed_weights: return "Merge";
        case remedy::inspect_model: return "the model's page";
        case remedy::optimize_first: return "Optimize";
        case remedy::give_input_shape: return field("input-shape");
        case remedy::choose_dialect: return field("dialect") + (step.argument.empty() ? "" : " set to " + step.argument);
        case remedy::fewer_threads: return field("threads");
        case remedy::leave_out_check: return "'check'";
        case remedy::reuse_data: return "'reuse-data'";
        case remedy::choose_dtype: return field("dtype") + (step.argument.empty() ? "" : " set to " + step.argument);
    }
    return to_string(step.change);
}

// How a data file was found, for people who never open a terminal (app.js words the
// model page's table the same way).
std::string page_found(const onnx::how_found& how, const fs::path&) {
    switch (how.step) {
        case onnx::found_by::data_flag: return "the data file you gave";
        case onnx::found_by::model_folder: return "next to the model";
        case onnx::found_by::data_dir: return "in the folder you gave";
        case onnx::found_by::data_dir_file_name: return "by its file name, in the folder you gave";
        case onnx::found_by::file_name_in_model_folder: return "guessed: a file of that name next to the model";
        case onnx::found_by::common_name: return "guessed: a usual name for a model's data";
        case onnx::found_by::only_data_file: return "guessed: the only data file next to the model";
    }
    return to_string(how.step);
}

constexpr report::hint_wording page_words_table{.word = page_words, .list_remedies = true, .found = page_found};

}  // namespace

const report::hint_wording& page_wording() noexcept { return page_words_table; }

std::span<const action> actions() { return action_table; }

const action* find_action(std::string_view name) {
    for (const auto& a : action_table)
        if (a.name == name) return &a;
    return nullptr;
}

result<fs::path> planned_output(const action& a, const action_input& input) {
    if (a.claimed_output != nullptr) return a.claimed_output(input);
    if (a.output_suffix.empty()) return fs::path();
    return output_or(input, ops::default_output(input.model, std::string(a.output_suffix)));
}

std::string actions_json() {
    report::json_writer json;
    json.begin_array();
    for (const auto& a : action_table) {
        json.begin_object().field("name", a.name).field("title", a.title).field("summary", a.summary);
        json.field("writes", !a.output_suffix.empty()).key("fields").begin_array();
        for (const auto& f : a.fields)
            json.object("name", f.name, "kind", to_string(f.kind), "default", f.default_value, "help", f.help);
        json.end_array().end_object();
    }
    json.end_array();
    return json.text();
}

}  // namespace onnxstream::server
