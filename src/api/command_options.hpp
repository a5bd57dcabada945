// What the command table (commands.cpp) and the reading of values into options
// (command_options.cpp) share: the outputs a command writes by default. Private to src/api.
#pragma once

#include <onnxstream/api/parameters.hpp>
#include <onnxstream/result.hpp>

#include <filesystem>

namespace onnxstream::api::detail {

/// The output given, or `fallback` (the command's default beside the model).
[[nodiscard]] result<std::filesystem::path> output_or(const parameter_reader& in, const std::filesystem::path& fallback);
/// convert's model: <stem>.fp16.onnx or <stem>.bf16.onnx unless given.
[[nodiscard]] result<std::filesystem::path> convert_output(const parameter_reader& in);
/// quantize's model: <stem>.int8.onnx (.int4, .uint4) unless given.
[[nodiscard]] result<std::filesystem::path> quantize_output(const parameter_reader& in);
/// infer-shapes' model: <stem>.shapes.onnx unless given.
[[nodiscard]] result<std::filesystem::path> infer_shapes_output(const parameter_reader& in);
/// export --to caffe's PREFIX: the model's folder and stem unless given.
[[nodiscard]] result<std::filesystem::path> caffe_prefix(const parameter_reader& in);

}  // namespace onnxstream::api::detail
