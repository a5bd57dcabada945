// Finding every tensor of a model, wherever it lives: graph initializers and sparse
// initializers, node attributes (t, tensors, sparse_tensor(s): Constant nodes), the
// bodies of If / Loop / Scan at any depth, FunctionProtos, and both graphs of every
// TrainingInfoProto. The message tree already descends into exactly these places, so a
// tensor site is any tensor message plus what encloses it.
#pragma once

#include <onnxstream/index.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/onnx/message_tree.hpp>

#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace onnxstream::onnx {

enum class tensor_role : std::uint8_t {
    initializer,         // GraphProto.initializer
    sparse_initializer,  // values or indices of GraphProto.sparse_initializer
    attribute,           // AttributeProto.t / tensors
    sparse_attribute,    // values or indices of AttributeProto.sparse_tensor(s)
};

[[nodiscard]] const char* to_string(tensor_role role) noexcept;

/// A tensor site is where one tensor's bytes are: the TensorProto that holds them (in
/// raw_data, typed fields or external_data) and what encloses it. "Site" is the library's
/// one name for that place: a graph tensor, a constant, an external binding and a write
/// plan all say which tensor they mean by its site_id, which indexes model_file::sites
/// and model_file::tensors (parallel arrays).
using site_id = index<struct site_tag>;

// 8 bytes (a model may have millions of tensors): what encloses it is found from the
// tree's parents when asked (graph_of, node_of).
struct tensor_site {
    /// data_type when open did not record it (model_file::data_type reads the body).
    static constexpr std::uint8_t unrecorded_type = 0xFF;
    std::uint32_t message = no_index;  // the TensorProto
    tensor_role role = tensor_role::initializer;
    // Its data_type as model_file::open read it, when below unrecorded_type (every type
    // onnx.proto names): the commands ask it of each tensor several times, and a body read
    // again after its page was released faults the page back in (in the padding: free).
    std::uint8_t data_type = unrecorded_type;
};
static_assert(sizeof(tensor_site) == 8);

/// The GraphProto or FunctionProto nearest around the tensor, or no_index.
[[nodiscard]] std::uint32_t graph_of(const message_tree& tree, const tensor_site& site) noexcept;
/// For an attribute tensor (plain or sparse): the NodeProto whose attribute holds it;
/// no_index for any other tensor and for a FunctionProto's attribute_proto.
[[nodiscard]] std::uint32_t node_of(const message_tree& tree, const tensor_site& site) noexcept;

/// Every tensor message of the model, in file order.
[[nodiscard]] indexed_vector<site_id, tensor_site> find_tensors(const message_tree& tree);

/// Every NodeProto of the model (all graphs, subgraphs, functions), in file order.
[[nodiscard]] std::vector<std::uint32_t> find_nodes(const message_tree& tree);

/// Names of values that a runtime reads while loading the model, whatever their type:
/// the inputs ONNX shape inference parses as constants (the shape of Reshape, Expand,
/// Tile, ConstantOfShape; Slice bounds; Resize/Upsample roi, scales and sizes; Range
/// bounds; axes of Squeeze/Unsqueeze/Reduce*; Pad's pads and value; window sizes...). ONNX
/// Runtime fails on them as external data, so they stay embedded. The table is in
/// tensor_walker.cpp. The views point into the tree's bytes. Given the tree's mapping, it
/// releases the pages behind its walk over the nodes (io::release_behind): every node's
/// op type is read, all over the file.
[[nodiscard]] std::unordered_set<std::string_view> shape_like_values(const message_tree& tree,
                                                                     const io::mapped_file* mapping = nullptr);

/// The name a tensor is known by in the graph: its own name, or for a Constant node's
/// attribute tensor, the node's first output.
[[nodiscard]] std::string_view value_name(const message_tree& tree, const tensor_site& site);

}  // namespace onnxstream::onnx
