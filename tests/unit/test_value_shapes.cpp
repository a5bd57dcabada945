// infer_shapes against ONNX's own shape inference. The model below, built again with
// python-onnx's helpers, was run through onnx.shape_inference.infer_shapes (strict mode,
// Debian's onnx 1.12); the types and dims it gave are the expectations here. Where ONNX
// infers more than onnxstream promises (an op it does not know), the contract is "unknown".
#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/value_shapes.hpp>

#include "graph/shape_inference.hpp"
#include "test_passes_builder.hpp"

using namespace onnxstream::graph;
using namespace onnxstream::passes;
using namespace test_passes;

namespace {

// ValueInfoProto{name, type: TypeProto{tensor_type{elem_type, shape{dim...}}}}; a dim
// written as -1 is the symbolic "N".
proto_builder typed_input(std::string_view name, std::int32_t elem_type, const std::vector<std::int64_t>& dims) {
    proto_builder shape;
    for (const auto d : dims) {
        proto_builder dim;
        if (d < 0) dim.string_field(2, "N");
        else dim.varint_field(1, static_cast<std::uint64_t>(d));
        shape.message_field(1, dim);
    }
    proto_builder tensor_type;
    tensor_type.varint_field(1, static_cast<std::uint64_t>(elem_type)).message_field(2, shape);
    proto_builder type;
    type.message_field(1, tensor_type);
    proto_builder v;
    v.string_field(1, name).message_field(2, type);
    return v;
}

proto_builder int64_vector(std::string_view name, const std::vector<std::int64_t>& values) {
    proto_builder t;
    t.varint_field(1, values.size()).varint_field(2, 7).string_field(8, name);
    std::vector<std::byte> raw(values.size() * 8);
    std::memcpy(raw.data(), values.data(), raw.size());
    t.bytes_field(9, raw);
    return t;
}

std::vector<std::byte> shapes_model() {
    const std::vector<proto_builder> nodes = {
        onnx_node("Transpose", {"X"}, {"T"}, "transpose", {attr_ints("perm", {2, 0, 1})}),
        onnx_node("Shape", {"T"}, {"S"}, "shape"),
        onnx_node("Reshape", {"T", "shape"}, {"R"}, "reshape"),
        onnx_node("Unsqueeze", {"R", "axes0"}, {"U"}, "unsqueeze"),
        onnx_node("Squeeze", {"U", "axes0"}, {"Q"}, "squeeze"),
        onnx_node("Concat", {"X", "X"}, {"C"}, "concat", {attr_int("axis", 1)}),
        onnx_node("Add", {"C", "B"}, {"A"}, "add"),
        onnx_node("Cast", {"A"}, {"K"}, "cast", {attr_int("to", 10)}),
        onnx_node("Flatten", {"X"}, {"F"}, "flatten", {attr_int("axis", 2)}),
        onnx_node("Gather", {"S", "one"}, {"G"}, "gather"),
        onnx_node("Add", {"N3", "B3"}, {"D"}, "add_symbolic"),
        onnx_node("Relu", {"X"}, {"Z"}, "relu"),
        onnx_node("Mystery", {"X"}, {"M"}, "custom", {}, "example.domain"),
    };
    proto_builder g;
    for (const auto& n : nodes) g.message_field(1, n);
    g.string_field(2, "shapes");
    g.message_field(5, int64_vector("shape", {0, -1}));
    g.message_field(5, int64_vector("axes0", {0}));
    g.message_field(5, float_tensor("B", {4}, {1, 1, 1, 1}));
    g.message_field(5, int64_tensor("one", 1));
    g.message_field(5, float_tensor("B3", {3}, {1, 1, 1}));
    g.message_field(11, typed_input("X", 1, {2, 3, 4}));
    g.message_field(11, typed_input("N3", 1, {-1, 3}));
    for (const auto* out : {"Q", "K", "F", "G", "D", "Z", "U", "M"}) g.message_field(12, vinfo(out));
    return model(g);
}

}  // namespace

