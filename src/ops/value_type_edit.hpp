// A TypeProto's tensor type decoded into what edit changes (element type, dims) and
// encoded again around the original bytes: every field edit does not change (denotation,
// unknown fields, the other kinds of type) is copied as it is. Private to src/ops.
#pragma once

#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace onnxstream::ops::detail {

struct dimension {
    enum class kind : std::uint8_t { unknown, value, symbol };
    kind what = kind::unknown;
    std::int64_t value = 0;
    std::string symbol;
    bool operator==(const dimension&) const = default;
};

struct decoded_type {
    bool is_tensor = false;  // a tensor_type (not a sequence, map, optional or sparse type)
    std::int32_t elem_type = 0;
    bool has_shape = false;
    std::vector<dimension> dims;
    bool operator==(const decoded_type&) const = default;
};

/// The tensor type of the TypeProto `bytes`. Errors: `malformed` when they do not tokenize.
[[nodiscard]] result<decoded_type> decode_type(std::span<const std::byte> bytes);

/// A TypeProto: `original` (empty for a new one) with its tensor type's elem_type and
/// shape made those of `type`; every other field is copied.
[[nodiscard]] std::vector<std::byte> encode_type(std::span<const std::byte> original, const decoded_type& type);

/// `[1, N, ?]`, or `(no shape)`.
[[nodiscard]] std::string dims_text(const decoded_type& type);

}  // namespace onnxstream::ops::detail
