// The bulk conversion loops of each path (private to src/onnx): conversion_path.hpp says
// what the paths are. A kernel takes whole values (`count` float32 at `in`, little-endian)
// and handles every one of them, its vector body and its tail alike.
#pragma once

#include <onnxstream/onnx/float_conversion.hpp>

#include <cstddef>
#include <cstdint>

// The x86-64 paths are compiled with GCC's (and clang's) per-function target attributes,
// so the rest of the binary keeps the baseline instruction set.
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
#define ONNXSTREAM_X86_SIMD 1
#else
#define ONNXSTREAM_X86_SIMD 0
#endif

namespace onnxstream::onnx::detail {

#if ONNXSTREAM_X86_SIMD
std::uint64_t float16_avx2(const std::byte* in, std::byte* out, std::size_t count) noexcept;
void bfloat16_avx2(const std::byte* in, std::byte* out, std::size_t count) noexcept;
void overflow_avx2(const std::byte* in, std::size_t count, float16_overflow& found) noexcept;

std::uint64_t float16_avx512(const std::byte* in, std::byte* out, std::size_t count) noexcept;
void bfloat16_avx512(const std::byte* in, std::byte* out, std::size_t count) noexcept;
void overflow_avx512(const std::byte* in, std::size_t count, float16_overflow& found) noexcept;
#endif

}  // namespace onnxstream::onnx::detail
