#include <onnxstream/caffe/blob_limits.hpp>

namespace onnxstream::caffe {

std::optional<std::uint64_t> element_count(std::span<const std::int64_t> dims, std::uint64_t limit) noexcept {
    std::uint64_t count = 1;
    for (const auto d : dims) {
        if (d < 0) return std::nullopt;
        // A partial product past 64 bits is refused even when a later dimension is 0.
        if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count) || count > limit) return std::nullopt;
    }
    return count;
}

std::optional<std::string> blob_shape_problem(std::span<const std::int64_t> dims) {
    std::string text;
    for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
    if (text.empty()) text = "scalar";
    for (const auto d : dims) {
        if (d < 1) return "a blob of shape " + text + " has an empty dimension, and a Caffe blob cannot";
        if (d > max_blob_dimension)
            return "a blob of shape " + text + " has a dimension past 2^31 - 1, the largest a Caffe blob holds";
    }
    if (!element_count(dims, max_blob_elements))
        return "a blob of shape " + text + " has more than 2^31 - 1 elements, the most a Caffe blob holds";
    return std::nullopt;
}

}  // namespace onnxstream::caffe
