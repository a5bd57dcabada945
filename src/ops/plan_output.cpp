#include "plan_output.hpp"

#include <onnxstream/onnx/external_data.hpp>

#include <algorithm>
#include <thread>

namespace onnxstream::ops {

namespace fs = std::filesystem;

unsigned effective_threads(unsigned requested) noexcept {
    // Capped: thousands of threads only exhaust the process's limits (io_uring cancels).
    constexpr unsigned most = 1024;
    return std::min(most, requested != 0 ? requested : std::max(1U, std::thread::hardware_concurrency()));
}

fs::path default_output(const fs::path& model, const std::string& suffix) {
    return model.parent_path() / (model.stem().string() + "." + suffix + ".onnx");
}

result<void> check_output(const fs::path& output, std::span<const io::file_identity> inputs, bool force) {
    // A folder first: "already exists, pass --force" would send the user the wrong way.
    std::error_code ec;
    if (fs::is_directory(output, ec))
        return failure(error_code::invalid_argument, "the output " + output.string() + " is a directory",
                       "give a file name with {0}", {{remedy::choose_output, {}}});
    if (const auto identity = io::identity_of(output)) {
        for (const auto& input : inputs)
            if (*identity == input)
                return failure(error_code::output_is_input, "the output " + output.string() + " is one of the inputs",
                               "write to another file with {0}; onnxstream never overwrites its inputs",
                               {{remedy::choose_output, {}}});
    }
    // What is there, not what a link points at: a dangling link exists too, and only a
    // regular file may be replaced (never a FIFO, a device such as /dev/null, a link).
    const auto status = fs::symlink_status(output, ec);
    if (fs::exists(status) && !force)
        return failure(error_code::output_exists, "the output " + output.string() + " already exists",
                       "{0} to replace it, or choose another name with {1}",
                       {{remedy::replace_output, {}}, {remedy::choose_output, {}}});
    if (fs::exists(status) && !fs::is_regular_file(status))
        return failure(error_code::invalid_argument, "the output " + output.string() + " is not a regular file",
                       "onnxstream only replaces regular files; remove it or choose another name with {0}",
                       {{remedy::choose_output, {}}});
    return {};
}

namespace {

// Runs a writer over `job` (its operations, pool and windows set), whose labels are those
// of `window` (the whole plan, or the window being written), and judges the checks.
result<io::write_report> run_writer(io::output_file& output, io::write_job job, const plan::write_plan& window,
                                    std::uint64_t size, const rewrite_options& options, const std::string& stage,
                                    std::vector<error>& warnings) {
    auto writer = io::make_writer(options.backend);
    job.output_descriptor = output.descriptor();
    io::writer_options writer_options;
    writer_options.cancel = options.cancel;
    writer_options.threads = effective_threads(options.threads);
    progress_event event{stage, 0, size, {}, {}};
    if (options.on_progress) {
        options.on_progress(event);
        writer_options.on_progress = [&](std::uint64_t bytes) {
            event.done += bytes;
            // A window keeps its last label, so the bytes in flight still find theirs.
            if (const auto tensor = window.label_at(event.done); !tensor.empty() && tensor != event.tensor) event.tensor = tensor;
            options.on_progress(event);
        };
    }
    auto ran = writer->run(job, writer_options);
    if (!ran && ran.error().code == error_code::interrupted) return failure(std::move(ran).error());
    // The output is only what the plan meant if no input changed under the writer (a model
    // cut short reads as zeros through its guarded mapping instead of crashing).
    for (const auto* source : job.sources)
        if (source != nullptr) ONNXSTREAM_TRY(source->check_unchanged());
    ONNXSTREAM_ASSIGN(auto report, std::move(ran));
    for (std::size_t i = 0; i < report.checks.size(); ++i) {
        if (report.checks[i].sha1_matches) continue;
        const auto& check = job.checks[i];
        auto e = onnx::checksum_mismatch(check.tensor, *check.expected_sha1, *report.checks[i].sha1, options.strict);
        if (options.strict) return failure(std::move(e));
        warnings.push_back(std::move(e));
    }
    return report;
}

}  // namespace

result<io::write_report> write_planned(io::output_file& output, const plan::write_plan& plan,
                                       std::span<const io::source_file* const> sources, const rewrite_options& options,
                                       const std::string& stage, std::vector<error>& warnings) {
    io::write_job job;
    job.operations = plan.operations();
    job.pool = plan.pool();
    job.checks = plan.checks();
    job.sources = sources;
    return run_writer(output, job, plan, plan.size(), options, stage, warnings);
}

result<io::write_report> write_planned(io::output_file& output, const windowed_plan& plan,
                                       std::span<const io::source_file* const> sources, const rewrite_options& options,
                                       const std::string& stage, std::vector<error>& warnings) {
    plan::write_plan window;
    io::write_job job;
    job.checks = plan.checks;
    job.sources = sources;
    job.more = [&](std::span<const io::write_operation>& operations, std::span<const std::byte>& pool) -> result<bool> {
        if (!plan.next(window)) return false;
        operations = window.operations();
        pool = window.pool();
        return true;
    };
    return run_writer(output, job, window, plan.size, options, stage, warnings);
}

windowed_plan windows_of(plan::rewrite_stream& stream, const onnx::tree_edits& edits) {
    return {stream.size(), edits.checks(), [&stream](plan::write_plan& window) { return stream.next(window); }};
}

result<void> rewrite_outputs::commit() {
    std::vector<io::output_file*> outputs;
    for (auto& file : data) outputs.push_back(&file);
    outputs.push_back(&model);
    return io::commit_outputs(outputs);
}

result<io::output_file> write_text_file(const fs::path& path, std::string_view text,
                                        std::span<const io::source_file* const> sources, const rewrite_options& options,
                                        std::vector<error>& warnings) {
    plan::write_plan plan;
    plan.emit(std::as_bytes(std::span(text.data(), text.size())));
    ONNXSTREAM_ASSIGN(auto output, io::output_file::create(path, plan.size(), {.overwrite = options.force, .preallocate = true}));
    ONNXSTREAM_TRY(write_planned(output, plan, sources, options, "write " + path.filename().string(), warnings));
    return output;
}

}  // namespace onnxstream::ops
