#include <onnxstream/caffe/caffemodel_writer.hpp>

#include <onnxstream/caffe/fields.hpp>
#include <onnxstream/proto/encoded_message.hpp>
#include <onnxstream/proto/varint.hpp>

#include <bit>
#include <cstring>

namespace onnxstream::caffe {
namespace {

using proto::encoded_message;

constexpr std::uint64_t protobuf_limit = (1ULL << 31) - 1;

encoded_message encode_blob(const blob& b) {
    encoded_message shape;
    {
        std::vector<std::byte> dims;
        for (const auto d : b.shape) {
            const auto v = proto::encode_varint(static_cast<std::uint64_t>(d));
            dims.insert(dims.end(), v.view().begin(), v.view().end());
        }
        shape.bytes_field(number(blob_shape_field::dim), dims);
    }
    encoded_message out;
    out.message_field(number(blob_field::shape), shape);
    if (b.data.source == blob_data::inline_values) {
        std::vector<std::byte> bytes(b.data.values.size() * 4);
        for (std::size_t i = 0; i < b.data.values.size(); ++i) {
            auto bits = std::bit_cast<std::uint32_t>(b.data.values[i]);
            for (std::size_t k = 0; k < 4; ++k) bytes[i * 4 + k] = static_cast<std::byte>((bits >> (8 * k)) & 0xffU);
        }
        out.bytes_field(number(blob_field::data), bytes);
    } else {
        out.slice_field(number(blob_field::data), b.data.source, b.data.offset, b.bytes());
    }
    return out;
}

}  // namespace

result<plan::write_plan> plan_caffemodel(const net& network) {
    encoded_message root;
    root.text_field(number(net_field::name), network.name);
    for (const auto& l : network.layers) {
        if (l.blobs.empty()) continue;
        encoded_message m;
        m.text_field(number(layer_field::name), l.name);
        m.text_field(number(layer_field::type), l.type);
        for (const auto& b : l.bottoms) m.text_field(number(layer_field::bottom), b);
        for (const auto& t : l.tops) m.text_field(number(layer_field::top), t);
        for (const auto& b : l.blobs) m.message_field(number(layer_field::blobs), encode_blob(b));
        root.message_field(number(net_field::layer), m);
        if (root.size() > protobuf_limit) break;
    }
    if (root.size() > protobuf_limit)
        return failure(error_code::too_large, "the .caffemodel would pass protobuf's 2 GB limit",
                       "Caffe and OpenCV read a .caffemodel as one protobuf message; this model is too large for Caffe");
    plan::write_plan plan;
    for (const auto& p : root.pieces()) {
        if (p.source == encoded_message::pool_source) plan.emit(root.pool().subspan(p.offset, p.length));
        else plan.copy(p.source, p.offset, p.length);
    }
    return plan;
}

}  // namespace onnxstream::caffe
