// The unit of work of a writer: put `length` bytes at `output_offset` of the output,
// taken either from an in-memory pool (emit) or from a source file (copy), optionally
// hashing them on the way (a `stream_check`), or computed from a source file's float32
// slice of `2 * length` bytes (convert: float16 / bfloat16, see onnx/float_conversion.hpp). The planner (plan/) produces these;
// the writers here execute them without knowing anything about ONNX.
#pragma once

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/onnx/float_conversion.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace onnxstream::io {

inline constexpr std::uint32_t no_check = std::numeric_limits<std::uint32_t>::max();

enum class operation_kind : std::uint8_t { emit, copy, convert };

struct write_operation {
    operation_kind kind = operation_kind::emit;
    std::uint32_t source = 0;        // copy: index into the writer's source table
    std::uint32_t check = no_check;  // copy: index into the plan's checks, or no_check
    std::uint64_t output_offset = 0;
    std::uint64_t length = 0;
    std::uint64_t input_offset = 0;  // copy, convert: offset in the source; emit: offset in the pool
    onnx::float_conversion conversion = onnx::float_conversion::none;  // convert: which one
};

/// What to do with one copy's bytes as they stream: compare with a known SHA-1 (the ONNX
/// `checksum` key), compute one (--write-checksums), compute an XXH3-64 (diff, dedupe).
struct stream_check {
    std::string tensor;  // the tensor's name or field path, for messages
    std::optional<sha1_digest> expected_sha1;
    bool compute_sha1 = false;
    bool compute_xxh3 = false;
};

}  // namespace onnxstream::io
