// The last step every rewriting command shares: check that an output may be written,
// create it at its planned size, run a writer over the plan, and turn checksum outcomes
// into warnings or errors.
#pragma once

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/plan/write_plan.hpp>
#include <onnxstream/result.hpp>

#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::ops {

/// Refuses an output that is one of the inputs (same device and inode), or that exists
/// without --force.
[[nodiscard]] result<void> check_output(const std::filesystem::path& output, std::span<const io::file_identity> inputs,
                                        bool force);

/// Creates `output` at the plan's size and writes it (not yet committed). SHA-1
/// mismatches become warnings, or with `strict` a `checksum_mismatch` error.
[[nodiscard]] result<io::write_report> write_planned(io::output_file& output, const plan::write_plan& plan,
                                                     std::span<const io::source_file* const> sources,
                                                     const rewrite_options& options, const std::string& stage,
                                                     std::vector<error>& warnings);

/// A plan written a window at a time (see io::write_job::more): memory stays bounded
/// whatever the number of operations.
struct windowed_plan {
    std::uint64_t size = 0;                    // the whole output's
    std::span<const io::stream_check> checks;  // for every window
    /// Fills the next window (starting with write_plan::next_window); false when the plan is done.
    std::function<bool(plan::write_plan& window)> next;
};

/// write_planned for a plan in windows.
[[nodiscard]] result<io::write_report> write_planned(io::output_file& output, const windowed_plan& plan,
                                                     std::span<const io::source_file* const> sources,
                                                     const rewrite_options& options, const std::string& stage,
                                                     std::vector<error>& warnings);

/// A rewritten model as a windowed plan; `stream` must outlive it.
[[nodiscard]] windowed_plan windows_of(plan::rewrite_stream& stream, const onnx::tree_edits& edits);

/// What a rewrite writes: data files and the model that points into them. Every one is
/// complete and on disk before the first rename, and the renames (data files first, the
/// model last) are one transaction (io::commit_outputs): if any fails, those done are
/// undone and the files they replaced (a repack in place: the inputs) are back intact, so
/// no model is left pointing at missing data.
struct rewrite_outputs {
    std::vector<io::output_file> data;
    io::output_file model;

    [[nodiscard]] result<void> commit();
};

/// A small text output (a report, an index, a prototxt) created and written through the
/// same writer (not yet committed).
[[nodiscard]] result<io::output_file> write_text_file(const std::filesystem::path& path, std::string_view text,
                                                      std::span<const io::source_file* const> sources,
                                                      const rewrite_options& options, std::vector<error>& warnings);

}  // namespace onnxstream::ops
