#include <onnxstream/caffe/prototxt_writer.hpp>

namespace onnxstream::caffe {
namespace {

void write_param(std::string& out, const param& p, int depth) {
    const std::string indent(static_cast<std::size_t>(depth) * 2, ' ');
    if (p.children.empty()) {
        out += indent + p.key + ": " + p.value + "\n";
        return;
    }
    out += indent + p.key + " {\n";
    for (const auto& child : p.children) write_param(out, child, depth + 1);
    out += indent + "}\n";
}

}  // namespace

std::string write_prototxt(const net& network) {
    std::string out = "name: " + quoted(network.name) + "\n";
    for (const auto& l : network.layers) {
        out += "layer {\n  name: " + quoted(l.name) + "\n  type: " + quoted(l.type) + "\n";
        for (const auto& b : l.bottoms) out += "  bottom: " + quoted(b) + "\n";
        for (const auto& t : l.tops) out += "  top: " + quoted(t) + "\n";
        for (const auto& p : l.params) write_param(out, p, 1);
        out += "}\n";
    }
    return out;
}

}  // namespace onnxstream::caffe
