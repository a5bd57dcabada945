// The passes run to a fixed point: round after round over the passes given, until a round
// changes nothing. optimize writes what this leaves; analyze counts what it removes. Both
// call this one driver, so analyze's "removable" is what optimize removes (both count
// graph_model::node_live nodes, subgraphs and functions included).
#pragma once

#include <onnxstream/passes/pass_context.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace onnxstream::passes {

struct fixed_point_options {
    pass_limits limits{};
    std::uint32_t max_rounds = 100;
    bool record = true;  // pass_context::record
    const std::atomic<bool>* cancel = nullptr;
    /// The index cache of `model` to share with the caller's own passes; none: one of the run's own.
    index_cache* indexes = nullptr;
    /// Before each pass of each round: (round, pass index). Rounds are not known ahead: a
    /// caller shows passes done within the round.
    std::function<void(std::uint32_t, std::size_t)> on_pass;
};

struct fixed_point_result {
    std::uint32_t rounds = 0;            // rounds that changed something
    std::vector<std::uint64_t> changes;  // per pass, summed over the rounds
    bool cancelled = false;              // stopped by `cancel`: the graph is part way
};

/// Runs `entries` on `model` until a round changes nothing (or max_rounds). Pass p's
/// findings go to `sink_of(p)`.
fixed_point_result run_to_fixed_point(graph_model& model, const tensor_reader& reader, std::span<const pass_entry* const> entries,
                                      const std::function<finding_sink(std::size_t)>& sink_of, std::vector<error>& warnings,
                                      const fixed_point_options& options);

}  // namespace onnxstream::passes
