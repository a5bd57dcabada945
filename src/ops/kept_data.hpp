// The external tensors a graph rewrite keeps (optimize, extract) and the computed tensors
// that go beside them: one new data file, `<output file name>.data`, laid out as split
// lays out one file; or, with reuse_data, each kept tensor pointed at the data file it is
// in (which must be inside the output's folder). Private to src/ops.
#pragma once

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/model_edits.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/ops/rewrite_session.hpp>
#include <onnxstream/ops/written_data_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace onnxstream::ops::detail {

/// A tensor's place in the new data file.
struct data_entry {
    std::uint32_t source = 0;  // the writer's source its bytes are read from
    std::uint64_t source_offset = 0;
    std::uint64_t length = 0;
    std::uint64_t offset = 0;                    // in the data file (lay_out)
    onnx::site_id site = onnxstream::none;       // the tensor it keeps, or none for a computed tensor
    graph::tensor_id tensor = onnxstream::none;  // the computed graph_model tensor, or none
};

/// The external tensors of `bound` still in `graph` (graph::surviving_sites): an entry each
/// in `entries`, or with `reuse_data` their location rewritten in `plan` as a path from
/// `folder`. Returns the bytes the new entries copy. Errors: `invalid_argument` when a
/// data file to reuse is not inside `folder`.
[[nodiscard]] result<std::uint64_t> keep_surviving_external(const onnx::bound_model& bound, const graph::graph_model& graph,
                                                            bool reuse_data, const std::filesystem::path& folder,
                                                            graph::storage_plan& plan, std::vector<data_entry>& entries);

/// Gives each entry its offset in the data file `data_name` and points its tensor there
/// (a computed tensor's bytes are read from where `plan` placed them in the spill file).
void lay_out(const std::string& data_name, std::vector<data_entry>& entries, graph::storage_plan& plan);

/// Writes the data file at `path` through `session`, each kept tensor's bytes checked
/// against its `checksum` as they are copied.
[[nodiscard]] result<written_data_file> write_data_file(rewrite_session& session, const std::filesystem::path& path,
                                                        std::span<const data_entry> entries);

}  // namespace onnxstream::ops::detail
