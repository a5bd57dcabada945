// From an edited graph model back to bytes: the tree edits that turn the input model into
// the output. The main graph and local functions are edited in place, field by field:
// removed nodes, initializers and value_info are dropped; nodes and initializers that are
// new, moved (an inlined branch) or changed are encoded from the graph model and
// inserted where they belong in node order. A node whose subgraph changed is encoded
// whole, its untouched parts still copied from the input. Everything else is copied byte
// for byte by the planner.
//
// Where tensor bytes go is decided by the caller (a storage_plan): a surviving external
// tensor can be pointed at a new data file; computed tensors have their bytes in the
// spill file and become raw_data or external data. Encoded messages with large slices
// are streamed into the spill file and inserted as slices of it.
#pragma once

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/io/spill_file.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace onnxstream::graph {

struct external_location {
    std::string location;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

struct computed_placement {
    std::uint64_t data_offset = 0;  // where its bytes are in the spill file
    std::uint64_t length = 0;
    std::optional<external_location> external;  // set: external data; empty: embedded
    std::uint64_t message_offset = 0;           // embedded: the whole TensorProto payload in the spill file
    std::uint64_t message_length = 0;
};

// Sparse: a model of a million tensors of which few move or are computed holds an entry
// for those few only (a table over every site and tensor took 144 bytes a tensor).
struct storage_plan {
    std::uint32_t spill_source = none;  // the spill file's index in the writer's sources

    /// Gives `site` new external_data (every other site keeps its storage).
    void move_site(site_id site, external_location where);
    /// The new external_data of `site`, or null when it keeps its storage.
    [[nodiscard]] const external_location* site_location(site_id site) const;
    /// The sites given new external_data, by site.
    [[nodiscard]] std::span<const std::pair<site_id, external_location>> moved_sites() const noexcept { return sites_; }

    /// The placement of computed tensor `tensor`, made on first use.
    computed_placement& placement(tensor_id tensor);
    /// The placement of computed tensor `tensor`, or null when it has none.
    [[nodiscard]] const computed_placement* placement(tensor_id tensor) const;

private:
    std::vector<std::pair<site_id, external_location>> sites_;        // sorted by site
    std::vector<std::pair<tensor_id, computed_placement>> computed_;  // sorted by tensor
};

/// Whether each model_file site is still in the model after the passes (in a live scope,
/// a live node, a function still used, or a training graph).
[[nodiscard]] indexed_vector<site_id, bool> surviving_sites(const graph_model& model);

/// Builds the edits. `sources` are the writer's sources (0: the model file), used to
/// stream slices into the spill file. Errors: I/O errors of the spill file.
[[nodiscard]] result<onnx::tree_edits> build_edits(const graph_model& model, const storage_plan& plan, io::spill_file& spill,
                                                   std::span<const io::source_file* const> sources);

}  // namespace onnxstream::graph
