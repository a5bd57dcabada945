// What every rewriting operation holds: the model's path, its options, the report it fills
// and the rewrite session (ops/rewrite_session.hpp) over the bound model, with names for
// the bound model and its model file. Each operation's class derives from it. Private to
// src/ops.
#pragma once

#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/ops/rewrite_session.hpp>

#include <filesystem>

namespace onnxstream::ops::detail {

template <class Options, class Report>
class bound_operation {
public:
    bound_operation(const std::filesystem::path& model_path, const Options& options)
        : model_path_(model_path), options_(options) {}

protected:
    /// Opens the session (rewrite_session::open); its warnings go to the report's.
    [[nodiscard]] result<void> open_session(const onnx::tree_options& tree = {},
                                            onnx::tensor_reading reading = onnx::tensor_reading::kept,
                                            bool check_usable = true) {
        ONNXSTREAM_ASSIGN(session_, rewrite_session::open(model_path_, options_, report_.warnings, tree, reading, check_usable));
        return {};
    }

    const std::filesystem::path& model_path_;
    const Options& options_;
    Report report_;
    rewrite_session session_;
    onnx::bound_model& bound_ = session_.bound();
    const onnx::model_file& model_ = bound_.model;
};

}  // namespace onnxstream::ops::detail
