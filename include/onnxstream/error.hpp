// onnxstream errors: values, not exceptions, not log lines.
//
// Every failure the library can meet is described by an `error`: a code that says which
// kind of failure it is (and so which exit status the CLI maps it to), a sentence saying
// what happened, a hint saying what to do about it, and where it applies, the byte offset
// in the input and the path of the field (`graph.initializer[12].raw_data`). Failures of
// the operating system keep their `std::error_code`.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

namespace onnxstream {

enum class error_code : std::uint8_t {
    io,                 // the operating system refused (open, read, write, rename ...)
    no_space,           // the output's file system is full
    malformed,          // the bytes are not valid protobuf
    limit_exceeded,     // valid protobuf, but past a limit in the options (depth, counts)
    not_onnx,           // valid protobuf that is not an ONNX model
    missing_data,       // an external data file could not be found
    truncated_data,     // an external data file is shorter than a tensor needs
    unsafe_location,    // an external `location` is absolute, leaves the folder, or links out
    invalid_tensor,     // bad external_data entry, negative dims, overflowing sizes
    size_mismatch,      // tensor bytes != product(dims) * element size
    checksum_mismatch,  // the SHA-1 `checksum` key does not match the bytes
    too_large,          // the single-file output would pass protobuf's 2 GB limit
    output_exists,      // the output exists and --force was not given
    output_is_input,    // the output would overwrite one of the inputs
    interrupted,        // cancelled by the caller (SIGINT, SIGTERM)
    unsupported,        // valid input that this version cannot handle
    invalid_argument,   // the caller passed something that cannot work (a usage error)
};

/// A short stable name for a code, as printed in JSON (`"truncated_data"`).
[[nodiscard]] const char* to_string(error_code code) noexcept;

struct error {
    static constexpr std::uint64_t no_offset = std::numeric_limits<std::uint64_t>::max();

    error() = default;
    error(error_code c, std::string what, std::string what_to_do = {})
        : code(c), message(std::move(what)), hint(std::move(what_to_do)) {}

    error_code code = error_code::io;
    std::string message;     // what happened, one sentence, no trailing period needed
    std::string hint;        // what to do about it; may be empty
    std::uint64_t offset = no_offset;  // byte offset in the input, when one applies
    std::string field_path;  // e.g. "graph.initializer[12].raw_data"; may be empty
    std::error_code os_error{};        // the OS failure behind it, if any

    /// The message followed by the offset and the field path where they are known.
    [[nodiscard]] std::string describe() const;
};

/// Builds an error from errno-style failures: "<what>: <strerror>".
[[nodiscard]] error os_failure(std::string what, std::error_code os, std::string hint = {});

}  // namespace onnxstream
