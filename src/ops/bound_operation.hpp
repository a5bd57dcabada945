// What every operation on one bound model holds: the model's path, its options, the
// report it fills and the bound model (onnx/bound_model.hpp) with a name for its model
// file. Each operation's class derives from it. Private to src/ops.
#pragma once

#include <onnxstream/onnx/bound_model.hpp>

#include <filesystem>

namespace onnxstream::ops::detail {

template <class Options, class Report>
class bound_operation {
public:
    bound_operation(const std::filesystem::path& model_path, const Options& options)
        : model_path_(model_path), options_(options) {}

protected:
    const std::filesystem::path& model_path_;
    const Options& options_;
    Report report_;
    onnx::bound_model bound_;
    const onnx::model_file& model_ = bound_.model;
};

}  // namespace onnxstream::ops::detail
