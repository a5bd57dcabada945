// What every pass gets and gives back: the graph model to edit, a reader for the few
// tensors it may look at, and where its findings go (finding_sink.hpp), one per thing it
// removed, merged, folded or skipped (with the scope, the names involved, and the nodes
// and bytes it saves). analyze shows findings; optimize counts them. Passes never fail: what they
// cannot do they skip and report. Warnings (a BatchNorm variance clamped) go to
// `warnings`.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/index_cache.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/graph/value_replacement.hpp>
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/passes/finding.hpp>
#include <onnxstream/passes/finding_sink.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onnxstream::passes {

// Passes are written in the graph layer's terms (graph_model, graph_index, none, name_id,
// replace_uses...): its names are this namespace's too.
using namespace onnxstream::graph;

/// A finding about one node `n` of `model`: its scope, op_type and label, one node.
[[nodiscard]] finding node_finding(const graph_model& model, node_id n, finding_kind kind, std::string detail = {});

/// Limits the passes respect (set by the front end: `--fold-limit`).
struct pass_limits {
    std::uint64_t fold_bytes = 1ULL << 20;  // largest tensor fold-constants / shape may create
};

struct pass_context {
    graph_model& model;
    const tensor_reader& reader;
    finding_sink findings;
    std::vector<error>& warnings;
    pass_limits limits{};
    // false: the caller drops the findings unread (analyze's fixed-point run), so a pass
    // may skip making them. The edits are the same either way.
    bool record = true;
    // The index the passes of a run share (the driver's and analyze's); none: each request
    // builds one.
    index_cache* indexes = nullptr;

    /// The index of the model as it is now, a snapshot that stays as it was while the pass
    /// edits (ask again after an edit for the new one).
    [[nodiscard]] std::shared_ptr<const graph_index> index() const;
    /// The shapes of the values of `index` (one this context gave), shared with the other
    /// passes of the run while the model does not change.
    [[nodiscard]] std::shared_ptr<const shape_table> shapes(const graph_index& index) const;
    /// Frees the shared index when nothing else holds it: a pass about to make many findings
    /// calls this first, so the index and the findings are not held together.
    void release_index() const noexcept;
};

}  // namespace onnxstream::passes
