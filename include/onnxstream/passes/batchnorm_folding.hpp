// fold-bn: a BatchNormalization right after a Conv, ConvTranspose or Gemm is folded into
// that node's weight and bias. With f = scale / sqrt(var + epsilon) per channel:
//   W' = W * f (per output channel: axis 0 for Conv; for ConvTranspose, whose weight is
//   [C_in, C_out/group, k...], channel g*(C_out/group)+j along axis 1; for Gemm the
//   columns of B, or its rows with transB = 1),
//   b' = (b - mean) * f + B (b = 0 when there was no bias: a bias is added);
//   Gemm: C' = f * (beta*C - mean) + B, beta becomes 1 (C's broadcast kept: [N] or [M, N]).
// Factors are computed in double from the parameters' own type, the new tensors stored in
// the weight's type (FLOAT, FLOAT16, DOUBLE), under fresh names, so a weight another node
// shares is never changed under it. The weight itself is produced only when the model is
// written.
//
// Folded only when: the BatchNormalization is in inference mode (training_mode absent or
// 0; is_test = 1 before opset 7; spatial = 1 before opset 9) and only its first output is
// used; the producer's output feeds nothing else and is not a graph output; weight, bias
// and parameters are constants. Where var + epsilon <= 0 (the model itself yields NaN or
// Inf there) the variance is taken as 0, with a warning naming the node and channel.
// Anything else is skipped with a reason.
#pragma once

#include <onnxstream/passes/pass_context.hpp>

#include <cstdint>

namespace onnxstream::passes {

/// Runs fold-bn; returns the number of BatchNormalization nodes folded.
std::uint64_t fold_batchnorms(pass_context& context);

}  // namespace onnxstream::passes
