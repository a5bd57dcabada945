// graph_view_json on models whose facts are known from elsewhere: the python-onnx model of
// reference_model.hpp (its comment lists what python-onnx wrote), and a small graph whose
// shapes ONNX's own shape inference gives (Transpose of [N, 3, 5] by perm 2,0,1 is [5, N, 3]).
#include <onnxstream/ops/graph_view.hpp>

#include "reference_model.hpp"
#include "temp_folder.hpp"
#include "test_passes_builder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

// ValueInfoProto{name, TypeProto{tensor_type{elem_type, shape}}}: a dim of -1 is "N".
test_passes::proto_builder typed_value(std::string_view name, std::int32_t elem_type, const std::vector<std::int64_t>& dims) {
    test_passes::proto_builder shape;
    for (const auto d : dims) {
        test_passes::proto_builder dim;
        if (d < 0) dim.string_field(2, "N");
        else dim.varint_field(1, static_cast<std::uint64_t>(d));
        shape.message_field(1, dim);
    }
    test_passes::proto_builder tensor_type;
    tensor_type.varint_field(1, static_cast<std::uint64_t>(elem_type)).message_field(2, shape);
    test_passes::proto_builder type;
    type.message_field(1, tensor_type);
    test_passes::proto_builder v;
    v.string_field(1, name).message_field(2, type);
    return v;
}

std::string write_model(const temp_folder& dir, const std::vector<std::byte>& bytes) {
    return dir.write("m.onnx", std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())).string();
}

}  // namespace

TEST_CASE("the graph of python-onnx's model: values by index, each weight's storage, file and offset") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto json = ops::graph_view_json(model);
    REQUIRE(json);
    CHECK(
        *json ==
        R"({"ok":true,"graph":"g","nodes_total":1,"ops":["Add"],"domains":[""],"files":["w.bin"],)"
        R"("values":[["W","initializer","FLOAT",["4","4"]],["B","initializer","FLOAT",["4"]],["Y","output","FLOAT",["4","4"]]],)"
        R"("inputs":[],"outputs":[2],"nodes":[["add",0,0,[0,1],[2],[],[]]],"subgraphs":[],)"
        R"("initializers":[["W",0,"FLOAT",[4,4],64,"external",0,0,""],["B",1,"FLOAT",[4],16,"raw",-1,0,""]]})");
}

TEST_CASE("declared shapes keep their symbolic dims, inferred ones fill the rest, attributes are summarised") {
    using namespace test_passes;
    temp_folder dir;
    proto_builder g;
    g.message_field(1, onnx_node("Transpose", {"X"}, {"T"}, "/block/transpose", {attr_ints("perm", {2, 0, 1})}));
    g.message_field(1, onnx_node("Relu", {"T", ""}, {"Y"}, "/block/relu"));
    g.string_field(2, "shapes");
    g.message_field(11, typed_value("X", 1, {-1, 3, 5}));
    g.message_field(12, vinfo("Y"));
    const auto json = ops::graph_view_json(write_model(dir, model(g)));
    REQUIRE(json);
    CHECK(json->find(R"("values":[["X","input","FLOAT",["N","3","5"]],["T","output","FLOAT",["5","?","3"]],)"
                     R"(["Y","output","FLOAT",["5","?","3"]]])") != std::string::npos);
    CHECK(json->find(R"("nodes":[["/block/transpose",0,0,[0],[1],[],[["perm","INTS","[2, 0, 1]"]]],)"
                     R"(["/block/relu",1,0,[1,-1],[2],[],[]]])") != std::string::npos);
    CHECK(json->find(R"("ops":["Transpose","Relu"])") != std::string::npos);
}

TEST_CASE("a document past the limit is refused as too large, not cut") {
    temp_folder dir;
    ops::graph_view_options options;
    options.max_bytes = 100;
    const auto json = ops::graph_view_json(test_support::write_reference_model(dir), options);
    REQUIRE_FALSE(json);
    CHECK(json.error().code == error_code::too_large);
    CHECK(json.error().message.find("too large to show") != std::string::npos);
}

TEST_CASE("a file that is not a model is an error") {
    temp_folder dir;
    CHECK_FALSE(ops::graph_view_json(dir.write("x.onnx", "not a model\n")));
}

TEST_CASE("the document in pieces is the document, each piece small, for a server to send without joining them") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto json = ops::graph_view_json(model);
    const auto pieces = ops::graph_view_pieces(model);
    REQUIRE(json);
    REQUIRE(pieces);
    std::string joined;
    for (const auto& p : *pieces) {
        CHECK(p.size() <= 128 * 1024);
        joined += p;
    }
    CHECK(joined == *json);
    ops::graph_view_options options;
    options.max_bytes = 100;
    CHECK(ops::graph_view_pieces(model, options).error().code == error_code::too_large);
}
