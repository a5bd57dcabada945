// Regression tests for issue 9's items on model semantics and limits: singular fields
// written twice (item 6), dims whose verdict depended on the order (item 16), and inputs
// that change while a command reads them (issue 9, "Also"). Each test names its catalogue
// entry (tests/data/corrupt/manifest.json) where it has one; the end-to-end side is
// tests/e2e/test_model_semantics.py.
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/ops/diff.hpp>
#include <onnxstream/ops/verify.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::proto_builder;
using test_support::temp_folder;
namespace fs = std::filesystem;

namespace {

std::string parse_error(std::vector<std::byte> bytes) {
    const auto tree = message_tree::parse(bytes);
    return tree ? std::string("(parsed)") : tree.error().message;
}

proto_builder opset13() {
    proto_builder opset;
    opset.string_field(1, "").varint_field(2, 13);
    return opset;
}

proto_builder model_with(const proto_builder& graph) {
    proto_builder m;
    m.varint_field(1, 8).message_field(7, graph).message_field(8, opset13());
    return m;
}

}  // namespace

TEST_CASE("a singular message field written twice is refused, not half-read (catalogue: duplicate_graph)") {
    // protobuf merges the two `graph` fields into one graph with both nodes; reading only
    // the first made analyze call the second part's producer dead and optimize drop it.
    proto_builder first;
    first.message_field(1, small_models::node("Relu", {"X"}, {"t"})).string_field(2, "g");
    proto_builder second;
    second.message_field(1, small_models::node("Neg", {"t"}, {"Y"}));
    proto_builder m;
    m.varint_field(1, 8).message_field(7, first).message_field(8, opset13()).message_field(7, second);
    const auto message = parse_error(m.take());
    CHECK(message.find("ModelProto field 'graph' appears more than once") != std::string::npos);
    CHECK(message.find("merge") != std::string::npos);
}

TEST_CASE("every singular field of every message kind is checked in the one place (catalogue: duplicate_*)") {
    using namespace small_models;
    SUBCASE("AttributeProto.t: a Constant's value split in two") {
        proto_builder t1;
        t1.varint_field(1, 2).varint_field(2, 1);
        proto_builder t2;
        t2.bytes_field(9, ramp(2));
        proto_builder attribute;
        attribute.string_field(1, "value").message_field(5, t1).message_field(5, t2).varint_field(20, 4);
        proto_builder graph;
        graph.message_field(1, node("Constant", {}, {"C"}, {attribute})).string_field(2, "g");
        CHECK(parse_error(model_with(graph).take()).find("AttributeProto field 't' appears more than once") != std::string::npos);
    }
    SUBCASE("AttributeProto.g: an If branch split in two") {
        proto_builder body1;
        body1.message_field(1, node("Identity", {"X"}, {"a"}));
        proto_builder body2;
        body2.message_field(1, node("Identity", {"a"}, {"b"}));
        proto_builder attribute;
        attribute.string_field(1, "then_branch").message_field(6, body1).message_field(6, body2).varint_field(20, 5);
        proto_builder graph;
        graph.message_field(1, node("If", {"cond"}, {"Y"}, {attribute}));
        CHECK(parse_error(model_with(graph).take()).find("AttributeProto field 'g' appears more than once") != std::string::npos);
    }
    SUBCASE("NodeProto.op_type: protobuf keeps the last, onnxstream read the first") {
        proto_builder n;
        n.string_field(1, "X").string_field(2, "Y").string_field(4, "Relu").string_field(4, "Identity");
        proto_builder graph;
        graph.message_field(1, n);
        CHECK(parse_error(model_with(graph).take())
                  .find("NodeProto field 'op_type' appears more than once; protobuf would keep only the last one") !=
              std::string::npos);
    }
    SUBCASE("TensorProto.segment, a message onnxstream does not descend into") {
        proto_builder segment;
        segment.varint_field(1, 0).varint_field(2, 1);
        proto_builder t;
        t.varint_field(1, 1).varint_field(2, 1).message_field(3, segment).message_field(3, segment).string_field(8, "w");
        proto_builder graph;
        graph.message_field(5, t);
        CHECK(parse_error(model_with(graph).take()).find("TensorProto field 'segment' appears more than once") !=
              std::string::npos);
    }
    SUBCASE("ValueInfoProto.type") {
        proto_builder type;
        type.message_field(1, proto_builder{}.varint_field(1, 1));
        proto_builder input;
        input.string_field(1, "X").message_field(2, type).message_field(2, type);
        proto_builder graph;
        graph.message_field(11, input);
        CHECK(parse_error(model_with(graph).take()).find("ValueInfoProto field 'type' appears more than once") !=
              std::string::npos);
    }
    SUBCASE("TrainingInfoProto.algorithm") {
        proto_builder algorithm;
        algorithm.string_field(2, "step");
        proto_builder training;
        training.message_field(2, algorithm).message_field(2, algorithm);
        proto_builder m;
        m.varint_field(1, 8).message_field(7, proto_builder{}.string_field(2, "g")).message_field(20, training);
        CHECK(parse_error(m.take()).find("TrainingInfoProto field 'algorithm' appears more than once") != std::string::npos);
    }
    SUBCASE("ModelProto.ir_version") {
        proto_builder m;
        m.varint_field(1, 8).varint_field(1, 3).message_field(7, proto_builder{}.string_field(2, "g"));
        CHECK(parse_error(m.take()).find("ModelProto field 'ir_version' appears more than once") != std::string::npos);
    }
    SUBCASE("repeated fields and a copy of another wire type are not duplicates") {
        proto_builder n;
        n.string_field(1, "X").string_field(1, "Z").string_field(2, "Y").string_field(4, "Add");
        proto_builder graph;
        graph.message_field(1, n).message_field(1, n).string_field(2, "g");
        CHECK(parse_error(model_with(graph).take()) == "(parsed)");
        proto_builder m;
        m.varint_field(1, 8).fixed32_field(1, 3).message_field(7, graph);  // an unknown field to protobuf
        CHECK(parse_error(m.take()) == "(parsed)");
    }
}

