#include <onnxstream/ops/merge.hpp>

#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/ops/rewrite_session.hpp>

namespace onnxstream::ops {

result<merge_report> merge(const std::filesystem::path& model_path, const rewrite_options& options) {
    merge_report report;
    report.input = model_path;
    report.output = options.output.empty() ? default_output(model_path, "merged") : options.output;

    // Nothing here needs the tensors kept: inline_external reads each bound one again (the
    // tree keeps the fields of tensors that point at external data, which it edits).
    ONNXSTREAM_ASSIGN(auto session, rewrite_session::open(model_path, options, report.warnings, onnx::nodes_on_demand(),
                                                          onnx::tensor_reading::on_demand));
    const auto& bound = session.bound();
    for (const auto& f : bound.data.files)
        report.data_files.push_back(
            {f.location, f.found->path, f.found->how, f.found->guess(), f.tensor_count, f.bytes_referenced});
    ONNXSTREAM_TRY(session.claim_output(report.output));

    onnx::tree_edits edits;
    onnx::inline_external(bound, bound.data.tensors, edits, report.warnings);
    for (const auto& binding : bound.data.tensors) {
        report.tensors_inlined += 1;
        report.bytes_inlined += binding.length;
    }
    ONNXSTREAM_ASSIGN(auto planned, session.plan_model(edits));
    report.output_size = planned.size();
    ONNXSTREAM_TRY(session.write(report.output, planned, edits, "merge " + model_path.filename().string()));
    report.writer = session.writer();
    ONNXSTREAM_TRY(session.commit());
    return report;
}

}  // namespace onnxstream::ops
