// What every rewriting operation holds: the model's path, its options, the report it fills
// and the rewrite session (ops/rewrite_session.hpp) over the bound model, with names for
// the bound model and its model file. Each operation's class derives from it. Private to
// src/ops.
#pragma once

#include "kept_data.hpp"

#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/ops/rewrite_session.hpp>

#include <filesystem>
#include <span>

namespace onnxstream::ops::detail {

template <class Options, class Report>
class bound_operation {
public:
    bound_operation(const std::filesystem::path& model_path, const Options& options)
        : model_path_(model_path), options_(options) {}

protected:
    /// Opens the session (rewrite_session::open); its warnings go to the report's.
    [[nodiscard]] result<void> open_session(const onnx::tree_options& tree = {},
                                            onnx::tensor_reading reading = onnx::tensor_reading::kept, bool check_usable = true) {
        ONNXSTREAM_ASSIGN(session_, rewrite_session::open(model_path_, options_, report_.warnings, tree, reading, check_usable));
        return {};
    }

    /// The end of a rewrite of the model's tree, once planned: the model written to the
    /// report's output after the files written so far, then every output committed as one
    /// (all or none). Fills the report's output_size and writer.
    [[nodiscard]] result<void> finish_rewrite(planned_model& planned, const onnx::tree_edits& edits) {
        report_.output_size = planned.size();
        ONNXSTREAM_TRY(session_.write(report_.output, planned, edits));
        report_.writer = session_.writer();
        return session_.commit();
    }
    /// The same with a new data file first (optimize, extract: kept_data.hpp), when
    /// `entries` has any: the data file and the model, both or neither.
    [[nodiscard]] result<void> finish_rewrite(planned_model& planned, const onnx::tree_edits& edits,
                                              const std::filesystem::path& data_path, std::span<const data_entry> entries) {
        if (!entries.empty()) {
            ONNXSTREAM_ASSIGN(auto written, write_data_file(session_, data_path, entries));
            report_.data_files.push_back(std::move(written));
        }
        return finish_rewrite(planned, edits);
    }

    const std::filesystem::path& model_path_;
    const Options& options_;
    Report report_;
    rewrite_session session_;
    onnx::bound_model& bound_ = session_.bound();
    const onnx::model_file& model_ = bound_.model;
};

}  // namespace onnxstream::ops::detail
