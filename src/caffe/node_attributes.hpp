// Reading a node's attributes with a fallback, and the target shape of Squeeze/Unsqueeze:
// shared by the layer mapper and the reference evaluator so both read a node the same
// way. Private to src/caffe.
#pragma once

#include <onnxstream/graph/graph_model.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::caffe::detail {

class node_attributes {
public:
    explicit node_attributes(const graph::graph_model& model) : graph_(model) {}

    std::int64_t attr_int(graph::node_id n, std::string_view name, std::int64_t fallback) const {
        const auto a = graph_.attribute(n, name);
        return a && a->i ? *a->i : fallback;
    }
    double attr_float(graph::node_id n, std::string_view name, double fallback) const {
        const auto a = graph_.attribute(n, name);
        return a && a->f ? *a->f : fallback;
    }
    std::optional<std::vector<std::int64_t>> attr_ints(graph::node_id n, std::string_view name) const {
        const auto a = graph_.attribute(n, name);
        if (!a) return std::nullopt;
        return a->ints;
    }
    std::string attr_text(graph::node_id n, std::string_view name, std::string_view fallback) const {
        const auto a = graph_.attribute(n, name);
        return a && a->s ? std::string(*a->s) : std::string(fallback);
    }

private:
    const graph::graph_model& graph_;
};

// The shape Squeeze (squeeze = true) or Unsqueeze gives `in` with `axes` (negative axes
// count from the end; Squeeze with no axes drops every 1). nullopt when an axis is out of
// range or repeated, or Squeeze names a dimension that is not 1.
inline std::optional<std::vector<std::int64_t>> squeezed_shape(const std::vector<std::int64_t>& in,
                                                               const std::vector<std::int64_t>& axes, bool squeeze) {
    const auto rank = static_cast<std::int64_t>(squeeze ? in.size() : in.size() + axes.size());
    std::set<std::int64_t> named;
    for (const auto a : axes) {
        if (a < -rank || a >= rank) return std::nullopt;
        if (!named.insert(a < 0 ? a + rank : a).second) return std::nullopt;
    }
    std::vector<std::int64_t> target;
    if (squeeze) {
        for (std::size_t i = 0; i < in.size(); ++i) {
            const bool dropped = axes.empty() ? in[i] == 1 : named.contains(static_cast<std::int64_t>(i));
            if (dropped && in[i] != 1) return std::nullopt;
            if (!dropped) target.push_back(in[i]);
        }
        return target;
    }
    // Unique axes in [0, rank): exactly in.size() positions are left for the input's dims.
    std::size_t next = 0;
    for (std::int64_t i = 0; i < rank; ++i) target.push_back(named.contains(i) ? 1 : in[next++]);
    return target;
}

}  // namespace onnxstream::caffe::detail
