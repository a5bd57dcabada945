#include <onnxstream/ops/rewrite_session.hpp>

#include "data_layout.hpp"

#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/hashing.hpp>
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

result<rewrite_session> rewrite_session::open(const fs::path& model, const rewrite_options& options, std::vector<error>& warnings,
                                              const onnx::tree_options& tree, onnx::tensor_reading reading, bool check_usable) {
    rewrite_session session;
    session.options_ = &options;
    session.warnings_ = &warnings;
    session.model_path_ = model;
    ONNXSTREAM_ASSIGN(session.bound_, onnx::bound_model::open(model, options, tree, reading));
    if (check_usable) ONNXSTREAM_TRY(session.bound_.usable(options.allow_size_mismatch));
    for (auto& w : session.bound_.warnings()) warnings.push_back(std::move(w));  // tolerated size mismatches, guesses
    session.inputs_ = session.bound_.inputs();
    return session;
}

std::span<const io::source_file* const> rewrite_session::sources() const {
    // Made on each call: the bound model's sources are its members, which move with it.
    sources_ = bound_.sources();
    sources_.insert(sources_.end(), added_.begin(), added_.end());
    return sources_;
}

std::uint32_t rewrite_session::add_source(const io::source_file& source) {
    added_.push_back(&source);
    return static_cast<std::uint32_t>(bound_.first_added_source().value + added_.size() - 1);
}

void rewrite_session::replace_source(std::uint32_t index, const io::source_file& source) {
    added_.at(index - bound_.first_added_source().value) = &source;
}

result<void> rewrite_session::claim_output(const fs::path& path, const claim_options& claim) const {
    if (claim.model_output) ONNXSTREAM_TRY(check_not_model(path, *claim.model_output, claim.rename_data));
    const auto identity = io::identity_of(path);
    const bool replaces_input = identity && std::find(inputs_.begin(), inputs_.end(), *identity) != inputs_.end();
    if (!replaces_input || !in_place_model_) return check_output(path, inputs_, options_->force);
    // In place: the model output must replace the input model itself.
    const auto output_identity = io::identity_of(*in_place_model_);
    const bool in_place = output_identity && *output_identity == inputs_.front();
    if (!in_place)
        return failure(error_code::output_is_input,
                       "the output " + path.string() + " is a file the input model " + model_path_.string() + " still needs",
                       "choose another {0}, or repack in place ({1}) so that the model is replaced with its data",
                       {{remedy::choose_data_name, {}}, {remedy::repack_in_place, model_path_.string()}});
    if (!options_->force)
        return failure(error_code::output_is_input, "the output " + path.string() + " is one of the inputs",
                       "{0} to repack in place (the old files are replaced only once the new ones "
                       "are complete), or write elsewhere with {1}",
                       {{remedy::replace_output, {}}, {remedy::choose_output, {}}});
    std::error_code ec;
    if (fs::is_directory(path, ec))
        return failure(error_code::invalid_argument, "the output " + path.string() + " is a directory",
                       "give a file name with {0}", {{remedy::choose_output, {}}});
    if (!fs::is_regular_file(fs::symlink_status(path, ec)))
        return failure(error_code::invalid_argument, "the output " + path.string() + " is not a regular file",
                       "onnxstream only replaces regular files; write the result elsewhere with {0}",
                       {{remedy::choose_output, {}}});
    return {};
}

result<planned_model> rewrite_session::plan_model(const onnx::tree_edits& edits) const {
    // The planner reads each edited body again, in file order, in each of its two passes:
    // the pages behind it go, or a million of them would map the whole model.
    auto behind = std::make_unique<io::release_behind>(bound_.model.file.mapping());
    ONNXSTREAM_ASSIGN(auto stream, plan::stream_rewrite(bound_.model.tree, edits, {0, plan::protobuf_limit},
                                                        [raw = behind.get()](std::uint64_t offset) { raw->reached(offset); }));
    return planned_model(std::move(behind), std::move(stream));
}

std::uint64_t rewrite_session::planned_size(const onnx::tree_edits& edits) const {
    io::release_behind behind(bound_.model.file.mapping());
    return plan::planned_size(bound_.model.tree, edits, [&behind](std::uint64_t at) { behind.reached(at); });
}

void rewrite_session::release_model_pages() const noexcept { bound_.model.file.mapping().release(0, bound_.model.file.size()); }

std::uint32_t rewrite_session::checksum_check(plan::write_plan& plan, onnx::site_id site) const {
    const auto tensor = bound_.model.tensor(site);
    const auto expected = onnx::expected_sha1(*tensor, *warnings_);
    if (!expected) return io::no_check;
    return plan.add_check({.tensor = std::string(tensor->name), .expected_sha1 = *expected});
}

