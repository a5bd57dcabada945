// analyze: a redundancy report, per graph and subgraph, without writing anything. Each
// pass runs once on its own fresh copy of the graph model, so every finding says what that
// one removal would save: dead nodes and the initializers only they use, isolated
// components, dead branches (If with a constant condition, Loop that never runs),
// duplicate computations, duplicate and unused initializers, Identity and no-op Dropout
// nodes, and graph inputs nothing uses (reported, never removed).
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/ops/finding_list.hpp>
#include <onnxstream/ops/progress_event.hpp>
#include <onnxstream/passes/finding.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace onnxstream::ops {

using analyze_totals = finding_totals;

struct analyze_report {
    std::filesystem::path path;
    std::uint64_t nodes = 0;  // in every graph, subgraph and function
    std::uint64_t initializers = 0;
    std::uint64_t initializer_bytes = 0;
    std::vector<std::string> scopes;    // every graph, main first, in file order
    finding_list findings;              // compact: a model may have a million (finding_list.hpp)
    std::uint64_t removable_nodes = 0;  // nodes all the removals together take out, each counted once
    std::vector<error> warnings;        // e.g. external data missing: duplicates not compared

    /// Findings of one kind added up.
    [[nodiscard]] analyze_totals totals(passes::finding_kind kind) const;
};

struct analyze_options : onnx::open_options {
    const std::atomic<bool>* cancel = nullptr;
    /// Passes run so far of the passes to run (progress_event::unit "passes"); the total
    /// grows by a round's passes when the fixed point takes another round.
    std::function<void(const progress_event&)> on_progress;
};

/// Errors: the model cannot be read; `interrupted` when `cancel` was set. Missing external
/// data is a warning (the tensors it holds are not compared).
[[nodiscard]] result<analyze_report> analyze(const std::filesystem::path& model, const analyze_options& options = {});
/// The same, without progress or cancelling.
[[nodiscard]] result<analyze_report> analyze(const std::filesystem::path& model, const onnx::open_options& options);

}  // namespace onnxstream::ops
