// quantize: weight-only quantization of the constant weights of MatMul and Gemm, streaming.
// Each chosen float32 or float16 initializer (input B, 2-D, at least `min_size` bytes) is
// replaced by a DequantizeLinear (opset 21, `axis` and `block_size`) over its quantized
// bytes (int8, or int4/uint4 packed two per byte, low nibble first, as the ONNX spec lays
// them out), a scale tensor in the weight's own float type (the blocked axis divided by
// the block size, rounded up: the last block may be short) and, when asymmetric (and
// always for uint4), a zero point. The node keeps the weight's name as its output, so
// the MatMul/Gemm reading it is unchanged. Blocks run along the reduction axis: axis 0 of
// a MatMul B [K, N] and of a Gemm B with transB = 0, axis 1 of a Gemm B with transB = 1
// and of an embedding [V, D] a Gather reads (with --ops Gather; qdq only).
//
// Each weight is read once through a bounded buffer (one block of rows at a time) and its
// quantized bytes go to a spill file the writer copies from; scales and zero points are
// held per tensor (1/block_size of its values). The rounding rule (quantize_blocks.hpp):
// scale = max|w| / 127 (int8) or / 7 (4 bits) symmetric, (max(w,0) - min(w,0)) / (qmax -
// qmin) asymmetric, computed in float32 and rounded to the weight's type; a block whose
// scale would be 0 gets scale 1 (its values are all 0, and stay exactly 0);
// q = clamp(round_half_even(w / scale) + zero_point).
//
// The default-domain opset is raised to 21 (and ir_version to 10) when it is lower; a
// model below opset 13, or holding operators whose meaning changed between its opset and
// 21 (RoiAlign below 16, GridSample and DFT below 20, GroupNormalization below 21), is
// refused by name. Reductions whose `axes` attribute became an input at 18 are rewritten
// to the new form (the axes in a new int64 initializer). Layout: embedded when the input was,
// else fresh data files beside the output as repack lays them out (aligned, shardable).
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/ops/written_data_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxstream::ops {

enum class quantized_type : std::uint8_t { int8, int4, uint4 };
// qdq: DequantizeLinear feeding the original op. matmulnbits: each MatMul replaced by ONNX
// Runtime's com.microsoft MatMulNBits (4 bits; its quantizer's layout; Gemm is left alone).
enum class quantized_format : std::uint8_t { qdq, matmulnbits };

struct quantize_options : rewrite_options {
    quantized_type weights = quantized_type::int8;
    quantized_format format = quantized_format::qdq;
    std::uint64_t block_size = 32;  // 32, 64, 128 or 256
    bool symmetric = true;
    std::vector<std::string> ops{"MatMul", "Gemm"};  // which consumers' weights (also "Gather": embeddings)
    std::uint64_t min_size = 4096;                   // smaller weights stay float
    std::vector<std::string> exclude;                // initializer names left as they are
    std::string data_name;                           // empty: <output file name>.data
    std::uint64_t shard_size = 0;                    // 0: one data file
};

struct quantized_tensor {
    std::string name;
    std::vector<std::int64_t> dims;
    std::int64_t axis = 0;
    std::uint64_t bytes_before = 0;
    std::uint64_t bytes_after = 0;  // quantized values, scales and zero points
    double max_relative_error = 0;  // max |w - dequant(q)| / max |w| over the tensor
};

struct skipped_tensor {
    std::string name;
    std::string reason;
};

struct quantize_report {
    std::filesystem::path input;
    std::filesystem::path output;
    std::uint64_t output_size = 0;
    std::vector<written_data_file> data_files;
    std::string weights;  // "int8", "int4", "uint4"
    std::uint64_t block_size = 0;
    bool symmetric = true;
    std::string format;  // "qdq", "matmulnbits"
    std::vector<quantized_tensor> quantized;
    std::vector<skipped_tensor> skipped;  // weights of the chosen ops left float, and why
    std::uint64_t bytes_before = 0;       // of the quantized weights
    std::uint64_t bytes_after = 0;
    double max_relative_error = 0;  // the largest of the tensors'
    std::int64_t opset_before = 0;
    std::int64_t opset_after = 0;
    std::int64_t ir_version_before = 0;
    std::int64_t ir_version_after = 0;
    std::uint64_t nodes_upgraded = 0;  // Reduce* whose axes attribute became an input (opset 18)
    std::vector<error> warnings;
    const char* writer = "";
};

/// Errors: everything optimize reports, plus `invalid_argument` (a block size other than
/// 32/64/128/256, an op other than MatMul/Gemm, an --exclude name no initializer has, a
/// bad --data-name) and `unsupported` (nothing to quantize, an opset that cannot be
/// raised to 21). Nothing is written on error.
[[nodiscard]] result<quantize_report> quantize(const std::filesystem::path& model, const quantize_options& options);

}  // namespace onnxstream::ops
