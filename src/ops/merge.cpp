#include <onnxstream/ops/merge.hpp>

#include "plan_output.hpp"

#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/plan/planner.hpp>

namespace onnxstream::ops {

result<merge_report> merge(const std::filesystem::path& model_path, const rewrite_options& options) {
    merge_report report;
    report.input = model_path;
    report.output = options.output.empty() ? default_output(model_path, "merged") : options.output;

    // Nothing here needs the tensors kept: inline_external reads each bound one again (the
    // tree keeps the fields of tensors that point at external data, which it edits).
    ONNXSTREAM_ASSIGN(const auto bound,
                      onnx::bound_model::open(model_path, options, onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));
    ONNXSTREAM_TRY(bound.usable(options.allow_size_mismatch));
    report.warnings = bound.warnings();  // tolerated size mismatches, guesses
    for (const auto& f : bound.data.files)
        report.data_files.push_back(
            {f.location, f.found->path, f.found->how, f.found->guess(), f.tensor_count, f.bytes_referenced});
    ONNXSTREAM_TRY(check_output(report.output, bound.inputs(), options.force));

    onnx::tree_edits edits;
    onnx::inline_external(bound, bound.data.tensors, edits, report.warnings);
    for (const auto& binding : bound.data.tensors) {
        report.tensors_inlined += 1;
        report.bytes_inlined += binding.length;
    }
    // The planner reads each edited body again, in file order, in each of its two passes:
    // the pages behind it go, or a million of them would map the whole model.
    io::release_behind behind(bound.model.file.mapping());
    ONNXSTREAM_ASSIGN(auto stream, plan::stream_rewrite(bound.model.tree, edits, {0, plan::protobuf_limit},
                                                        [&behind](std::uint64_t offset) { behind.reached(offset); }));
    report.output_size = stream.size();

    ONNXSTREAM_ASSIGN(auto output,
                      io::output_file::create(report.output, stream.size(), {.overwrite = options.force, .preallocate = true}));
    ONNXSTREAM_ASSIGN(auto written, write_planned(output, windows_of(stream, edits), bound.sources(), options,
                                                  "merge " + model_path.filename().string(), report.warnings));
    report.writer = written.backend;
    ONNXSTREAM_TRY(output.commit());
    return report;
}

}  // namespace onnxstream::ops
