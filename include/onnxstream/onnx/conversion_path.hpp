// Which code converts float32 in bulk (float_conversion.hpp's convert_float32_bytes and
// count_float16_overflow): the portable loops, which are the reference, or a SIMD path the
// CPU has, chosen at run time so that one binary runs everywhere. Every path gives the same
// bytes and the same counts as the portable one (tests/unit/test_conversion_path.cpp
// compares them; bench/float_conversion_sweep.cpp over all 2^32 float32 patterns).
//
//   avx2    x86-64 with AVX2 and F16C: vcvtps2ph, 8 values at a time. vcvtps2ph rounds a
//           finite value past the float16 range to infinity, so the saturated lanes are
//           found by their own comparison, counted, and brought back to +-65504.
//   avx512  x86-64 with AVX-512F: the same, 16 values at a time.
//
// arm64 has no path of its own yet (its fcvtn would serve float16 the same way); the
// portable loops are what GCC vectorizes there.
#pragma once

#include <onnxstream/onnx/float_conversion.hpp>

#include <cstdint>
#include <span>
#include <string_view>

namespace onnxstream::onnx {

/// Ordered: a later path is faster and needs more of the CPU.
enum class conversion_path : std::uint8_t { portable, avx2, avx512 };

/// "portable", "avx2", "avx512".
[[nodiscard]] std::string_view conversion_path_name(conversion_path path) noexcept;

/// The paths this build can run on this CPU, portable first and the fastest last.
[[nodiscard]] std::span<const conversion_path> available_conversion_paths() noexcept;

/// Caps the path convert_float32_bytes and count_float16_overflow use, and quantize's
/// block loops (src/ops/quantize_kernels.hpp) with them, for the whole process, at `limit`
/// (portable: no SIMD at all). The library itself never reads the environment; the command
/// line sets this from ONNXSTREAM_SIMD (off, avx2). Thread-safe.
void limit_conversion_path(conversion_path limit) noexcept;

/// The path the bulk functions use: the fastest available one not above the limit.
[[nodiscard]] conversion_path active_conversion_path() noexcept;

/// convert_float32_bytes on a chosen path; a path not available here runs the portable one.
std::uint64_t convert_float32_bytes_on(conversion_path path, float_conversion kind, std::span<const std::byte> in,
                                       std::span<std::byte> out) noexcept;

/// count_float16_overflow on a chosen path; a path not available here runs the portable one.
void count_float16_overflow_on(conversion_path path, std::span<const std::byte> in, float16_overflow& found) noexcept;

}  // namespace onnxstream::onnx
