// One rewrite, from the input model to the committed outputs: what every rewriting
// command (merge, split/repack, optimize, convert, the exporters) does around its own plan.
//
//   auto session = rewrite_session::open(model, options, report.warnings, ...);  // bind, check usable
//   session.claim_output(out);            // refuse an input, an existing file without --force
//   auto planned = session.plan_model(edits);    // pages released behind the planner
//   session.write(out, planned, edits);   // created at its size, written, checked
//   session.commit();                     // every output renamed, as one transaction
//
// The session owns the bound model (its sources and the identities of the input files),
// the outputs written so far, and the read path over the model's mapping: a plan made
// through it releases the pages behind the planner's two passes, so that a command cannot
// map the whole model by forgetting to. Warnings (guesses, tolerated size mismatches,
// checksum mismatches without --strict) go to the vector given to `open`, which the
// command's report owns. Nothing is renamed into place before `commit`: a session
// destroyed before it removes its temporaries.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/plan/write_plan.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::ops {

/// Refuses an output that is one of the inputs (same device and inode), a folder, a file
/// that is not regular, or one that exists without --force.
[[nodiscard]] result<void> check_output(const std::filesystem::path& output, std::span<const io::file_identity> inputs,
                                        bool force);

/// A plan written a window at a time (see io::write_job::more): memory stays bounded
/// whatever the number of operations.
struct windowed_plan {
    std::uint64_t size = 0;                    // the whole output's
    std::span<const io::stream_check> checks;  // for every window
    /// Fills the next window (starting with write_plan::next_window); false when the plan is done.
    std::function<bool(plan::write_plan& window)> next;
};

/// A rewritten model's plan (plan::stream_rewrite) with the release of the model's pages
/// behind the planner's passes, which lasts as long as the plan.
class planned_model {
public:
    [[nodiscard]] std::uint64_t size() const noexcept { return stream_.size(); }
    [[nodiscard]] std::uint64_t saturated() const noexcept { return stream_.saturated(); }

private:
    friend class rewrite_session;
    planned_model(std::unique_ptr<io::release_behind> behind, plan::rewrite_stream stream)
        : behind_(std::move(behind)), stream_(std::move(stream)) {}
    std::unique_ptr<io::release_behind> behind_;  // the stream's reading callback points at it
    plan::rewrite_stream stream_;
};

/// How an output may be claimed.
struct claim_options {
    /// A data file beside the model output `model_output`: it may not be that model.
    std::optional<std::filesystem::path> model_output;
    remedy rename_data = remedy::choose_data_name;  // the hint's remedy when it is
};

class rewrite_session {
public:
    rewrite_session() = default;

    /// Opens `model` for a rewrite (onnx::bound_model::open with `options`: data search,
    /// --strict, guesses), refuses data that must stop it (bound_model::usable) unless
    /// `check_usable` is false (a dry run), and adds what must be said about the data to
    /// `warnings`, which must outlive the session.
    [[nodiscard]] static result<rewrite_session> open(const std::filesystem::path& model, const rewrite_options& options,
                                                      std::vector<error>& warnings, const onnx::tree_options& tree = {},
                                                      onnx::tensor_reading reading = onnx::tensor_reading::kept,
                                                      bool check_usable = true);

    [[nodiscard]] onnx::bound_model& bound() noexcept { return bound_; }
    [[nodiscard]] const onnx::bound_model& bound() const noexcept { return bound_; }
    [[nodiscard]] const onnx::model_file& model() const noexcept { return bound_.model; }
    [[nodiscard]] std::vector<error>& warnings() noexcept { return *warnings_; }

    /// The writer's sources: the bound model's, then those added (valid until the next
    /// call, or until the session moves).
    [[nodiscard]] std::span<const io::source_file* const> sources() const;
    /// Adds a source (a spill file of computed bytes); returns its index. It must outlive the session's writes.
    std::uint32_t add_source(const io::source_file& source);
    /// Points source `index` (one added) at another reader of the same bytes.
    void replace_source(std::uint32_t index, const io::source_file& source);
    /// The identities of the input files (model first).
    [[nodiscard]] std::span<const io::file_identity> inputs() const noexcept { return inputs_; }

