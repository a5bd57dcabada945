// A model opened for rewriting: the mapped file, its message tree and every tensor in
// it, read and validated once. Move-only; the tree's views point into the mapping, which
// moves with it.
#pragma once

#include <onnxstream/io/source_file.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/result.hpp>

#include <filesystem>
#include <vector>

namespace onnxstream::onnx {

struct model_file {
    std::filesystem::path path;
    io::source_file file;
    message_tree tree;
    indexed_vector<site_id, tensor_site> sites;
    indexed_vector<site_id, tensor_info> tensors;  // parallel to sites

    /// Opens, maps, tokenizes and reads every tensor. Errors name the file.
    [[nodiscard]] static result<model_file> open(const std::filesystem::path& path, const tree_options& options = {});
};

}  // namespace onnxstream::onnx
