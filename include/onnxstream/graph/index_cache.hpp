// One graph_index shared by the passes of a run, built again only after the model changed.
//
// Why: each pass used to build its own index, and on a large graph that does not change
// (a chain of a million Relu nodes) the dozen builds of one optimize were most of its CPU,
// half of it page faults on 53 fresh bytes a node each time. graph_model::revision moves
// with every edit, so an index built at the same revision is the index of the model as it
// is now.
//
// An index handed out is a snapshot the caller shares: it stays as it was while its holder
// edits the model (as a pass's own index did), and the next request after the edit gets a
// new one. The cache lets go of its own hold before it builds, so two are held together only
// while a caller still keeps the old one.
//
// The static shapes of the values (infer_shapes over that index) are kept beside it the
// same way: three passes read them (fusion, nop removal, shape folding), and each inferred
// them again over a model none of them had changed, a third of analyze's time on the
// million-node chain.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/graph/value_shapes.hpp>

#include <cstdint>
#include <memory>

namespace onnxstream::graph {

class index_cache {
public:
    explicit index_cache(const graph_model& model) noexcept : model_(&model) {}

    /// The index of the model as it is now: the last one built if the model's revision has
    /// not moved since, else a new one.
    [[nodiscard]] std::shared_ptr<const graph_index> current();
    /// The shapes of the values of `index` (infer_shapes, reading constants with
    /// `reader`): kept while `index` is the current one of an unchanged model and the
    /// reader the same, else made for this caller alone.
    [[nodiscard]] std::shared_ptr<const shape_table> shapes(const graph_index& index, const tensor_reader& reader);
    /// Lets go of the cache's hold on the index and the shapes (a pass about to make many
    /// findings frees them first); the next `current` builds again.
    void release() noexcept {
        shapes_.reset();
        index_.reset();
    }
    /// Indexes built so far (what a test of the reuse counts).
    [[nodiscard]] std::uint64_t builds() const noexcept { return builds_; }
    /// Shape tables kept so far (made by `shapes` for the current index).
    [[nodiscard]] std::uint64_t shape_builds() const noexcept { return shape_builds_; }

private:
    const graph_model* model_;
    std::shared_ptr<const graph_index> index_;
    std::uint64_t revision_ = 0;
    std::uint64_t builds_ = 0;
    std::shared_ptr<const shape_table> shapes_;  // of index_, when asked
    const tensor_reader* shapes_reader_ = nullptr;
    std::uint64_t shape_builds_ = 0;
};

}  // namespace onnxstream::graph