TEST_CASE("types and dims agree with onnx.shape_inference; a symbolic dim keeps its name") {
    harness h(shapes_model());
    const graph_index index(h.model());
    const auto shapes = infer_shapes(h.model(), index, h.reader());
    auto shape_of = [&](std::string_view name) {
        const auto id = h.model().names.find(name);
        REQUIRE(id);
        const auto v = index.resolve(main_scope, *id);
        REQUIRE(shapes.contains(v));
        return shapes[v];
    };
    struct expected {
        const char* name;
        std::int32_t type;
        std::vector<std::int64_t> dims;
    };
    // From onnx.shape_inference (FLOAT = 1, INT64 = 7, FLOAT16 = 10; 'N' here is -1).
    const expected reference[] = {
        {"T", 1, {4, 2, 3}},          {"S", 7, {3}},       {"R", 1, {4, 6}},     {"U", 1, {1, 4, 6}}, {"Q", 1, {4, 6}},
        {"C", 1, {2, 6, 4}},          {"A", 1, {2, 6, 4}}, {"K", 10, {2, 6, 4}}, {"F", 1, {6, 4}},    {"G", 7, {}},
        {"D", 1, {symbol_dim(0), 3}}, {"Z", 1, {2, 3, 4}},
    };
    for (const auto& r : reference) {
        CAPTURE(r.name);
        const auto s = shape_of(r.name);
        CHECK(s.data_type == r.type);
        REQUIRE(s.dims);
        CHECK(*s.dims == r.dims);
        CHECK(s.fully_known() == (r.name != std::string_view("D")));
    }
    CHECK(shapes.symbol_name(symbol_dim(0)) == "N");
    const auto mystery = shape_of("M");  // an op onnxstream does not know: nothing guessed
    CHECK(mystery.data_type == 0);
    CHECK_FALSE(mystery.dims);
    CHECK_FALSE(mystery.fully_known());
}

TEST_CASE("constant_integers reads INT64 initializers, up to the limit asked for") {
    harness h(shapes_model());
    const graph_index index(h.model());
    auto value = [&](std::string_view name) { return index.resolve(main_scope, *h.model().names.find(name)); };
    CHECK(constant_integers(h.model(), index, h.reader(), value("shape")) == std::vector<std::int64_t>{0, -1});
    CHECK(constant_integers(h.model(), index, h.reader(), value("one")) == std::vector<std::int64_t>{1});
    CHECK_FALSE(constant_integers(h.model(), index, h.reader(), value("shape"), 1));  // two elements, limit 1
    CHECK_FALSE(constant_integers(h.model(), index, h.reader(), value("B")));         // FLOAT
    CHECK_FALSE(constant_integers(h.model(), index, h.reader(), value("X")));         // a graph input
}

TEST_CASE("an initializer of more dims than max_known_rank keeps its type, its rank unknown") {
    proto_builder g;
    g.message_field(1, onnx_node("Relu", {"H"}, {"Y"}, "relu"));
    g.message_field(1, onnx_node("Relu", {"W"}, {"Z"}, "relu_w"));
    g.string_field(2, "huge");
    g.message_field(5, float_tensor("H", std::vector<std::int64_t>(max_known_rank + 1, 1), {2.0F}));
    g.message_field(5, float_tensor("W", std::vector<std::int64_t>(max_known_rank, 1), {3.0F}));
    g.message_field(12, vinfo("Y"));
    harness h(model(g));
    const graph_index index(h.model());
    const auto shapes = infer_shapes(h.model(), index, h.reader());
    const auto& at_limit = shapes[index.resolve(main_scope, *h.model().names.find("W"))];
    REQUIRE(at_limit.dims);
    CHECK(at_limit.dims->size() == max_known_rank);
    const auto& over = shapes[index.resolve(main_scope, *h.model().names.find("H"))];
    CHECK(over.data_type == 1);
    CHECK_FALSE(over.dims);
    CHECK_FALSE(shapes[index.resolve(main_scope, *h.model().names.find("Y"))].dims);
}

