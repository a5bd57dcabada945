#include <onnxstream/graph/name_table.hpp>

namespace onnxstream::graph {

name_table::name_table() { (void)intern(""); }

name_id name_table::intern(std::string_view text) {
    if (const auto it = ids_.find(text); it != ids_.end()) return it->second;
    const auto id = static_cast<name_id>(texts_.size());
    texts_.emplace_back(text);
    ids_.emplace(texts_.back(), id);
    return id;
}

std::optional<name_id> name_table::find(std::string_view text) const {
    if (const auto it = ids_.find(text); it != ids_.end()) return it->second;
    return std::nullopt;
}

name_id name_table::fresh(std::string_view base) {
    if (!base.empty() && !ids_.contains(base)) return intern(base);
    const std::string stem = base.empty() ? std::string("value") : std::string(base);
    for (std::uint64_t n = 1;; ++n) {
        const auto candidate = stem + "_" + std::to_string(n);
        if (!ids_.contains(candidate)) return intern(candidate);
    }
}

}  // namespace onnxstream::graph
