// Reading the values of the few tensors a pass must look at (a condition, BatchNorm
// parameters, the weight being folded, initializers compared for duplicates), wherever
// their bytes are: raw_data in the mapped model, typed fields, or an external data file
// (read with pread, never mapped whole). A tensor a pass computed is produced from its
// recipe. Nothing else is ever read.
//
// Elements are decoded to double and encoded back from double for FLOAT, FLOAT16,
// DOUBLE (and decoded from BFLOAT16 and the integer types); FLOAT16 is rounded to
// nearest, ties to even, straight from double (no double rounding through float).
#pragma once

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace onnxstream::graph {

/// Bytes per element for the types the passes decode; 0 for others.
[[nodiscard]] std::uint32_t element_size(std::int32_t data_type) noexcept;
/// Element `index` of little-endian `raw` as a double; empty for types not decoded.
[[nodiscard]] std::optional<double> decode_element(std::int32_t data_type, std::span<const std::byte> raw,
                                                   std::uint64_t index) noexcept;
/// Writes `value` as element `index` of `raw`; false for types not encoded (only FLOAT,
/// FLOAT16 and DOUBLE are).
bool encode_element(std::int32_t data_type, double value, std::span<std::byte> raw, std::uint64_t index) noexcept;
[[nodiscard]] bool is_encodable_float(std::int32_t data_type) noexcept;
[[nodiscard]] double half_to_double(std::uint16_t bits) noexcept;
[[nodiscard]] std::uint16_t double_to_half(double value) noexcept;

/// The channel (0..C-1) element `index` of a weight with `dims` belongs to.
[[nodiscard]] std::uint64_t channel_of(channel_layout layout, std::span<const std::int64_t> dims, std::uint64_t group,
                                       std::uint64_t index) noexcept;

/// Calls `visit(first element, element count, channel)` for each run of consecutive
/// elements of one channel, in order, covering the whole weight.
void for_each_channel_run(channel_layout layout, std::span<const std::int64_t> dims, std::uint64_t group,
                          const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)>& visit);
/// Multiplies elements [begin, begin + length) of little-endian `raw` by `factor`, in double,
/// rounding back to the type (FLOAT, FLOAT16, DOUBLE; others are left alone).
void scale_run(std::int32_t data_type, std::span<std::byte> raw, std::uint64_t begin, std::uint64_t length,
               double factor) noexcept;

class tensor_reader {
public:
    /// `data` is the model's bound external data; null when it has none.
    tensor_reader(const onnx::model_file& model, const onnx::external_data* data);

    /// The raw little-endian bytes of tensor site `site`. Errors: `unsupported` (strings,
    /// sparse forms, segments), `missing_data` (external data not found), `size_mismatch`,
    /// I/O errors.
    [[nodiscard]] result<std::vector<std::byte>> site_bytes(onnx::site_id site) const;
    /// The same in pieces of at most `chunk` bytes, for hashing and comparing large tensors.
    [[nodiscard]] result<void> for_each_chunk(onnx::site_id site, std::size_t chunk,
                                              const std::function<void(std::span<const std::byte>)>& visit) const;
    /// Bytes [offset, offset + length) of site `site`'s raw form (clamped to its size).
    [[nodiscard]] result<std::vector<std::byte>> read_range(onnx::site_id site, std::uint64_t offset, std::uint64_t length) const;
    /// The bytes of initializer `t` of `model`: read for an original tensor, produced from
    /// its recipe for a computed one.
    [[nodiscard]] result<std::vector<std::byte>> tensor_bytes(const graph_model& model, tensor_id t) const;
    /// Produces a computed tensor's bytes.
    [[nodiscard]] result<std::vector<std::byte>> compute(std::int32_t data_type, std::span<const std::int64_t> dims,
                                                         const computed_values& values) const;
    /// Whether site `site` has its bytes available (external data found and in bounds).
    [[nodiscard]] bool readable(onnx::site_id site) const;

private:
    const onnx::model_file& model_;
    const onnx::external_data* data_;
    indexed_vector<onnx::site_id, onnx::binding_id> binding_of_;  // none: not external
};

}  // namespace onnxstream::graph
