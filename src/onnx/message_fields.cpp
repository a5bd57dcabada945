#include <onnxstream/onnx/message_fields.hpp>

#include <utility>

namespace onnxstream::onnx {

result<message_fields> message_fields::read(const message_tree& tree, std::uint32_t index) {
    message_fields out;
    if (tree.stores_fields(index)) {
        out.fields_ = tree.fields(index);
        return out;
    }
    ONNXSTREAM_ASSIGN(auto body, message_tree::body(tree, index));
    out.body_.emplace(std::move(body));
    // The body's arrays stay where they are when it moves (growable_array moves its block).
    out.fields_ = out.body_->fields(0);
    return out;
}

}  // namespace onnxstream::onnx
