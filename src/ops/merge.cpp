#include <onnxstream/ops/merge.hpp>

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/ops/plan_output.hpp>
#include <onnxstream/plan/planner.hpp>

namespace onnxstream::ops {

using onnx::number;
using onnx::tensor_field;

void inline_external_tensors(const onnx::model_file& model, const onnx::external_data& data,
                             std::uint32_t first_data_source, onnx::tree_edits& edits, std::vector<error>& warnings) {
    for (const auto& binding : data.tensors) {
        if (!binding.usable) continue;
        const auto& tensor = model.tensors[binding.tensor];
        const auto message = tensor.message;
        std::uint32_t position = onnx::no_index;
        const auto& msg = model.tree.at(message);
        for (std::uint32_t i = 0; i < msg.field_count; ++i) {
            const auto field_index = msg.first_field + i;
            const auto n = model.tree.field(field_index).token.number;
            if (n == number(tensor_field::external_data) || n == number(tensor_field::data_location) ||
                n == number(tensor_field::raw_data)) {
                if (position == onnx::no_index) position = i;
                edits.drop(field_index);
            }
        }
        std::uint32_t check = io::no_check;
        if (const auto& checksum = tensor.external->checksum) {
            if (const auto digest = io::parse_sha1_hex(*checksum)) {
                check = edits.add_check({std::string(tensor.name), digest, false, false});
            } else {
                warnings.push_back({error_code::checksum_mismatch,
                                    "tensor '" + std::string(tensor.name) + "' has a checksum that is not a SHA-1 ('" +
                                        std::string(checksum->substr(0, 48)) + "'); it was not checked",
                                    ""});
            }
        }
        auto raw_data = edits.slice(number(tensor_field::raw_data), first_data_source + binding.file, binding.offset,
                                    binding.length, check);
        raw_data.label = edits.add_label(std::string(tensor.name));
        edits.insert(message, position, raw_data);
    }
}

namespace {

failure with_more(const onnx::external_data& data, const onnx::data_problem& first) {
    error e = first.what;
    const auto others = data.problems.size() - 1;
    if (others > 0) {
        e.hint += (e.hint.empty() ? "" : "\n  ") + std::string("(") + std::to_string(others) + " more problem" +
                  (others == 1 ? "" : "s") + ": {" + std::to_string(e.remedies.size()) + "} lists them all)";
        e.remedies.push_back({remedy::inspect_model, {}});
    }
    return failure(std::move(e));
}

}  // namespace

result<merge_report> merge(const std::filesystem::path& model_path, const rewrite_options& options) {
    merge_report report;
    report.input = model_path;
    report.output = options.output.empty() ? default_output(model_path, "merged") : options.output;

    ONNXSTREAM_ASSIGN(auto model, onnx::model_file::open(model_path));
    onnx::data_resolver resolver(model_path, data_options_for(options));
    auto data = onnx::external_data::bind(model, resolver);
    if (const auto* problem = data.blocking_problem(options.allow_size_mismatch)) return with_more(data, *problem);
    for (const auto& p : data.problems) report.warnings.push_back(p.what);  // tolerated size mismatches
    for (const auto& g : data.guesses) report.warnings.push_back(g.what);

    std::vector<io::file_identity> inputs{model.file.identity()};
    std::vector<const io::source_file*> sources{&model.file};
    for (const auto& f : data.files) {
        inputs.push_back(f.file->identity());
        sources.push_back(&*f.file);
        report.data_files.push_back(
            {f.location, f.found->path, f.found->how_text, f.found->guess(), f.tensor_count, f.bytes_referenced});
    }
    ONNXSTREAM_TRY(check_output(report.output, inputs, options.force));

    onnx::tree_edits edits;
    inline_external_tensors(model, data, 1, edits, report.warnings);
    for (const auto& binding : data.tensors) {
        report.tensors_inlined += 1;
        report.bytes_inlined += binding.length;
    }
    ONNXSTREAM_ASSIGN(auto plan, plan::plan_rewrite(model.tree, edits, {0, plan::protobuf_limit}));
    report.output_size = plan.size();

    ONNXSTREAM_ASSIGN(auto output, io::output_file::create(report.output, plan.size(), {options.force, true}));
    ONNXSTREAM_ASSIGN(auto written, write_planned(output, plan, sources, options, "merge " + model_path.filename().string(),
                                                  report.warnings));
    report.writer = written.backend;
    ONNXSTREAM_TRY(output.commit());
    return report;
}

}  // namespace onnxstream::ops
