// The loops of quantize that touch every weight (quantize.cpp): a block's range scan, the
// per-column scan of blocks along axis 0, and the quantization of a block (scale, round
// half to even, clamp, the largest error). They run on the portable code, which is the
// reference, or on a SIMD path the CPU has: onnx::conversion_path's paths, chosen at run time
// under the same limit (ONNXSTREAM_SIMD=off turns off float conversion's SIMD and these
// alike). Every path gives the portable path's results bit for bit, NaN, infinities,
// signed zeros and subnormals included (tests/unit/test_quantize_kernels.cpp). Private to the
// ops layer.
#pragma once

#include "../onnx/float_conversion_kernels.hpp"  // ONNXSTREAM_X86_SIMD
#include "quantize_blocks.hpp"

#include <onnxstream/onnx/conversion_path.hpp>

#include <cstddef>
#include <cstdint>

namespace onnxstream::ops::detail {

/// The smallest and largest finite values seen and the largest finite magnitude: what
/// parameters_of takes. A scan starts from value_range{} (all +0, so that 0 is always in the
/// range) or from an earlier scan's result.
struct value_range {
    float low = 0;
    float high = 0;
    float largest = 0;
};

/// One path's loops. `count` values at `values` (any alignment); NaN and infinities are left
/// out of the ranges and the error, as parameters_of and the report expect.
struct quantize_kernels {
    /// Widens `range` by the values (low = std::min(low, w) and so on, in that order).
    void (*scan)(const float* values, std::size_t count, value_range& range) noexcept;
    /// The same for one row of blocks along axis 0: low[c], high[c] and largest[c] are
    /// column c's range so far, widened by row[c].
    void (*scan_columns)(const float* row, std::size_t count, float* low, float* high, float* largest) noexcept;
    /// levels[i] = quantize_value(values[i], p, range); returns the largest
    /// |w - (q - zero point) * scale| over the finite values, in double (0 if none).
    double (*quantize)(const float* values, std::size_t count, block_parameters p, quantized_range range,
                       std::int8_t* levels) noexcept;
    /// The same for one row of blocks along axis 0: column c's parameters are scales[c] and
    /// zero_points[c].
    double (*quantize_columns)(const float* row, std::size_t count, const float* scales, const std::int32_t* zero_points,
                               quantized_range range, std::int8_t* levels) noexcept;
};

/// The loops of `path`; a path this build or this CPU cannot run gives the portable loops.
[[nodiscard]] const quantize_kernels& quantize_kernels_on(onnx::conversion_path path) noexcept;

#if ONNXSTREAM_X86_SIMD
// quantize_kernels_x86.cpp: each function compiled for its instructions, called only when
// onnx::available_conversion_paths() says the CPU has them.
extern const quantize_kernels avx2_quantize_kernels;
extern const quantize_kernels avx512_quantize_kernels;
#endif

}  // namespace onnxstream::ops::detail
