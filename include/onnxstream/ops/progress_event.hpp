// What an operation tells its caller while it works: one stage at a time, bytes done of
// the stage's total (an operation's `on_progress` callback receives these).
#pragma once

#include <cstdint>
#include <string>

namespace onnxstream::ops {

struct progress_event {
    std::string stage;        // "merge model.onnx", "write model.split.onnx.data"
    std::uint64_t done = 0;   // bytes written so far in this stage
    std::uint64_t total = 0;  // bytes this stage will write
    std::string tensor;       // the tensor being written, when the stage knows (about: bytes
                              // are written in parallel, this is the one at offset `done`)
    std::string unit;         // what done and total count: empty for bytes, else "passes"...
};

}  // namespace onnxstream::ops
