// The last step every rewriting command shares: check that an output may be written,
// create it at its planned size, run a writer over the plan, and turn checksum outcomes
// into warnings or errors.
#pragma once

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/plan/write_plan.hpp>
#include <onnxstream/result.hpp>

#include <filesystem>
#include <span>
#include <string>
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

}  // namespace onnxstream::ops
