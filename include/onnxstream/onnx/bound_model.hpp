// A model bound to its external data: how every operation opens a model. Opening maps
// and reads the .onnx (model_file), finds every data file its tensors name (data_resolver)
// and binds each external tensor to a checked slice of one (external_data).
//
// The writer's source table is the same for every operation: source 0 is the .onnx file,
// source 1 + f is data file f (`source_of_file`). An operation that adds sources (a spill
// file of computed tensors) appends them after these.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace onnxstream::onnx {

/// A writer source: an index into bound_model::sources() (and the writer's source table,
/// where plans and edits take it as `.value`).
using source_id = index<struct source_tag>;

/// Where a tensor's stored bytes are: `length` bytes at `offset` of writer source `source`.
struct stored_slice {
    source_id source{0};
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

struct bound_model {
    model_file model;
    external_data data;

    /// Opens `path` (model_file::open, whose errors it returns) and binds its external
    /// data as `options` say: the one way every operation opens a model. Problems with the
    /// data are collected in `data`, not returned (inspect and verify report them, rewrites
    /// call `usable` first), except under `options.strict` a data file that only a guess
    /// would have found: that is the error (`missing_data`, its hint naming the guess).
    [[nodiscard]] static result<bound_model> open(const std::filesystem::path& path, const open_options& options,
                                                  const tree_options& tree = {}, tensor_reading reading = tensor_reading::kept);

    /// The .onnx file's source, then data file f's.
    static constexpr source_id model_source{0};
    [[nodiscard]] static constexpr source_id source_of_file(data_file_id file) noexcept { return source_id{1 + file.value}; }
    /// The first source an operation may add after these (a spill file of computed tensors).
    [[nodiscard]] source_id first_added_source() const noexcept { return source_id::at(1 + data.files.size()); }

    /// The first problem that must stop a rewrite (size mismatches only when not
    /// allowed), its hint saying how many more there are.
    [[nodiscard]] result<void> usable(bool allow_size_mismatch) const;

    /// What every command must say about the data even when it goes on: the problems
    /// (those `usable` tolerated) and the files found only by a guess.
    [[nodiscard]] std::vector<error> warnings() const;

    /// The writer's sources: the .onnx, then every data file (null when not open).
    [[nodiscard]] std::vector<const io::source_file*> sources() const;
    /// The identities of every input file open, for check_output.
    [[nodiscard]] std::vector<io::file_identity> inputs() const;

    /// The binding (into data.tensors) of the tensor at `site`, or none when it is not external.
    [[nodiscard]] binding_id binding_of(site_id site) const noexcept {
        return binding_of_.empty() ? binding_id{none} : binding_of_[site];
    }
    /// The stored bytes of a raw or external tensor, as a source slice (an external
    /// tensor's as bound, whether usable or not); empty for typed, string and empty tensors.
    [[nodiscard]] std::optional<stored_slice> stored_bytes(site_id site) const;
    /// The same for a caller that holds the tensor at `site` already (read on demand, a
    /// second read is spared); its field indices are those of the handle's tree.
    [[nodiscard]] std::optional<stored_slice> stored_bytes(site_id site, const tensor_handle& tensor) const;

    /// model.file and every data file are as they were opened (io::source_file::check_unchanged).
    [[nodiscard]] result<void> check_unchanged() const;

private:
    indexed_vector<site_id, binding_id> binding_of_;  // empty when no tensor is external (4 bytes a site spared)
};

}  // namespace onnxstream::onnx
