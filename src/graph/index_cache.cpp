#include <onnxstream/graph/index_cache.hpp>

namespace onnxstream::graph {

std::shared_ptr<const graph_index> index_cache::current() {
    const auto now = model_->revision();
    if (index_ != nullptr && revision_ == now) return index_;
    index_.reset();  // freed before the new one is built, unless a caller still holds it
    index_ = std::make_shared<const graph_index>(*model_);
    revision_ = now;
    ++builds_;
    return index_;
}

}  // namespace onnxstream::graph
