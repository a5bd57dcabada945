// What a path given where a model is expected holds, told before anything is parsed or
// written: a user who passes a model's weights file (`inspect x.onnx.data`, `merge
// x.onnx x.onnx.data`) is told which model it belongs to, not that byte 3 has protobuf
// wire type 7; and a front end can tell a second model from an output name given where
// only models go (`merge in.onnx out.onnx`, the cp habit).
//
// A model starts with a field of ModelProto (onnx/fields.hpp: ir_version, usually) of the
// field's wire type; weights start with whatever their first value's bytes are.
#pragma once

#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace onnxstream::onnx {

/// Whether `start` (the first bytes of a file, 16 are plenty) begins with a ModelProto
/// field of its wire type. An empty file does not.
[[nodiscard]] bool starts_like_model(std::span<const std::byte> start) noexcept;

/// The check every model open makes: refuses a file named as data (data_resolver.hpp,
/// looks_like_data) whose `start` is not a model's. Errors: `not_onnx`, naming the model
/// beside it that the file belongs to ("x.onnx.data is the weights file of x.onnx") when
/// there is one.
[[nodiscard]] result<void> check_not_data_file(const std::filesystem::path& path, std::span<const std::byte> start);

enum class model_input : std::uint8_t {
    model,    // starts like a model (whether the rest parses is open's to say)
    missing,  // no such file
    other,    // exists, but is not a model (a folder, text, empty, ...)
};

/// What `path` is, from its first bytes. Errors: those of check_not_data_file; `io` when
/// it exists but cannot be read.
[[nodiscard]] result<model_input> probe_model_input(const std::filesystem::path& path);

}  // namespace onnxstream::onnx
