// verify: is a model whole? Checks, without writing anything:
//   structure  the whole .onnx tokenizes as a ModelProto and every tensor in it reads
//              (dims, external_data keys);
//   data       every external reference is found where its location says (a file found
//              only by a guess is a problem: a runtime will not find it), allowed (no
//              absolute or escaping locations), in bounds, and holds dims x element size
//              bytes; embedded tensors hold the bytes their dims need too;
//   checksums  every `checksum` key is a SHA-1 and matches the bytes, streamed through a
//              fixed buffer per worker (files are never loaded or mapped whole).
// Everything found is collected as a problem naming the tensor, its file and what is
// wrong; the run only fails when the model cannot be read at all or is cancelled.
#pragma once

#include <onnxstream/onnx/how_found.hpp>
#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/ops/progress_event.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace onnxstream::ops {

/// Which check found a problem.
enum class verify_check : std::uint8_t {
    structure,  // the model does not tokenize, or a tensor in it does not read
    data,       // an external file is missing, refused, unreadable, or too short
    size,       // the bytes a tensor holds differ from dims x element size
    checksum,   // a `checksum` key is not a SHA-1, or does not match the bytes
};

[[nodiscard]] const char* to_string(verify_check check) noexcept;

struct verify_problem {
    verify_check check = verify_check::structure;
    std::string tensor;                         // the tensor's name; empty when not a tensor's
    std::string location;                       // its external `location` as written; empty when embedded
    std::optional<std::filesystem::path> file;  // the data file used, when one was found
    error what;                                 // code, message, hint, field path
};

struct verified_file {
    std::string location;                       // as written in the model
    std::optional<std::filesystem::path> path;  // where it was found
    std::optional<onnx::how_found> how;         // how it was found (front ends word it); empty when not
    bool guessed = false;                       // not where the location says (also a problem)
    std::optional<std::uint64_t> size;          // when it could be opened
    std::uint64_t tensors = 0;
    std::uint64_t bytes_referenced = 0;    // the union of the tensors' ranges
    std::uint64_t unreferenced_bytes = 0;  // bytes no tensor points at (padding, orphans)
};

struct verify_report {
    std::filesystem::path path;
    std::uint64_t file_size = 0;
    bool structure_ok = false;  // the model tokenized and every tensor read
    std::uint64_t tensors = 0;
    std::uint64_t external_tensors = 0;
    std::uint64_t checksums = 0;  // `checksum` keys present
    std::uint64_t checksums_matched = 0;
    std::uint64_t bytes_hashed = 0;  // bytes read to check checksums
    std::vector<verified_file> files;
    std::vector<verify_problem> problems;
    std::vector<std::string> notes;  // worth knowing, not wrong (overlapping ranges)

    [[nodiscard]] bool clean() const noexcept { return problems.empty(); }
};

struct verify_options : onnx::open_options {                 // how the model is opened
    unsigned threads = 0;                                    // hashing workers; 0: the number of cores
    std::size_t buffer_size = 1U << 20;                      // bytes per worker buffer
    const std::atomic<bool>* cancel = nullptr;               // set to stop; the run fails with `interrupted`
    std::function<void(const progress_event&)> on_progress;  // bytes hashed
};

/// Verifies `model`. Errors: `io` when the model file cannot be opened or read,
/// `interrupted`; every problem in its contents is in the report instead.
[[nodiscard]] result<verify_report> verify(const std::filesystem::path& model, const verify_options& options);

}  // namespace onnxstream::ops
