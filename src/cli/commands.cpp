#include "commands.hpp"

#include <array>

namespace onnxstream::cli {
namespace {

constexpr std::array command_table{
    command{"inspect", "what a model is and what it needs (external data, 2 GB fit)", run_inspect},
    command{"merge", "inline external data into one self-contained .onnx", run_merge},
    command{"split", "move large tensors out to an aligned data file", run_split},
    command{"repack", "rewrite all weights, from wherever they are, into fresh aligned data files", run_repack},
    command{"analyze", "report dead, duplicate and no-op parts of a model, per graph and subgraph", run_analyze},
    command{"optimize", "graph passes: dead code, constant folding, no-ops, BatchNorm folding, fusion", run_optimize},
    command{"verify", "check external references, sizes and SHA-1 checksums; exit 1 on problems", run_verify},
    command{"diff", "compare two models' graphs and tensor values, ignoring storage", run_diff},
    command{"convert", "float32 weights and computation to fp16 or bf16, streaming (Casts around unsafe ops)", run_convert},
    command{"quantize", "weight-only int8/int4 quantization of MatMul and Gemm weights, streaming", run_quantize},
    command{"edit", "fix input dims, rename tensors, add/remove outputs, metadata and doc strings; weights untouched", run_edit},
    command{"extract", "the part of a model that computes some values from others, weights unread", run_extract},
    command{"infer-shapes", "write value_info: the type and shape of every intermediate value it can infer", run_infer_shapes},
    command{"export", "write the model in another format: --to caffe, --to safetensors", run_export},
    command{"gui", "a local web page for the models in a folder: inspect, merge, split ... with progress", run_gui},
};

}  // namespace

std::span<const command> commands() { return command_table; }

}  // namespace onnxstream::cli
