// What a Caffe blob can hold, and size arithmetic that cannot overflow. BVLC Caffe's
// Blob::Reshape refuses more than INT_MAX elements and stores each dimension as an int;
// OpenCV's Mat does the same. So every shape the exporter gives a blob (a top, a weight,
// an Input) has dimensions in [1, 2^31 - 1] and at most 2^31 - 1 elements, and every
// computation on sizes goes through the checked functions here: a model's dims and
// attributes are untrusted 64-bit numbers.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>

namespace onnxstream::caffe {

inline constexpr std::int64_t max_blob_dimension = std::numeric_limits<std::int32_t>::max();
inline constexpr std::uint64_t max_blob_elements = std::numeric_limits<std::int32_t>::max();

/// a * b, or nullopt when it overflows int64.
[[nodiscard]] inline std::optional<std::int64_t> checked_multiply(std::int64_t a, std::int64_t b) noexcept {
    std::int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
    return out;
}

/// a + b, or nullopt when it overflows int64.
[[nodiscard]] inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) noexcept {
    std::int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
    return out;
}

/// The number of elements of a tensor with `dims`: nullopt when a dimension is negative or
/// the product passes `limit` (checked at every step, so it never wraps).
[[nodiscard]] std::optional<std::uint64_t> element_count(std::span<const std::int64_t> dims, std::uint64_t limit) noexcept;

/// Why `dims` cannot be the shape of a Caffe blob (a dimension below 1 or past 2^31 - 1,
/// or more than 2^31 - 1 elements), as a clause; nullopt when it can.
[[nodiscard]] std::optional<std::string> blob_shape_problem(std::span<const std::int64_t> dims);

}  // namespace onnxstream::caffe
