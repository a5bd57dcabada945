// onnxstream errors: values, not exceptions, not log lines.
//
// Every failure the library can meet is described by an `error`: a code that says which
// kind of failure it is (and so which exit status the CLI maps it to), a sentence saying
// what happened, a hint saying what to do about it, and where it applies, the byte offset
// in the input and the path of the field (`graph.initializer[12].raw_data`). Failures of
// the operating system keep their `std::error_code`.
//
// A hint names the change that helps, never a front end's control: where it would say
// "pass --force", it says "pass {0}" and carries `remedy::replace_output` as remedies[0].
// Each front end words a remedy its own way (the CLI as a flag, the page as a field or a
// button: report/hint_text.hpp), so the library knows nothing of flags.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

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

/// A change that gets past an error, named as what changes. A front end words each one
/// as its own control; the comments say how the command line does. Most are worded as a
/// noun that fits "with {0}" or "{0} refuses guesses"; those marked (clause) include their
/// verb, so that each front end can say it its own way ("pass --force", "tick 'force'").
enum class remedy : std::uint8_t {
    replace_output,        // (clause) replace the output that exists    pass --force
    choose_output,         // write the output somewhere else            -o
    give_data_file,        // say which file holds the external data     --data (argument: a path, or FILE)
    give_data_folder,      // say which folder holds it                  --data-dir (argument: the folder)
    give_data_location,    // (clause) either of the two above           pass the file with --data FILE, or ...
    refuse_guesses,        // be strict: mismatches fail, nothing guessed --strict
    accept_size_mismatch,  // take bytes that do not match the dims      --allow-size-mismatch
    choose_data_name,      // name the data file differently             --data-name
    repack_in_place,       // repack over the model's own files          -o MODEL --force (argument: MODEL)
    keep_external_data,    // repack instead of merging into one file    'onnxstream repack'
    embed_weights,         // merge the data into the model              'onnxstream merge'
    inspect_model,         // look at what the model needs               'onnxstream inspect'
    optimize_first,        // run the graph passes first                 'onnxstream optimize'
    give_input_shape,      // give an input's shape                      --input-shape (argument: NAME=DIMS)
    choose_dialect,        // export for another Caffe                   --dialect (argument: the dialect)
    fewer_threads,         // use fewer worker threads                   --threads
    leave_out_check,       // export without the OpenCV comparison       --check
    reuse_data,            // point at the input's data files            --reuse-data
    choose_dtype,          // convert to another type                    --dtype (argument: the type)
};

/// A short stable name for a remedy, as the page's JSON lists it (`"replace_output"`).
[[nodiscard]] const char* to_string(remedy change) noexcept;

/// One remedy and what it needs (a path, an input's name; empty when nothing).
struct remedy_step {
    remedy change = remedy::replace_output;
    std::string argument;
    friend bool operator==(const remedy_step&, const remedy_step&) = default;
};

struct error {
    static constexpr std::uint64_t no_offset = std::numeric_limits<std::uint64_t>::max();

    error() = default;
    error(error_code c, std::string what, std::string what_to_do = {})
        : code(c), message(std::move(what)), hint(std::move(what_to_do)) {}

    error_code code = error_code::io;
    std::string message;                // what happened, one sentence, no trailing period needed
    std::string hint;                   // what to do about it, with {0}, {1} ... for remedies[i]; may be empty
    std::vector<remedy_step> remedies;  // the changes the hint's slots name
    std::uint64_t offset = no_offset;   // byte offset in the input, when one applies
    std::string field_path;             // e.g. "graph.initializer[12].raw_data"; may be empty
    std::error_code os_error{};         // the OS failure behind it, if any

    /// The message followed by the offset and the field path where they are known.
    [[nodiscard]] std::string describe() const;
};

/// Builds an error from errno-style failures: "<what>: <strerror>".
[[nodiscard]] error os_failure(std::string what, std::error_code os, std::string hint = {});

/// `e` with a hint naming remedies: `hint` holds {0}, {1} ... for `steps` in order.
[[nodiscard]] error with_remedies(error e, std::string hint, std::vector<remedy_step> steps);

/// Text quoted in a hint that names remedies (a path, a name from a model): its braces
/// doubled, so that a model's "{0}" can never become a slot. Renderers turn "{{" back
/// into "{" (report::worded_hint).
[[nodiscard]] std::string quoted_in_hint(std::string_view text);

/// `e` with one more remedy, slot {N} at the end of its hint. A hint that named no
/// remedies before is quoted first: until then none of its braces were slots.
void add_remedy(error& e, std::string_view hint_tail, remedy_step step);

}  // namespace onnxstream