TEST_CASE("an initializer nothing reads gets no shape; one a node or a graph output reads does") {
    proto_builder g;
    g.message_field(1, onnx_node("Relu", {"A"}, {"Y"}, "relu"));
    g.string_field(2, "unread");
    g.message_field(5, float_tensor("A", {2}, {1.0F, 2.0F}));
    g.message_field(5, float_tensor("UNREAD", {3}, {1.0F, 2.0F, 3.0F}));
    g.message_field(5, float_tensor("OUT", {1}, {4.0F}));
    g.message_field(12, vinfo("Y"));
    g.message_field(12, vinfo("OUT"));
    harness h(model(g));
    const graph_index index(h.model());
    const auto shapes = infer_shapes(h.model(), index, h.reader());
    const auto shape = [&](std::string_view name) { return shapes[index.resolve(main_scope, *h.model().names.find(name))]; };
    CHECK(shape("A").dims == std::vector<std::int64_t>{2});
    CHECK(shape("Y").dims == std::vector<std::int64_t>{2});
    CHECK(shape("OUT").dims == std::vector<std::int64_t>{1});
    CHECK(shape("UNREAD").data_type == 0);
    CHECK_FALSE(shape("UNREAD").dims);
}

TEST_CASE("shape_table: a slot per value, each distinct shape once, references stable") {
    shape_table table(4);
    CHECK(table.size() == 4);
    CHECK(table.contains(value_id{3}));
    CHECK_FALSE(table.contains(value_id{4}));
    CHECK_FALSE(table.contains(value_id{none}));
    CHECK(table[value_id{2}].data_type == 0);
    CHECK_FALSE(table[value_id{2}].dims);
    table.set(value_id{1}, {});  // nothing known: nothing kept, still unknown
    CHECK(table[value_id{1}].data_type == 0);
    CHECK(table.distinct() == 0);
    table.set(value_id{1}, {1, std::vector<std::int64_t>{2, 3}});
    const auto& kept = table[value_id{1}];
    table.set(value_id{0}, {7, std::nullopt});  // a new shape does not move the ones before it
    CHECK(&table[value_id{1}] == &kept);
    table.set(value_id{2}, {1, std::vector<std::int64_t>{2, 3}});  // the same shape: kept once
    CHECK(table.distinct() == 2);
    CHECK(&table[value_id{2}] == &kept);
    table.set(value_id{3}, {1, std::vector<std::int64_t>{3, 2}});  // other dims, other type: other shapes
    table.set(value_id{3}, {2, std::vector<std::int64_t>{2, 3}});
    CHECK(table.distinct() == 4);
    CHECK(table[value_id{3}].data_type == 2);
    CHECK(table[value_id{1}].dims == std::vector<std::int64_t>{2, 3});
    CHECK(table[value_id{0}].data_type == 7);
    CHECK_FALSE(table[value_id{0}].dims);
    table.set(value_id{1}, {});  // known before: now unknown again, the others as they were
    CHECK(table[value_id{1}].data_type == 0);
    CHECK_FALSE(table[value_id{1}].dims);
    CHECK(table[value_id{2}].dims == std::vector<std::int64_t>{2, 3});
    table.set_same(value_id{0}, value_id{2});  // the same slot, not a copy
    CHECK(&table[value_id{0}] == &kept);
    table.set_same(value_id{2}, value_id{1});  // an unknown shape is unknown after it
    CHECK(table[value_id{2}].data_type == 0);
    CHECK_FALSE(table[value_id{2}].dims);
    table.set_same(value_id{3}, value_id{none});
    CHECK(table[value_id{3}].data_type == 0);
    CHECK(table.distinct() == 4);
    const auto moved = std::move(table);  // references survive a move
    CHECK(&moved[value_id{0}] == &kept);
}