result<void> rewrite_session::verify_checksums() {
    std::vector<std::byte> buffer;
    for (const auto& binding : bound_.data.tensors) {
        if (!binding.usable) continue;
        const auto tensor = bound_.model.tensor(binding.site);
        if (!tensor->external || !tensor->external->checksum) continue;
        const auto expected = onnx::expected_sha1(*tensor, *warnings_);
        if (!expected) continue;
        if (options_->cancel != nullptr && options_->cancel->load(std::memory_order_relaxed))
            return failure(error_code::interrupted, "interrupted; no output was written");
        if (buffer.empty()) buffer.resize(io::read_chunk_size);
        io::sha1_hasher hasher;
        ONNXSTREAM_TRY(io::for_each_chunk(
            *bound_.data.files[binding.file].file, binding.offset, binding.length,
            [&hasher](std::span<const std::byte> piece) { hasher.update(piece); }, std::span(buffer)));
        const auto found = hasher.finish();
        if (found == *expected) continue;
        auto e = onnx::checksum_mismatch(tensor->name, *expected, found, options_->strict);
        if (options_->strict) return failure(std::move(e));
        warnings_->push_back(std::move(e));
    }
    return {};
}

result<void> rewrite_session::check_sources_unchanged() const {
    for (const auto* source : sources())
        if (source != nullptr) ONNXSTREAM_TRY(source->check_unchanged());
    return {};
}

// Creates the output, runs a writer over `job` (its operations, pool and windows set),
// whose labels are those of `labels` (the whole plan, or the window being written), and
// judges the checks.
result<io::write_report> rewrite_session::run_writer(const fs::path& path, std::uint64_t size, io::write_job job,
                                                     const plan::write_plan& labels, std::string stage) {
    const auto& options = *options_;
    ONNXSTREAM_ASSIGN(auto output, io::output_file::create(path, size, {.overwrite = options.force, .preallocate = true}));
    if (stage.empty()) stage = "write " + path.filename().string();
    auto writer = io::make_writer(options.backend);
    job.output_descriptor = output.descriptor();
    const auto current = sources();
    const std::vector<const io::source_file*> sources(current.begin(), current.end());  // sources() is made again by the checks
    job.sources = sources;
    io::writer_options writer_options;
    writer_options.cancel = options.cancel;
    writer_options.threads = effective_threads(options.threads);
    progress_event event{stage, 0, size, {}, {}};
    if (options.on_progress) {
        options.on_progress(event);
        writer_options.on_progress = [&](std::uint64_t bytes) {
            event.done += bytes;
            // A window keeps its last label, so the bytes in flight still find theirs.
            if (const auto tensor = labels.label_at(event.done); !tensor.empty() && tensor != event.tensor) event.tensor = tensor;
            options.on_progress(event);
        };
    }
    auto ran = writer->run(job, writer_options);
    if (!ran && ran.error().code == error_code::interrupted) return failure(std::move(ran).error());
    // The output is only what the plan meant if no input changed under the writer (a model
    // cut short reads as zeros through its guarded mapping instead of crashing).
    ONNXSTREAM_TRY(check_sources_unchanged());
    ONNXSTREAM_ASSIGN(auto report, std::move(ran));
    for (std::size_t i = 0; i < report.checks.size(); ++i) {
        if (report.checks[i].sha1_matches) continue;
        const auto& check = job.checks[i];
        auto e = onnx::checksum_mismatch(check.tensor, *check.expected_sha1, *report.checks[i].sha1, options.strict);
        if (options.strict) return failure(std::move(e));
        warnings_->push_back(std::move(e));
    }
    if (writer_[0] == '\0') writer_ = report.backend;
    outputs_.push_back(std::move(output));
    return report;
}

result<io::write_report> rewrite_session::write(const fs::path& path, const plan::write_plan& plan, std::string stage) {
    io::write_job job;
    job.operations = plan.operations();
    job.pool = plan.pool();
    job.checks = plan.checks();
    return run_writer(path, plan.size(), job, plan, std::move(stage));
}

result<io::write_report> rewrite_session::write(const fs::path& path, const windowed_plan& plan, std::string stage) {
    plan::write_plan window;
    io::write_job job;
    job.checks = plan.checks;
    job.more = [&](std::span<const io::write_operation>& operations, std::span<const std::byte>& pool) -> result<bool> {
        if (!plan.next(window)) return false;
        operations = window.operations();
        pool = window.pool();
        return true;
    };
    return run_writer(path, plan.size, job, window, std::move(stage));
}

result<io::write_report> rewrite_session::write(const fs::path& path, planned_model& planned, const onnx::tree_edits& edits,
                                                std::string stage) {
    auto& stream = planned.stream_;
    return write(
        path, windowed_plan{stream.size(), edits.checks(), [&stream](plan::write_plan& window) { return stream.next(window); }},
        std::move(stage));
}

result<void> rewrite_session::write_text(const fs::path& path, std::string_view text) {
    plan::write_plan plan;
    plan.emit(std::as_bytes(std::span(text.data(), text.size())));
    ONNXSTREAM_TRY(write(path, plan));
    return {};
}

result<void> rewrite_session::commit() {
    std::vector<io::output_file*> outputs;
    for (auto& file : outputs_) outputs.push_back(&file);
    return io::commit_outputs(outputs);
}

}  // namespace onnxstream::ops
