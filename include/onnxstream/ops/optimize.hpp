// optimize: graph passes on the streaming tree. The passes (passes/pass_registry.hpp; all
// of them by default) run in the order given, round after round, until a round changes
// nothing; then the model is written through tree edits, every untouched field copied byte
// for byte and no untouched weight read.
//
// Output storage follows the input. An embedded model stays embedded (refused with
// `too_large` past protobuf's 2 GB). A model with external data gets a new data file
// beside the output, `<output file name>.data`, holding the surviving external tensors
// and the computed ones of 1 KiB and more, streamed from the old files (removed tensors
// are dropped); with `reuse_data` the output points at the original data files instead
// (they must be inside the output's folder) and only computed tensors go to a new file.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/ops/finding_list.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/ops/written_data_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::ops {

struct optimize_options : rewrite_options {
    std::vector<std::string> passes;  // names in passes::pass_registry(); empty: all, in its order
    bool dry_run = false;             // run the passes, write nothing
    bool reuse_data = false;          // point at the input's data files instead of copying them
    std::uint32_t max_rounds = 100;
    std::uint64_t external_threshold = 1024;  // computed tensors this large go to the data file
    std::uint64_t fold_limit = 1ULL << 20;    // largest tensor a fold creates (passes::pass_limits)
    // false: each pass's findings other than skips are only counted (finding_list::count),
    // for a report that shows totals and skips (optimize's text); a million unused
    // initializers then cost no list of a million names.
    bool keep_findings = true;
};

struct pass_result {
    std::string name;
    std::uint64_t changes = 0;
    // Every round's, in the order found, skips reported once. Compact: dce on a model of a
    // million unused initializers finds a million.
    finding_list findings;
};

/// What one pass changed, summed over its findings (what optimize prints per pass).
struct pass_totals {
    std::uint64_t nodes = 0;
    std::uint64_t initializers = 0;
    std::uint64_t bytes = 0;
    std::uint64_t value_info = 0;
    std::uint64_t functions = 0;
    std::uint64_t folded = 0;
    std::uint64_t branches = 0;
    std::uint64_t skipped = 0;
};
[[nodiscard]] pass_totals totals(const pass_result& pass);

struct model_counts {
    std::uint64_t nodes = 0;  // in every graph, subgraph and function
    std::uint64_t main_graph_nodes = 0;
    std::uint64_t initializers = 0;
    std::uint64_t initializer_bytes = 0;
};

struct optimize_report {
    std::filesystem::path input;
    std::filesystem::path output;
    bool dry_run = false;
    std::string storage;  // "embedded", "external" or "reuse-data"
    std::uint64_t output_size = 0;
    std::vector<written_data_file> data_files;
    std::uint32_t rounds = 0;
    model_counts before;
    model_counts after;
    std::vector<pass_result> passes;
    std::uint64_t stale_value_info = 0;  // value_info dropped because its value is gone
    std::vector<error> warnings;
    const char* writer = "";
};

/// Parses `dce,cse`: known names, no repeats. Errors: `invalid_argument`.
[[nodiscard]] result<std::vector<std::string>> parse_pass_list(std::string_view list);

/// Errors: as merge (finding and checking external data, writing), plus `too_large`.
[[nodiscard]] result<optimize_report> optimize(const std::filesystem::path& model, const optimize_options& options);

}  // namespace onnxstream::ops