TEST_CASE("unary operators: an output takes its input's shape, unknown without one; an empty name gets none") {
    proto_builder g;
    g.message_field(1, onnx_node("Relu", {"x"}, {"a"}, "relu"));
    g.message_field(1, onnx_node("Sigmoid", {"a"}, {"b"}, "sigmoid"));
    g.message_field(1, onnx_node("Mystery", {"x"}, {"m"}, "custom", {}, "example.domain"));
    g.message_field(1, onnx_node("Tanh", {"m"}, {"t"}, "unknown_input"));
    g.message_field(1, onnx_node("Relu", {""}, {"e"}, "no_input"));
    g.message_field(1, onnx_node("Relu", {"b"}, {""}, "no_output"));
    g.message_field(1, onnx_node("Relu", {"b"}, {"r0", "r1"}, "two_outputs"));  // not ONNX: the first gets the shape
    g.string_field(2, "unary");
    g.message_field(11, typed_input("x", 1, {-1, 3}));
    for (const auto* out : {"b", "t", "e", "r0", "r1"}) g.message_field(12, vinfo(out));
    harness h(model(g));
    const graph_index index(h.model());
    const auto shapes = infer_shapes(h.model(), index, h.reader());
    const auto shape = [&](std::string_view name) -> const value_shape& {
        return shapes[index.resolve(main_scope, *h.model().names.find(name))];
    };
    const value_shape expected{1, std::vector<std::int64_t>{symbol_dim(0), 3}};
    CHECK(shape("x") == expected);
    CHECK(&shape("a") == &shape("x"));  // one shape, kept once
    CHECK(&shape("b") == &shape("x"));
    CHECK(shape("r0") == expected);
    CHECK(shapes.distinct() == 1);
    for (const auto* unknown : {"m", "t", "e", "r1"}) {
        CAPTURE(unknown);
        CHECK(shape(unknown).data_type == 0);
        CHECK_FALSE(shape(unknown).dims);
    }
}

namespace {

// x [N, 3, H, W] -> Conv(8, 3x3, pads 1, strides 2) -> Relu -> MaxPool 2x2 (ceil_mode) -> GlobalAveragePool.
std::vector<std::byte> conv_model(const std::vector<std::int64_t>& x_dims) {
    proto_builder g;
    g.message_field(
        1, onnx_node("Conv", {"x", "w"}, {"c"}, "conv", {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}));
    g.message_field(1, onnx_node("Relu", {"c"}, {"r"}, "relu"));
    g.message_field(1, onnx_node("MaxPool", {"r"}, {"p"}, "pool",
                                 {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2}), attr_int("ceil_mode", 1)}));
    g.message_field(1, onnx_node("GlobalAveragePool", {"p"}, {"y"}, "gap"));
    g.string_field(2, "conv");
    g.message_field(5, float_tensor("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.0F)));
    g.message_field(11, typed_input("x", 1, x_dims));
    g.message_field(12, vinfo("y"));
    return model(g);
}

}  // namespace

TEST_CASE("a symbol passes through Conv, Relu and pools; spatial dims follow onnx's arithmetic") {
    harness h(conv_model({-1, 3, 17, 32}));
    const graph_index index(h.model());
    const auto shapes = infer_shapes(h.model(), index, h.reader());
    const auto dims = [&](std::string_view name) { return *shapes[index.resolve(main_scope, *h.model().names.find(name))].dims; };
    const auto n = symbol_dim(0);
    CHECK(shapes.symbol_name(n) == "N");
    CHECK(dims("c") == std::vector<std::int64_t>{n, 8, 9, 16});  // (17 + 2 - 3) / 2 + 1, (32 + 2 - 3) / 2 + 1
    CHECK(dims("r") == dims("c"));
    CHECK(dims("p") == std::vector<std::int64_t>{n, 8, 5, 8});  // ceil((9 - 2) / 2) + 1, ceil((16 - 2) / 2) + 1
    CHECK(dims("y") == std::vector<std::int64_t>{n, 8, 1, 1});
}