TEST_CASE("the dims verdict does not depend on where a zero stands (catalogue: dims_zero_then_overflow)") {
    // [2^40, 2^40, 0] was refused and [0, 2^62, 2^62] passed: now both are refused, as
    // numpy (python-onnx's to_array) refuses them, and a lone zero still means 0 bytes.
    auto read = [](std::vector<std::uint64_t> dims, std::vector<std::byte>& storage) {
        proto_builder t;
        for (const auto d : dims) t.varint_field(1, d);
        t.varint_field(2, 1).string_field(8, "w");
        proto_builder graph;
        graph.message_field(5, t);
        storage = model_with(graph).take();
        static message_tree tree;
        auto parsed = message_tree::parse(storage);
        REQUIRE(parsed);
        tree = std::move(parsed).value();
        return read_tensor(tree, 2);
    };
    std::vector<std::byte> storage;
    for (const auto& dims :
         {std::vector<std::uint64_t>{1ULL << 40, 1ULL << 40, 0}, {0, 1ULL << 62, 1ULL << 62}, {1ULL << 62, 0, 1ULL << 62}}) {
        const auto info = read(dims, storage);
        REQUIRE_FALSE(info);
        CHECK(info.error().code == error_code::invalid_tensor);
        CHECK(info.error().message.find("overflows 64 bits") != std::string::npos);
    }
    SUBCASE("the byte size overflows with a zero first, too") {
        const auto info = read({0, 1ULL << 62}, storage);
        REQUIRE_FALSE(info);
        CHECK(info.error().message.find("its size in bytes overflows 64 bits") != std::string::npos);
    }
    SUBCASE("a zero among dims that fit is an empty tensor") {
        const auto info = read({0, 1ULL << 20, 3}, storage);
        REQUIRE(info);
        CHECK(info->element_count == 0);
        CHECK(*info->expected_bytes == 0);
    }
}

TEST_CASE("a data file that changes while it is read is caught by external_data and by each op reading it") {
    using namespace small_models;
    temp_folder dir;
    const auto values = ramp(64);
    const auto data = write_bytes(dir.path() / "w.data", values);
    const auto model = write_bytes(dir.path() / "m.onnx",
                                   small_models::model({small_models::external_tensor("w", {64}, "w.data", "0", "256")}));
    auto grow = [&data] {
        std::ofstream out(data, std::ios::binary | std::ios::app);
        out << "appended while the command ran";
    };

    SUBCASE("external_data::check_unchanged") {
        auto opened = model_file::open(model);
        REQUIRE(opened);
        data_resolver resolver(model, {});
        const auto bound = external_data::bind(*opened, resolver);
        CHECK(bound.check_unchanged());
        grow();
        const auto changed = bound.check_unchanged();
        REQUIRE_FALSE(changed);
        CHECK(changed.error().message.find("changed") != std::string::npos);
    }
    SUBCASE("verify") {
        ops::verify_options options;
        options.threads = 1;
        options.buffer_size = 64;
        options.on_progress = [&grow, done = false](const ops::progress_event&) mutable {
            if (!std::exchange(done, true)) grow();
        };
        const auto copy = write_bytes(dir.path() / "c.onnx",
                                      small_models::model({small_models::external_tensor(
                                          "w", {64}, "w.data", "0", "256", "0000000000000000000000000000000000000000")}));
        const auto report = ops::verify(copy, options);
        REQUIRE_FALSE(report);
        CHECK(report.error().message.find("changed") != std::string::npos);
    }
    SUBCASE("diff") {
        const auto other = write_bytes(dir.path() / "b/m.onnx", small_models::model({raw_tensor("w", {64}, values)}));
        ops::diff_options options;
        options.threads = 1;
        options.buffer_size = 64;
        options.on_progress = [&grow, done = false](const ops::progress_event&) mutable {
            if (!std::exchange(done, true)) grow();
        };
        const auto report = ops::diff(model, other, options);
        REQUIRE_FALSE(report);
        CHECK(report.error().message.find("changed") != std::string::npos);
    }
}

TEST_CASE("the singular-field check is one pass, whatever a hostile message holds (catalogue: duplicate_*)") {
    // 300,000 repeated fields between a name and its varint twins (an unknown field to
    // protobuf, then a real duplicate of that one): one pass, then the refusal.
    proto_builder graph;
    graph.string_field(2, "g").varint_field(2, 1);
    for (int i = 0; i < 300000; ++i) graph.string_field(1000, "x");
    graph.varint_field(2, 1);
    const auto start = std::chrono::steady_clock::now();
    CHECK(parse_error(model_with(graph).take()).find("GraphProto field 'name' appears more than once") != std::string::npos);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 5.0);
}