    /// Lets outputs replace input files (repack --force in place): only with --force, and
    /// only when `model_output` replaces the input model itself (a data file replaced under
    /// a model that stays would leave that model reading bytes laid out for another).
    void allow_in_place(const std::filesystem::path& model_output) { in_place_model_ = model_output; }

    /// Whether `path` may be written (check_output, or the in-place rules above).
    [[nodiscard]] result<void> claim_output(const std::filesystem::path& path, const claim_options& claim = {}) const;

    /// The model's rewrite planned (plan::stream_rewrite within the protobuf limit), the
    /// pages behind the planner released. Errors: the planner's (`too_large`).
    [[nodiscard]] result<planned_model> plan_model(const onnx::tree_edits& edits) const;
    /// The size the rewrite would have, the pages behind the planner released.
    [[nodiscard]] std::uint64_t planned_size(const onnx::tree_edits& edits) const;
    /// Releases every mapped page of the model: after a walk in no order (a graph model
    /// built, passes run), before a walk in order maps what it needs again.
    void release_model_pages() const noexcept;

    /// Creates `path` at the plan's size and writes it (committed with the others).
    /// `stage` names the progress events (default "write <file name>"). SHA-1 mismatches
    /// become warnings, or with --strict a `checksum_mismatch` error.
    result<io::write_report> write(const std::filesystem::path& path, const plan::write_plan& plan, std::string stage = {});
    result<io::write_report> write(const std::filesystem::path& path, const windowed_plan& plan, std::string stage = {});
    result<io::write_report> write(const std::filesystem::path& path, planned_model& planned, const onnx::tree_edits& edits,
                                   std::string stage = {});
    /// The `checksum` key of tensor `site` (an expected SHA-1) as a check on a copy of its
    /// bytes in `plan`, or io::no_check when it has none (a key that is no SHA-1 is a
    /// warning). A command that copies a tensor's stored bytes checks them this way; the
    /// writer judges the check as `write` says.
    [[nodiscard]] std::uint32_t checksum_check(plan::write_plan& plan, onnx::site_id site) const;
    /// For a command that reads the external data without copying it through a plan (an
    /// export that computes from it): every usable external tensor with a `checksum` key
    /// is read and compared now. A mismatch is a warning, or with --strict a
    /// `checksum_mismatch` error.
    [[nodiscard]] result<void> verify_checksums();

    /// A small text output (a report, an index, a prototxt) through the same writer.
    result<void> write_text(const std::filesystem::path& path, std::string_view text);

    /// The last output written: a name another library can read it by before the commit.
    [[nodiscard]] std::filesystem::path last_readable_path() const { return outputs_.back().readable_path(); }
    /// The writer backend that wrote the first output ("" before any).
    [[nodiscard]] const char* writer() const noexcept { return writer_; }

    /// Every source is as it was opened (a file changed under the run invalidates what was read).
    [[nodiscard]] result<void> check_sources_unchanged() const;

    /// Renames every output into place in the order written (data files before the model
    /// that points into them), as one transaction (io::commit_outputs): if any rename
    /// fails, those done are undone and the files they replaced are back intact.
    [[nodiscard]] result<void> commit();

private:
    result<io::write_report> run_writer(const std::filesystem::path& path, std::uint64_t size, io::write_job job,
                                        const plan::write_plan& labels, std::string stage);

    const rewrite_options* options_ = nullptr;
    std::vector<error>* warnings_ = nullptr;
    std::filesystem::path model_path_;
    onnx::bound_model bound_;
    std::vector<const io::source_file*> added_;            // after the bound model's
    mutable std::vector<const io::source_file*> sources_;  // sources(): made again, as the bound model may have moved
    std::vector<io::file_identity> inputs_;
    std::optional<std::filesystem::path> in_place_model_;
    std::vector<io::output_file> outputs_;
    const char* writer_ = "";
};

}  // namespace onnxstream::ops
