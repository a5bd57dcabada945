// The evaluator under fold-constants, op by op, on hand-checked values: broadcasting,
// integer wrap-around and truncating division, Slice clamping, Range's repeated addition,
// Cast rounding, and the refusals (what would not be bit-exact with ONNX Runtime).
#include <onnxstream/passes/constant_evaluator.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <limits>

using namespace onnxstream;
using namespace onnxstream::passes;

namespace {

constexpr std::int32_t f32 = 1, u8 = 2, i32 = 6, i64 = 7, boolean = 9, f16 = 10, f64 = 11;

template <class T>
host_tensor make(std::int32_t type, std::vector<std::int64_t> dims, std::vector<T> values) {
    host_tensor t{type, std::move(dims), std::vector<std::byte>(values.size() * sizeof(T))};
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

template <class T>
std::vector<T> values(const host_tensor& t) {
    std::vector<T> out(t.bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
    return out;
}

attribute_value attr_i(std::string_view name, std::int64_t v) {
    attribute_value a;
    a.name = name;
    a.i = v;
    return a;
}

attribute_value attr_ints(std::string_view name, std::vector<std::int64_t> v) {
    attribute_value a;
    a.name = name;
    a.ints = std::move(v);
    return a;
}

result<std::vector<host_tensor>> run(std::string_view op, std::vector<const host_tensor*> inputs,
                                     std::vector<attribute_value> attributes = {}, std::int64_t opset = 17,
                                     std::uint64_t limit = 1 << 20) {
    evaluated_node n;
    n.op_type = op;
    n.opset = opset;
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    return evaluate(n, limit);
}

host_tensor one(std::string_view op, std::vector<const host_tensor*> inputs, std::vector<attribute_value> attributes = {},
                std::int64_t opset = 17) {
    auto r = run(op, std::move(inputs), std::move(attributes), opset);
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    REQUIRE(r->size() == 1);
    return (*r)[0];
}

}  // namespace

TEST_CASE("evaluator: Add broadcasts [2,1] with [3]; int64 wraps; float stays float") {
    const auto a = make<std::int64_t>(i64, {2, 1}, {10, std::numeric_limits<std::int64_t>::max()});
    const auto b = make<std::int64_t>(i64, {3}, {1, 2, 3});
    const auto r = one("Add", {&a, &b});
    CHECK(r.dims == std::vector<std::int64_t>{2, 3});
    const auto v = values<std::int64_t>(r);
    CHECK(v[0] == 11);
    CHECK(v[2] == 13);
    CHECK(v[3] == std::numeric_limits<std::int64_t>::min());  // max + 1 wraps
    // 0.1f + 0.2f in float is 0.3f rounded once (0x3E99999A), not the double sum rounded.
    const auto x = make<float>(f32, {}, {0.1F});
    const auto y = make<float>(f32, {}, {0.2F});
    const auto s = one("Add", {&x, &y});
    CHECK(values<float>(s)[0] == 0.1F + 0.2F);
    CHECK(s.dims.empty());
}

TEST_CASE("evaluator: integer Div truncates toward zero; division by zero and INT_MIN / -1 are refused") {
    const auto a = make<std::int32_t>(i32, {4}, {7, -7, 7, -7});
    const auto b = make<std::int32_t>(i32, {4}, {2, 2, -2, -2});
    CHECK(values<std::int32_t>(one("Div", {&a, &b})) == std::vector<std::int32_t>{3, -3, -3, 3});
    const auto zero = make<std::int32_t>(i32, {}, {0});
    CHECK(run("Div", {&a, &zero}).error().code == error_code::unsupported);
    const auto lowest = make<std::int32_t>(i32, {}, {std::numeric_limits<std::int32_t>::min()});
    const auto minus_one = make<std::int32_t>(i32, {}, {-1});
    CHECK(run("Div", {&lowest, &minus_one}).error().code == error_code::unsupported);
    // Float division by zero is IEEE: infinity.
    const auto one_f = make<float>(f32, {}, {1.0F});
    const auto zero_f = make<float>(f32, {}, {0.0F});
    CHECK(values<float>(one("Div", {&one_f, &zero_f}))[0] == std::numeric_limits<float>::infinity());
}

TEST_CASE("evaluator: Neg, Equal, Where, Not, And") {
    const auto a = make<std::int64_t>(i64, {3}, {1, -2, std::numeric_limits<std::int64_t>::min()});
    CHECK(values<std::int64_t>(one("Neg", {&a})) == std::vector<std::int64_t>{-1, 2, std::numeric_limits<std::int64_t>::min()});
    const auto b = make<std::int64_t>(i64, {1}, {-2});
    const auto eq = one("Equal", {&a, &b});
    CHECK(eq.data_type == boolean);
    CHECK(values<std::uint8_t>(eq) == std::vector<std::uint8_t>{0, 1, 0});
    const auto x = make<float>(f32, {3}, {1, 2, 3});
    const auto y = make<float>(f32, {}, {-1});
    CHECK(values<float>(one("Where", {&eq, &x, &y})) == std::vector<float>{-1, 2, -1});
    CHECK(values<std::uint8_t>(one("Not", {&eq})) == std::vector<std::uint8_t>{1, 0, 1});
    const auto t = make<std::uint8_t>(boolean, {3}, {1, 1, 0});
    const auto an = one("And", {&eq, &t});
    CHECK(an.data_type == boolean);
    CHECK(values<std::uint8_t>(an) == std::vector<std::uint8_t>{0, 1, 0});
}

TEST_CASE("evaluator: Shape (with start/end), Size, Gather of a shape, Unsqueeze, Squeeze, Concat") {
    const std::vector<std::int64_t> dims{2, 3, 5};
    CHECK(values<std::int64_t>(shape_tensor(dims, 0, std::numeric_limits<std::int64_t>::max())) == dims);
    CHECK(values<std::int64_t>(shape_tensor(dims, -2, -1)) == std::vector<std::int64_t>{3});
    const auto shape = shape_tensor(dims, 0, 3);
    const auto index = make<std::int64_t>(i64, {}, {-1});
    const auto g = one("Gather", {&shape, &index}, {attr_i("axis", 0)});
    CHECK(g.dims.empty());
    CHECK(values<std::int64_t>(g) == std::vector<std::int64_t>{5});
    const auto axes = make<std::int64_t>(i64, {1}, {0});
    const auto u = one("Unsqueeze", {&g, &axes});
    CHECK(u.dims == std::vector<std::int64_t>{1});
    CHECK(one("Squeeze", {&u, &axes}).dims.empty());
    CHECK(one("Unsqueeze", {&g}, {attr_ints("axes", {0})}, 11).dims == std::vector<std::int64_t>{1});  // axes attribute before 13
    const auto c = one("Concat", {&shape, &u, &u}, {attr_i("axis", 0)});
    CHECK(values<std::int64_t>(c) == std::vector<std::int64_t>{2, 3, 5, 5, 5});
    const auto x = make<float>(f32, {2, 3}, {0, 1, 2, 3, 4, 5});
    const auto size = one("Size", {&x});
    CHECK((size.data_type == i64 && size.dims.empty() && values<std::int64_t>(size)[0] == 6));
    // Gather on axis 1 of a matrix, with a [2] index tensor.
    const auto cols = make<std::int64_t>(i64, {2}, {2, 0});
    const auto gathered = one("Gather", {&x, &cols}, {attr_i("axis", 1)});
    CHECK(gathered.dims == std::vector<std::int64_t>{2, 2});
    CHECK(values<float>(gathered) == std::vector<float>{2, 0, 5, 3});
    const auto far = make<std::int64_t>(i64, {}, {3});
    CHECK(!run("Gather", {&x, &far}, {attr_i("axis", 1)}).has_value());
}

TEST_CASE("evaluator: Slice clamps like the spec, negative steps included") {
    const auto x = make<std::int64_t>(i64, {6}, {0, 1, 2, 3, 4, 5});
    auto slice = [&](std::vector<std::int64_t> s, std::vector<std::int64_t> e, std::vector<std::int64_t> st) {
        const auto starts = make<std::int64_t>(i64, {1}, s);
        const auto ends = make<std::int64_t>(i64, {1}, e);
        const auto axes = make<std::int64_t>(i64, {1}, {0});
        const auto steps = make<std::int64_t>(i64, {1}, st);
        return values<std::int64_t>(one("Slice", {&x, &starts, &ends, &axes, &steps}));
    };
    CHECK(slice({1}, {std::numeric_limits<std::int64_t>::max()}, {1}) == std::vector<std::int64_t>{1, 2, 3, 4, 5});
    CHECK(slice({-2}, {100}, {1}) == std::vector<std::int64_t>{4, 5});
    CHECK(slice({-1}, {std::numeric_limits<std::int64_t>::min()}, {-1}) == std::vector<std::int64_t>{5, 4, 3, 2, 1, 0});
    CHECK(slice({5}, {0}, {-2}) == std::vector<std::int64_t>{5, 3, 1});
    CHECK(slice({4}, {2}, {1}).empty());
    // Opset 9: attributes.
    const auto old = one("Slice", {&x}, {attr_ints("starts", {1}), attr_ints("ends", {3})}, 9);
    CHECK(values<std::int64_t>(old) == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("evaluator: Reshape with 0 and -1, Flatten, Transpose, Expand, Tile") {
    const auto x = make<float>(f32, {2, 3}, {0, 1, 2, 3, 4, 5});
    const auto shape = make<std::int64_t>(i64, {3}, {0, -1, 1});
    CHECK(one("Reshape", {&x, &shape}).dims == std::vector<std::int64_t>{2, 3, 1});
    CHECK(one("Flatten", {&x}, {attr_i("axis", 0)}).dims == std::vector<std::int64_t>{1, 6});
    const auto t = one("Transpose", {&x});
    CHECK(t.dims == std::vector<std::int64_t>{3, 2});
    CHECK(values<float>(t) == std::vector<float>{0, 3, 1, 4, 2, 5});
    const auto row = make<float>(f32, {3}, {7, 8, 9});
    const auto to = make<std::int64_t>(i64, {2}, {2, 1});
    const auto e = one("Expand", {&row, &to});  // bidirectional: [3] with [2,1] -> [2,3]
    CHECK(e.dims == std::vector<std::int64_t>{2, 3});
    CHECK(values<float>(e) == std::vector<float>{7, 8, 9, 7, 8, 9});
    const auto repeats = make<std::int64_t>(i64, {2}, {1, 2});
    CHECK(values<float>(one("Tile", {&x, &repeats})) == std::vector<float>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
}

TEST_CASE("evaluator: Range accumulates in its type; ConstantOfShape; the fold limit") {
    const auto start = make<float>(f32, {}, {0.0F});
    const auto limit = make<float>(f32, {}, {1.0F});
    const auto delta = make<float>(f32, {}, {0.1F});
    const auto r = one("Range", {&start, &limit, &delta});
    const auto v = values<float>(r);
    REQUIRE(v.size() == 10);
    float expected = 0.0F;
    for (int i = 0; i < 3; ++i) expected += 0.1F;
    CHECK(v[3] == expected);  // 0.1f added three times, not 3 * 0.1f
    const auto a = make<std::int64_t>(i64, {}, {10});
    const auto b = make<std::int64_t>(i64, {}, {0});
    const auto d = make<std::int64_t>(i64, {}, {-3});
    CHECK(values<std::int64_t>(one("Range", {&a, &b, &d})) == std::vector<std::int64_t>{10, 7, 4, 1});
    const auto shape = make<std::int64_t>(i64, {2}, {2, 2});
    const auto zeros = one("ConstantOfShape", {&shape});
    CHECK((zeros.data_type == f32 && values<float>(zeros) == std::vector<float>{0, 0, 0, 0}));
    evaluated_node n;
    n.op_type = "ConstantOfShape";
    n.opset = 17;
    n.inputs = {&shape};
    n.value_attribute = make<std::int64_t>(i64, {1}, {-1});
    const auto minus = evaluate(n, 1 << 20);
    REQUIRE(minus.has_value());
    CHECK(values<std::int64_t>((*minus)[0]) == std::vector<std::int64_t>{-1, -1, -1, -1});
    // 1M floats of ConstantOfShape: past a 1 MiB limit, refused.
    const auto big = make<std::int64_t>(i64, {2}, {1024, 257});
    n.inputs = {&big};
    n.value_attribute.reset();
    const auto refused = evaluate(n, 1 << 20);
    CHECK((!refused && refused.error().code == error_code::unsupported));
}

TEST_CASE("evaluator: Cast truncates, wraps and rounds like static_cast; refuses the undefined") {
    const auto f = make<float>(f32, {4}, {2.7F, -2.7F, 65535.0F, 0.0F});
    CHECK(values<std::int32_t>(one("Cast", {&f}, {attr_i("to", i32)})) == std::vector<std::int32_t>{2, -2, 65535, 0});
    const auto wide = make<std::int64_t>(i64, {2}, {300, -1});
    CHECK(values<std::uint8_t>(one("Cast", {&wide}, {attr_i("to", u8)})) == std::vector<std::uint8_t>{44, 255});
    const auto big = make<std::int64_t>(i64, {1}, {(std::int64_t{1} << 53) + 1});
    CHECK(values<float>(one("Cast", {&big}, {attr_i("to", f32)}))[0] == 9007199254740992.0F);
    const auto to_bool = one("Cast", {&f}, {attr_i("to", boolean)});
    CHECK(values<std::uint8_t>(to_bool) == std::vector<std::uint8_t>{1, 1, 1, 0});
    const auto half = one("Cast", {&f}, {attr_i("to", f16)});
    CHECK(values<std::uint16_t>(half)[0] == 0x4166);  // 2.7 -> 2.69921875 in FLOAT16
    const auto nan = make<float>(f32, {1}, {std::numeric_limits<float>::quiet_NaN()});
    CHECK(run("Cast", {&nan}, {attr_i("to", i64)}).error().code == error_code::unsupported);
    const auto huge = make<double>(f64, {1}, {1e300});
    CHECK(run("Cast", {&huge}, {attr_i("to", i32)}).error().code == error_code::unsupported);
}

TEST_CASE("evaluator: reductions: integers exactly, floats only when the order cannot matter") {
    const auto x = make<std::int64_t>(i64, {2, 3}, {1, 2, 3, 4, 5, 6});
    const auto axes = make<std::int64_t>(i64, {1}, {1});
    const auto sum = one("ReduceSum", {&x, &axes});
    CHECK(sum.dims == std::vector<std::int64_t>{2, 1});
    CHECK(values<std::int64_t>(sum) == std::vector<std::int64_t>{6, 15});
    const auto prod = one("ReduceProd", {&x}, {attr_i("keepdims", 0)});
    CHECK((prod.dims.empty() && values<std::int64_t>(prod)[0] == 720));
    const auto f = make<float>(f32, {3}, {1, 2, 3});
    CHECK(run("ReduceSum", {&f}).error().code == error_code::unsupported);
    const auto pair = make<float>(f32, {2}, {0.1F, 0.2F});
    CHECK(values<float>(one("ReduceSum", {&pair}))[0] == 0.1F + 0.2F);
    CHECK(values<std::int64_t>(one("ReduceMax", {&x}, {attr_ints("axes", {0})})) == std::vector<std::int64_t>{4, 5, 6});
}

TEST_CASE("evaluator: what it does not know it refuses") {
    const auto x = make<float>(f32, {1}, {1});
    CHECK(!can_evaluate("RandomNormalLike"));
    CHECK(run("RandomNormalLike", {&x}).error().code == error_code::unsupported);
    CHECK(run("Exp", {&x}).error().code == error_code::unsupported);
    const auto h = make<std::uint16_t>(f16, {1}, {0x3C00});
    CHECK(run("Add", {&h, &h}).error().code == error_code::unsupported);  // FLOAT16 arithmetic
    const auto s = make<std::int64_t>(i64, {2}, {1, 2});
    const auto t = make<std::int64_t>(i64, {3}, {1, 2, 3});
    CHECK(run("Add", {&s, &t}).error().code == error_code::invalid_argument);  // shapes do not broadcast
}
