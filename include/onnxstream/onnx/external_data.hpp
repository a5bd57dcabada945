// The external data of one model: every data file its tensors reference, found (see
// data_resolver.hpp), opened read-only and checked, and for each external tensor the
// slice of the file that holds its bytes. Problems are collected, not thrown: inspect
// and verify report them all, merge refuses to start while any remains.
#pragma once

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::onnx {

/// A data file of a model: an index into external_data::files.
using data_file_id = index<struct data_file_tag>;

struct data_file {
    std::string location;  // as written in the model
    std::optional<resolved_location> found;
    std::optional<io::source_file> file;  // open when found and readable
    std::uint64_t size = 0;
    std::uint64_t tensor_count = 0;
    std::uint64_t bytes_needed = 0;      // the largest offset + length any tensor needs (known when missing too)
    std::uint64_t bytes_referenced = 0;  // sum of the tensors' lengths
};

/// An external tensor bound to its data file: an index into external_data::tensors.
using binding_id = index<struct binding_tag>;

struct external_tensor {
    site_id site = none;       // the tensor (model_file::sites and ::tensors)
    data_file_id file = none;  // the file that holds its bytes
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    /// Bit i: the field at position i of the tensor message holds or locates its value.
    std::uint32_t value_positions = 0;
    /// The bytes those fields take in the message (tags and length prefixes included).
    std::uint16_t value_bytes = 0;
    bool usable : 1 = false;  // found, in bounds (a size mismatch alone keeps it usable)
    /// Whether value_positions and value_bytes hold the tensor message's value fields
    /// (holds_tensor_value), as the read that bound it found them: not when one lies at
    /// position 32 or beyond, nor when they take 64 KiB or more. inline_external then
    /// drops them without tokenizing the body again, and the planner sizes the merged
    /// message from them (tree_edits::inlined_value::dropped_bytes).
    bool positions_known : 1 = false;
    /// Whether its external_data entries hold a checksum (read again to check it).
    bool has_checksum : 1 = false;
    /// Usable, and its length is what its dims and type need (or they do not say): no
    /// size_mismatch problem was recorded for it. A command that needs nothing else of
    /// the tensor (its type aside, which open records) need not read its body again.
    bool length_fits : 1 = false;
    /// positions_known, and those fields are the message's last: what comes before them is
    /// the rest of the body, so merge copies it whole without reading it again.
    bool values_last : 1 = false;
};
// Held once per external tensor (a million tiny ones): the positions and their bytes live
// in what was padding.
static_assert(sizeof(external_tensor) <= 32);

struct data_problem {
    site_id site = none;       // the tensor it is about, or none
    data_file_id file = none;  // the file it is about, or none
    error what;
};

/// The first half of external_data::bind, tensor by tensor: every external tensor's
/// binding (unchecked) and what each file it names needs, gathered from the read that
/// model_file::open makes of it (a body is then tokenized once for both, not once more
/// for bind: a second pass over a million small tensors' bodies was a tenth of merge).
class external_gathering {
public:
    external_gathering();
    external_gathering(const external_gathering&) = delete;
    external_gathering& operator=(const external_gathering&) = delete;
    external_gathering(external_gathering&&) noexcept;
    external_gathering& operator=(external_gathering&&) noexcept;
    ~external_gathering();

    /// Room for `tensors` external tensors (the bindings do not grow by doubling).
    void reserve(std::size_t tensors);
    /// External tensor `site`, as read, in site order, with its message's fields in file
    /// order (tensor_handle::fields), whose value fields' positions its binding keeps.
    void add(site_id site, const tensor_info& tensor, std::span<const field_entry> fields);

private:
    friend struct external_data;
    struct state;
    std::unique_ptr<state> state_;
};

struct external_data {
    indexed_vector<data_file_id, data_file> files;
    indexed_vector<binding_id, external_tensor> tensors;
    std::vector<data_problem> problems;  // size mismatches included (code size_mismatch)
    // One per file found only by a guess (data_resolver.hpp): not a problem for onnxstream,
    // which checked it, but a runtime will not find it. Every command must say so.
    std::vector<data_problem> guesses;

    /// Resolves, opens and bounds-checks every external reference of `model`. What each
    /// location's tensors need (bytes, checksums) is gathered first, so that a guessed
    /// file is checked against it before it is taken. Each external tensor is read once
    /// (again only to word a problem about it, or to weigh a tensor that runs to the end of
    /// its file against its dims).
    [[nodiscard]] static external_data bind(const model_file& model, data_resolver& resolver);
    /// The same with the tensors gathered already, from every external tensor of `model`
    /// in site order (model_file::open's on_external).
    [[nodiscard]] static external_data bind(const model_file& model, data_resolver& resolver, external_gathering&& gathered);

    /// The first problem that must stop a rewrite (size mismatches only when not allowed).
    [[nodiscard]] const data_problem* blocking_problem(bool allow_size_mismatch) const;
    /// io::source_file::check_unchanged for every open data file: what a command read from
    /// them is only right if none changed meanwhile. Call it before reporting a result.
    [[nodiscard]] result<void> check_unchanged() const;
};

/// The size of `model` with the bytes of every usable tensor of `data` embedded as
/// raw_data: what merge writes (plan::planned_size of inline_external's edits), worked out
/// from those tensors' bodies and their ancestors alone, with no edits and nothing per
/// message of the model; tensors read on demand need not store their bodies.
[[nodiscard]] std::uint64_t inlined_size(const model_file& model, const external_data& data);

/// The SHA-1 that an external tensor's `checksum` key promises: empty when it has none
/// (or is not external: the key means nothing then); an error
/// (`checksum_mismatch`, naming the tensor) when the key is not 40 hexadecimal digits, so
/// that nothing can be checked against it.
[[nodiscard]] result<std::optional<io::sha1_digest>> expected_sha1(const tensor_info& tensor);
/// The same for a rewrite that goes on without checking: the error becomes a warning.
[[nodiscard]] std::optional<io::sha1_digest> expected_sha1(const tensor_info& tensor, std::vector<error>& warnings);

/// The error for bytes whose SHA-1 is not the one their `checksum` key promises. `where`
/// (may be empty) says which bytes, e.g. "(4096 bytes at offset 0 of w.data)"; `fatal`
/// picks the hint of an error (--strict, verify) over that of a warning.
[[nodiscard]] error checksum_mismatch(std::string_view tensor_name, const io::sha1_digest& expected, const io::sha1_digest& found,
                                      bool fatal, std::string_view where = {});

/// One `external_data` entry (a StringStringEntryProto: key, value), encoded, for a
/// rewrite that points a tensor at a data file ("location", "offset", "length", "checksum").
[[nodiscard]] std::vector<std::byte> encode_string_entry(std::string_view key, std::string_view value);

}  // namespace onnxstream::onnx
