// The Caffe writers: prototxt text (escaping untrusted names) and the .caffemodel plan
// (copy slices for weights that live in a source file, emitted bytes for the rest),
// decoded back with the project's own tokenizer.
#include <onnxstream/caffe/caffemodel_writer.hpp>
#include <onnxstream/caffe/fields.hpp>
#include <onnxstream/caffe/layer_mapping.hpp>
#include <onnxstream/caffe/prototxt_writer.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cstring>

using namespace onnxstream;

namespace {

caffe::net sample_net() {
    caffe::net n;
    n.name = "sample";
    caffe::layer input;
    input.name = "data";
    input.type = "Input";
    input.tops = {"data"};
    input.params.push_back(caffe::param::message(
        "input_param", {caffe::param::message("shape", {caffe::param::integer("dim", 1), caffe::param::integer("dim", 2)})}));
    n.layers.push_back(input);
    caffe::layer ip;
    ip.name = "fc\"1\n";
    ip.type = "InnerProduct";
    ip.bottoms = {"data"};
    ip.tops = {"out"};
    ip.params.push_back(
        caffe::param::message("inner_product_param", {caffe::param::integer("num_output", 3), caffe::param::real("alpha", 0.1)}));
    caffe::blob weight;
    weight.shape = {3, 2};
    weight.data.source = 1;  // six floats at offset 100 of source 1
    weight.data.offset = 100;
    caffe::blob bias;
    bias.shape = {3};
    bias.data.values = {1.0F, -2.0F, 0.5F};
    ip.blobs = {weight, bias};
    n.layers.push_back(ip);
    return n;
}

}  // namespace

TEST_CASE("prototxt: layers, nested parameters, escaped names, round-tripping floats") {
    const auto text = caffe::write_prototxt(sample_net());
    CHECK(text.find("name: \"sample\"\n") == 0);
    CHECK(text.find("  input_param {\n    shape {\n      dim: 1\n      dim: 2\n    }\n  }\n") != std::string::npos);
    CHECK(text.find("  name: \"fc\\\"1\\012\"\n") != std::string::npos);
    CHECK(text.find("alpha: 0.1\n") != std::string::npos);
    CHECK(text.find('\n' + std::string("  bottom: \"data\"")) != std::string::npos);
}

TEST_CASE("caffemodel: weights in a source file are one copy; layers without blobs are left out") {
    const auto planned = caffe::plan_caffemodel(sample_net());
    REQUIRE(planned);
    const auto& p = *planned;
    CHECK(p.copied_bytes() == 24);
    std::size_t copies = 0;
    for (const auto& op : p.operations())
        if (op.kind == plan::operation_kind::copy) {
            ++copies;
            CHECK(op.source == 1);
            CHECK(op.input_offset == 100);
            CHECK(op.length == 24);
        }
    CHECK(copies == 1);

    // Execute with a fake source and decode the NetParameter.
    std::vector<std::byte> source(200);
    for (std::size_t i = 0; i < 6; ++i) {
        const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(i) + 0.25F);
        std::memcpy(source.data() + 100 + 4 * i, &bits, 4);
    }
    std::vector<std::byte> out(p.size());
    for (const auto& op : p.operations()) {
        const auto bytes = op.kind == plan::operation_kind::emit
                               ? p.emitted(op)
                               : std::span<const std::byte>(source).subspan(op.input_offset, op.length);
        std::memcpy(out.data() + op.output_offset, bytes.data(), bytes.size());
    }
    std::vector<proto::field_token> net;
    REQUIRE(proto::tokenize(out, 0, out.size(), net));
    REQUIRE(net.size() == 2);  // name + the one layer with blobs
    CHECK(net[1].number == caffe::number(caffe::net_field::layer));
    std::vector<proto::field_token> layer;
    REQUIRE(proto::tokenize(out, net[1].payload_offset, net[1].end_offset(), layer));
    std::vector<proto::field_token> blobs;
    for (const auto& f : layer)
        if (f.number == caffe::number(caffe::layer_field::blobs)) blobs.push_back(f);
    REQUIRE(blobs.size() == 2);
    std::vector<proto::field_token> blob;
    REQUIRE(proto::tokenize(out, blobs[1].payload_offset, blobs[1].end_offset(), blob));
    const proto::field_token* data = nullptr;
    for (const auto& f : blob)
        if (f.number == caffe::number(caffe::blob_field::data)) data = &f;
    REQUIRE(data != nullptr);
    REQUIRE(data->payload_length == 12);
    float second = 0;
    std::memcpy(&second, out.data() + data->payload_offset + 4, 4);
    CHECK(second == -2.0F);
}

TEST_CASE("ONNX pooling sizes: floor, ceil, and a ceil window starting in the padding dropped") {
    CHECK(caffe::onnx_pool_size(112, 3, 2, 1, 1, 1, false) == 56);
    CHECK(caffe::onnx_pool_size(112, 3, 2, 1, 1, 1, true) == 57);  // what Caffe's ceil gives too
    CHECK(caffe::onnx_pool_size(9, 3, 2, 0, 0, 1, true) == 4);
    CHECK(caffe::onnx_pool_size(6, 2, 2, 0, 1, 1, true) == 3);
    CHECK(caffe::onnx_pool_size(5, 3, 1, 0, 0, 2, false) == 1);
}
