#include "commands.hpp"

#include <array>

namespace onnxstream::cli {
namespace {

constexpr std::array command_table{
    command{"inspect", "what a model is and what it needs (external data, 2 GB fit)", run_inspect},
    command{"merge", "inline external data into one self-contained .onnx", run_merge},
    command{"split", "move large tensors out to an aligned data file", run_split},
    command{"repack", "rewrite all weights, from wherever they are, into fresh aligned data files", run_repack},
};

}  // namespace

std::span<const command> commands() { return command_table; }

}  // namespace onnxstream::cli