namespace {

// A STRING attribute (type 3).
proto_builder attr_string(std::string_view name, std::string_view value) {
    proto_builder a;
    a.string_field(1, name).varint_field(20, 3).string_field(4, value);
    return a;
}

// x [1, 3, 17, 32] into Convs (weight [8, 3, 3, 3]) and ConvTransposes (weight [3, 4, 3, 3])
// padded every way auto_pad and pads can say it. The dims known are onnx.shape_inference's (onnx 1.12).
std::vector<std::byte> padding_model() {
    const auto conv = [](std::string_view op, std::string_view out, std::string_view weight, std::vector<proto_builder> a) {
        return onnx_node(op, {"x", std::string(weight)}, {std::string(out)}, out, std::move(a));
    };
    const std::vector<proto_builder> nodes = {
        conv("Conv", "same", "w", {attr_string("auto_pad", "SAME_UPPER"), attr_ints("strides", {2, 2})}),
        conv("Conv", "valid", "w", {attr_string("auto_pad", "VALID"), attr_ints("strides", {2, 2})}),
        conv("Conv", "pads", "w", {attr_ints("pads", {1, 0, 1, 2})}),
        conv("Conv", "notset", "w", {attr_string("auto_pad", "NOTSET"), attr_ints("pads", {1, 0, 1, 2})}),
        conv("Conv", "bogus", "w", {attr_string("auto_pad", "BOGUS")}),
        conv("Conv", "short_pads", "w", {attr_string("auto_pad", "SAME_UPPER"), attr_ints("pads", {1, 1})}),
        conv("ConvTranspose", "t_same", "wt", {attr_string("auto_pad", "SAME_LOWER"), attr_ints("strides", {2, 2})}),
        conv("ConvTranspose", "t_pads", "wt", {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}),
        conv("ConvTranspose", "t_valid", "wt", {attr_string("auto_pad", "VALID")}),
        conv("ConvTranspose", "t_bogus", "wt", {attr_string("auto_pad", "BOGUS")}),
    };
    proto_builder g;
    for (const auto& n : nodes) g.message_field(1, n);
    g.string_field(2, "padding");
    g.message_field(5, float_tensor("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.0F)));
    g.message_field(5, float_tensor("wt", {3, 4, 3, 3}, std::vector<float>(4 * 27, 0.0F)));
    g.message_field(11, typed_input("x", 1, {1, 3, 17, 32}));
    for (const auto* out : {"same", "valid", "pads", "notset", "bogus", "short_pads", "t_same", "t_pads", "t_valid", "t_bogus"})
        g.message_field(12, vinfo(out));
    return model(g);
}

}  // namespace

TEST_CASE(
    "Conv and ConvTranspose padding: SAME, VALID, explicit pads; an unknown auto_pad or a pads of the wrong count leave "
    "the dims unknown") {
    harness h(padding_model());
    const graph_index index(h.model());
    const auto shapes = infer_shapes(h.model(), index, h.reader());
    const auto dims = [&](std::string_view name) { return shapes[index.resolve(main_scope, *h.model().names.find(name))].dims; };
    using dim_list = std::vector<std::int64_t>;
    CHECK(dims("same") == dim_list{1, 8, 9, 16});   // ceil(17 / 2), ceil(32 / 2)
    CHECK(dims("valid") == dim_list{1, 8, 8, 15});  // (17 - 3) / 2 + 1, (32 - 3) / 2 + 1
    CHECK(dims("pads") == dim_list{1, 8, 17, 32});  // 17 + 1 + 1 - 3 + 1, 32 + 0 + 2 - 3 + 1
    CHECK(dims("notset") == dims("pads"));
    CHECK(!dims("bogus").has_value());
    CHECK(!dims("short_pads").has_value());
    CHECK(dims("t_same") == dim_list{1, 4, 34, 64});   // in x stride
    CHECK(dims("t_pads") == dim_list{1, 4, 33, 63});   // 2 x (17 - 1) + 3 - 2, 2 x (32 - 1) + 3 - 2
    CHECK(dims("t_valid") == dim_list{1, 4, 19, 34});  // 17 - 1 + 3, 32 - 1 + 3
    CHECK(!dims("t_bogus").has_value());
}

TEST_CASE("broadcasting: a number other than 1 wins, one shared symbol stays, two symbols are unknown") {
    shape_table table(1);
    const auto n = table.symbol("N"), m = table.symbol("M");
    CHECK(n != m);
    CHECK(table.symbol("N") == n);
    CHECK(table.symbol("") == unknown_dim);
    const value_shape a{1, std::vector<std::int64_t>{n, 1, 4}}, b{1, std::vector<std::int64_t>{n, 5, 1}},
        c{1, std::vector<std::int64_t>{m, 1, 1}}, d{1, std::vector<std::int64_t>{7, 1}};
    CHECK(detail::broadcast({&a, &b}) == std::vector<std::int64_t>{n, 5, 4});
    CHECK(detail::broadcast({&a, &c}) == std::vector<std::int64_t>{unknown_dim, 1, 4});
    CHECK(detail::broadcast({&a, &d}) == std::vector<std::int64_t>{n, 7, 4});
    const value_shape e{1, std::vector<std::int64_t>{2, 1}};
    CHECK_FALSE(detail::broadcast({&b, &e}));  // 5 against 2
}

TEST_CASE("input shape overrides: numbers and symbols set, a fixed dim kept, names and ranks checked") {
    harness h(conv_model({-1, 3, 17, 32}));
    const graph_index index(h.model());
    const auto given = [](std::string_view text) {
        auto parsed = parse_input_shape(text);
        REQUIRE(parsed);
        return std::vector<input_shape_override>{*parsed};
    };
    const auto fixed = infer_shapes(h.model(), index, h.reader(), given("x=2,3,17,32"));
    REQUIRE(fixed);
    CHECK(*(*fixed)[index.resolve(main_scope, *h.model().names.find("c"))].dims == std::vector<std::int64_t>{2, 8, 9, 16});
    const auto renamed = infer_shapes(h.model(), index, h.reader(), given("x=B,3,?,32"));
    REQUIRE(renamed);
    const auto& c = *(*renamed)[index.resolve(main_scope, *h.model().names.find("c"))].dims;
    CHECK(renamed->symbol_name(c[0]) == "B");
    CHECK(c[2] == 9);                                                               // `?` keeps the declared 17
    CHECK_FALSE(infer_shapes(h.model(), index, h.reader(), given("x=1,4,17,32")));  // 3 is fixed
    CHECK_FALSE(infer_shapes(h.model(), index, h.reader(), given("x=1,C,17,32")));  // a symbol for a fixed dim
    CHECK_FALSE(infer_shapes(h.model(), index, h.reader(), given("x=1,3,17")));     // rank
    CHECK_FALSE(infer_shapes(h.model(), index, h.reader(), given("w=8,3,3,3")));    // an initializer
    CHECK_FALSE(infer_shapes(h.model(), index, h.reader(), given("nope=1")));
    CHECK_FALSE(parse_input_shape("=1,2"));
    CHECK_FALSE(parse_input_shape("x"));
    CHECK_FALSE(parse_input_shape("x=1,,2"));
    CHECK_FALSE(parse_input_shape("x=1,-2"));
    CHECK_FALSE(parse_input_shape("x=1x"));
}

TEST_CASE("a node reading a later node's output: an error for infer-shapes, what is known for the passes") {
    proto_builder g;
    g.message_field(1, onnx_node("Add", {"x", "b"}, {"a"}, "add"));
    g.message_field(1, onnx_node("Relu", {"a"}, {"b"}, "relu"));
    g.string_field(2, "cycle");
    g.message_field(11, typed_input("x", 1, {2}));
    g.message_field(12, vinfo("b"));
    harness h(model(g));
    const graph_index index(h.model());
    const auto refused = infer_shapes(h.model(), index, h.reader(), {});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("cycle") != std::string::npos);
    const auto lenient = infer_shapes(h.model(), index, h.reader());
    CHECK(lenient.size() == index.size());
}

TEST_CASE("encode_type: numbers as dim_value, symbols as dim_param, unknown dims empty, no rank no shape") {
    shape_table table(1);
    const auto n = table.symbol("N");
    const auto bytes = [](const onnxstream::proto::encoded_message& m) {
        return std::vector<std::byte>(m.pool().begin(), m.pool().end());
    };
    proto_builder d0, d1, d2;
    d0.string_field(2, "N");
    d1.varint_field(1, 3);
    proto_builder shape;
    shape.message_field(1, d0).message_field(1, d1).message_field(1, d2);
    proto_builder tensor_type;
    tensor_type.varint_field(1, 1).message_field(2, shape);
    proto_builder type;
    type.message_field(1, tensor_type);
    const auto expected = std::vector<std::byte>(type.bytes().begin(), type.bytes().end());
    CHECK(bytes(encode_type({1, std::vector<std::int64_t>{n, 3, unknown_dim}}, table)) == expected);
    proto_builder rankless_tensor;
    rankless_tensor.varint_field(1, 7);
    proto_builder rankless;
    rankless.message_field(1, rankless_tensor);
    CHECK(bytes(encode_type({7, std::nullopt}, table)) ==
          std::vector<std::byte>(rankless.bytes().begin(), rankless.bytes().end()));
}
