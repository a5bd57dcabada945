#include <onnxstream/graph/index_cache.hpp>

namespace onnxstream::graph {

std::shared_ptr<const graph_index> index_cache::current() {
    const auto now = model_->revision();
    if (index_ != nullptr && revision_ == now) return index_;
    shapes_.reset();  // the old index's
    index_.reset();   // freed before the new one is built, unless a caller still holds it
    index_ = std::make_shared<const graph_index>(*model_);
    revision_ = now;
    ++builds_;
    return index_;
}

std::shared_ptr<const shape_table> index_cache::shapes(const graph_index& index, const tensor_reader& reader) {
    if (&index != index_.get() || revision_ != model_->revision())
        return std::make_shared<const shape_table>(infer_shapes(*model_, index, reader));
    if (shapes_ == nullptr || shapes_reader_ != &reader) {
        shapes_.reset();
        shapes_ = std::make_shared<const shape_table>(infer_shapes(*model_, index, reader));
        shapes_reader_ = &reader;
        ++shape_builds_;
    }
    return shapes_;
}

}  // namespace onnxstream::graph
