// The portable loops (the reference every SIMD path is tested against) and the choice of path.
#include "quantize_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace onnxstream::ops::detail {
namespace {

void scan_portable(const float* values, std::size_t count, value_range& range) noexcept {
    // In locals: `range` could alias `values` as far as the compiler knows, and would be
    // stored and loaded again at every value.
    float low = range.low, high = range.high, largest = range.largest;
    for (std::size_t i = 0; i < count; ++i) {
        const float w = values[i];
        if (!std::isfinite(w)) continue;
        low = std::min(low, w);
        high = std::max(high, w);
        largest = std::max(largest, std::fabs(w));
    }
    range = {low, high, largest};
}

void scan_columns_portable(const float* row, std::size_t count, float* low, float* high, float* largest) noexcept {
    for (std::size_t c = 0; c < count; ++c) {
        const float w = row[c];
        if (!std::isfinite(w)) continue;
        low[c] = std::min(low[c], w);
        high[c] = std::max(high[c], w);
        largest[c] = std::max(largest[c], std::fabs(w));
    }
}

// The error in double: (q - zero point) has at most 9 bits and the scale 24, so their
// product is exact, and only the subtraction rounds.
double error_of(float w, int q, block_parameters p) noexcept {
    const double back = static_cast<double>(q - p.zero_point) * static_cast<double>(p.scale);
    return std::fabs(static_cast<double>(w) - back);
}

double quantize_portable(const float* values, std::size_t count, block_parameters p, quantized_range range,
                         std::int8_t* levels) noexcept {
    double largest_error = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const float w = values[i];
        const int q = quantize_value(w, p, range);
        levels[i] = static_cast<std::int8_t>(q);
        if (std::isfinite(w)) largest_error = std::max(largest_error, error_of(w, q, p));
    }
    return largest_error;
}

double quantize_columns_portable(const float* row, std::size_t count, const float* scales, const std::int32_t* zero_points,
                                 quantized_range range, std::int8_t* levels) noexcept {
    double largest_error = 0;
    for (std::size_t c = 0; c < count; ++c) {
        const float w = row[c];
        const block_parameters p{scales[c], zero_points[c]};
        const int q = quantize_value(w, p, range);
        levels[c] = static_cast<std::int8_t>(q);
        if (std::isfinite(w)) largest_error = std::max(largest_error, error_of(w, q, p));
    }
    return largest_error;
}

constexpr quantize_kernels portable_kernels{scan_portable, scan_columns_portable, quantize_portable, quantize_columns_portable};

}  // namespace

const quantize_kernels& quantize_kernels_on(onnx::conversion_path path) noexcept {
#if ONNXSTREAM_X86_SIMD
    const auto available = onnx::available_conversion_paths();
    if (std::find(available.begin(), available.end(), path) != available.end()) {
        if (path == onnx::conversion_path::avx512) return avx512_quantize_kernels;
        if (path == onnx::conversion_path::avx2) return avx2_quantize_kernels;
    }
#else
    (void)path;
#endif
    return portable_kernels;
}

}  // namespace onnxstream::ops::detail
