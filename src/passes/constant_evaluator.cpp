#include <onnxstream/passes/constant_evaluator.hpp>

#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/onnx/data_type.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <type_traits>

namespace onnxstream::passes {

static_assert(std::endian::native == std::endian::little, "tensor bytes are read in place as little-endian");

using graph::double_to_half;
using graph::element_size;
using graph::half_to_double;
using onnx::data_type;

namespace {

// Views, not C strings: can_evaluate, asked for every node, compares lengths first (a
// `const char*` is measured with strlen at each comparison).
constexpr auto evaluated_ops = std::to_array<std::string_view>({"Abs",
                                                                "Add",
                                                                "And",
                                                                "Cast",
                                                                "Ceil",
                                                                "Concat",
                                                                "ConstantOfShape",
                                                                "Div",
                                                                "Equal",
                                                                "Expand",
                                                                "Flatten",
                                                                "Floor",
                                                                "Gather",
                                                                "Greater",
                                                                "GreaterOrEqual",
                                                                "Identity",
                                                                "Less",
                                                                "LessOrEqual",
                                                                "Max",
                                                                "Min",
                                                                "Mul",
                                                                "Neg",
                                                                "Not",
                                                                "Or",
                                                                "Range",
                                                                "ReduceMax",
                                                                "ReduceMin",
                                                                "ReduceProd",
                                                                "ReduceSum",
                                                                "Reshape",
                                                                "Shape",
                                                                "Size",
                                                                "Slice",
                                                                "Sqrt",
                                                                "Squeeze",
                                                                "Sub",
                                                                "Tile",
                                                                "Transpose",
                                                                "Unsqueeze",
                                                                "Where"});

result<std::vector<host_tensor>> refuse(std::string why) { return failure(error_code::unsupported, std::move(why)); }

std::uint64_t count_of(std::span<const std::int64_t> dims) {
    std::uint64_t n = 1;
    for (const auto d : dims) n *= static_cast<std::uint64_t>(d);
    return n;
}

const attribute_value* find_attribute(const evaluated_node& node, std::string_view name) {
    for (const auto& a : node.attributes)
        if (a.name == name) return &a;
    return nullptr;
}

std::int64_t int_attribute(const evaluated_node& node, std::string_view name, std::int64_t fallback) {
    const auto* a = find_attribute(node, name);
    return a != nullptr && a->i ? *a->i : fallback;
}

template <class T>
std::vector<T> elements_of(const host_tensor& t) {
    std::vector<T> out(t.bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), out.size() * sizeof(T));
    return out;
}

template <class T>
host_tensor tensor_of(std::int32_t type, std::vector<std::int64_t> dims, const std::vector<T>& values) {
    host_tensor t{type, std::move(dims), std::vector<std::byte>(values.size() * sizeof(T))};
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

// An INT32/INT64 input as int64 values (shapes, axes, indices).
std::optional<std::vector<std::int64_t>> integers(const host_tensor* t) {
    if (t == nullptr) return std::nullopt;
    if (t->data_type == static_cast<std::int32_t>(data_type::int64)) return elements_of<std::int64_t>(*t);
    if (t->data_type == static_cast<std::int32_t>(data_type::int32)) {
        const auto v = elements_of<std::int32_t>(*t);
        return std::vector<std::int64_t>(v.begin(), v.end());
    }
    return std::nullopt;
}

// `axis` in [-rank, rank) made non-negative; empty when out of range.
std::optional<std::size_t> normalize_axis(std::int64_t axis, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r) return std::nullopt;
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::vector<std::uint64_t> strides_of(std::span<const std::int64_t> dims) {
    std::vector<std::uint64_t> s(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * static_cast<std::uint64_t>(dims[i]);
    return s;
}

// Multidirectional broadcasting of `shapes`; empty when they do not broadcast.
std::optional<std::vector<std::int64_t>> broadcast_shape(std::span<const std::vector<std::int64_t>> shapes) {
    std::size_t rank = 0;
    for (const auto& s : shapes) rank = std::max(rank, s.size());
    std::vector<std::int64_t> out(rank, 1);
    for (const auto& s : shapes)
        for (std::size_t i = 0; i < s.size(); ++i) {
            auto& o = out[rank - s.size() + i];
            if (s[i] == o || s[i] == 1) continue;
            if (o != 1) return std::nullopt;
            o = s[i];
        }
    return out;
}

// For each element of `out_dims`, the element of an input of `in_dims` broadcast to it.
std::vector<std::uint64_t> broadcast_offsets(std::span<const std::int64_t> in_dims, std::span<const std::int64_t> out_dims) {
    const auto total = count_of(out_dims);
    std::vector<std::uint64_t> offsets(static_cast<std::size_t>(total));
    const auto rank = out_dims.size();
    std::vector<std::uint64_t> in_strides(rank, 0);
    const auto own = strides_of(in_dims);
    for (std::size_t i = 0; i < in_dims.size(); ++i)
        if (in_dims[i] != 1) in_strides[rank - in_dims.size() + i] = own[i];
    std::vector<std::int64_t> index(rank, 0);
    std::uint64_t offset = 0;
    for (std::uint64_t k = 0; k < total; ++k) {
        offsets[static_cast<std::size_t>(k)] = offset;
        for (std::size_t d = rank; d-- > 0;) {
            offset += in_strides[d];
            if (++index[d] < out_dims[d]) break;
            offset -= in_strides[d] * static_cast<std::uint64_t>(out_dims[d]);
            index[d] = 0;
        }
    }
    return offsets;
}

// Calls `f(T{})` with the C++ type of `type`; BOOL is uint8_t (0 or 1).
template <class F>
auto with_type(std::int32_t type, F&& f) -> decltype(f(float{})) {
    switch (static_cast<data_type>(type)) {
        case data_type::float32: return f(float{});
        case data_type::float64: return f(double{});
        case data_type::int8: return f(std::int8_t{});
        case data_type::int16: return f(std::int16_t{});
        case data_type::int32: return f(std::int32_t{});
        case data_type::int64: return f(std::int64_t{});
        case data_type::uint8:
        case data_type::boolean: return f(std::uint8_t{});
        case data_type::uint16: return f(std::uint16_t{});
        case data_type::uint32: return f(std::uint32_t{});
        case data_type::uint64: return f(std::uint64_t{});
        default: return refuse("arithmetic on " + onnx::data_type_name(type) + " is not folded");
    }
}

// Integer arithmetic that wraps like two's complement hardware (ONNX Runtime's loops do).
template <class T>
T wrap(std::uint64_t bits) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(bits));
}

template <class T>
std::optional<T> arithmetic(std::string_view op, T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (op == "Add") return static_cast<T>(a + b);
        if (op == "Sub") return static_cast<T>(a - b);
        if (op == "Mul") return static_cast<T>(a * b);
        if (op == "Div") return static_cast<T>(a / b);
        // std::min/max on NaN are not what ONNX Runtime's Eigen gives: refused by the caller.
        if (op == "Min") return std::min(a, b);
        if (op == "Max") return std::max(a, b);
    } else {
        using U = std::make_unsigned_t<T>;
        const auto ua = static_cast<std::uint64_t>(static_cast<U>(a));
        const auto ub = static_cast<std::uint64_t>(static_cast<U>(b));
        if (op == "Add") return wrap<T>(ua + ub);
        if (op == "Sub") return wrap<T>(ua - ub);
        if (op == "Mul") return wrap<T>(ua * ub);
        if (op == "Div") {
            if (b == 0) return std::nullopt;
            if constexpr (std::is_signed_v<T>)
                if (a == std::numeric_limits<T>::min() && b == -1) return std::nullopt;
            return static_cast<T>(a / b);
        }
        if (op == "Min") return std::min(a, b);
        if (op == "Max") return std::max(a, b);
    }
    return std::nullopt;
}

template <class T>
std::optional<bool> comparison(std::string_view op, T a, T b) {
    if (op == "Equal") return a == b;
    if (op == "Less") return a < b;
    if (op == "Greater") return a > b;
    if (op == "LessOrEqual") return a <= b;
    if (op == "GreaterOrEqual") return a >= b;
    return std::nullopt;
}

bool is_comparison(std::string_view op) {
    return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual";
}

result<std::vector<host_tensor>> elementwise(const evaluated_node& node, std::uint64_t limit) {
    const auto op = node.op_type;
    if (node.inputs.size() < 2 || node.inputs[0] == nullptr || node.inputs[1] == nullptr)
        return failure(error_code::invalid_argument, std::string(op) + " needs two inputs");
    if ((op == "Min" || op == "Max") && node.inputs.size() != 2) return refuse("Min/Max of more than two inputs");
    const auto& a = *node.inputs[0];
    const auto& b = *node.inputs[1];
    if (a.data_type != b.data_type) return failure(error_code::invalid_argument, "the inputs have different types");
    const std::vector<std::vector<std::int64_t>> shapes{a.dims, b.dims};
    const auto dims = broadcast_shape(shapes);
    if (!dims) return failure(error_code::invalid_argument, "the inputs' shapes do not broadcast");
    const bool compare = is_comparison(op);
    const auto count = count_of(*dims);
    if (count * (compare ? 1 : a.bytes.size() / std::max<std::uint64_t>(a.elements(), 1)) > limit)
        return refuse("the result would be larger than the fold limit");
    const auto ia = broadcast_offsets(a.dims, *dims);
    const auto ib = broadcast_offsets(b.dims, *dims);
    if (a.data_type == static_cast<std::int32_t>(data_type::boolean) && !compare) return refuse(std::string(op) + " of BOOL");
    return with_type(a.data_type, [&](auto tag) -> result<std::vector<host_tensor>> {
        using T = decltype(tag);
        const auto x = elements_of<T>(a);
        const auto y = elements_of<T>(b);
        if (compare) {
            std::vector<std::uint8_t> out(static_cast<std::size_t>(count));
            for (std::size_t k = 0; k < out.size(); ++k) {
                const auto r = comparison<T>(op, x[ia[k]], y[ib[k]]);
                if (!r) return refuse(std::string(op) + " is not folded");
                out[k] = *r ? 1 : 0;
            }
            return std::vector{tensor_of(static_cast<std::int32_t>(data_type::boolean), *dims, out)};
        }
        std::vector<T> out(static_cast<std::size_t>(count));
        for (std::size_t k = 0; k < out.size(); ++k) {
            const T p = x[ia[k]];
            const T q = y[ib[k]];
            if constexpr (std::is_floating_point_v<T>)
                if ((op == "Min" || op == "Max") && (std::isnan(p) || std::isnan(q))) return refuse("Min/Max of NaN");
            const auto r = arithmetic<T>(op, p, q);
            if (!r) return refuse(std::string(op) + (op == "Div" ? ": integer division by zero or overflow" : " is not folded"));
            out[k] = *r;
        }
        return std::vector{tensor_of(a.data_type, *dims, out)};
    });
}

result<std::vector<host_tensor>> unary(const evaluated_node& node) {
    const auto op = node.op_type;
    const auto& x = *node.inputs[0];
    if (op == "Not") {
        if (x.data_type != static_cast<std::int32_t>(data_type::boolean))
            return failure(error_code::invalid_argument, "Not of non-BOOL");
        auto out = x;
        for (auto& b : out.bytes) b = b == std::byte{0} ? std::byte{1} : std::byte{0};
        return std::vector{out};
    }
    if (x.data_type == static_cast<std::int32_t>(data_type::boolean)) return refuse(std::string(op) + " of BOOL");
    return with_type(x.data_type, [&](auto tag) -> result<std::vector<host_tensor>> {
        using T = decltype(tag);
        auto v = elements_of<T>(x);
        for (auto& e : v) {
            if constexpr (std::is_floating_point_v<T>) {
                if (op == "Neg") e = -e;
                else if (op == "Abs") e = std::fabs(e);
                else if (op == "Floor") e = std::floor(e);
                else if (op == "Ceil") e = std::ceil(e);
                else if (op == "Sqrt") e = std::sqrt(e);
                else return refuse(std::string(op) + " is not folded");
            } else {
                using U = std::make_unsigned_t<T>;
                if (op == "Neg") e = wrap<T>(0 - static_cast<std::uint64_t>(static_cast<U>(e)));
                else if (op == "Abs") e = e < 0 ? wrap<T>(0 - static_cast<std::uint64_t>(static_cast<U>(e))) : e;
                else if (op == "Floor" || op == "Ceil") {
                } else return refuse(std::string(op) + " of integers is not folded");
            }
        }
        return std::vector{tensor_of(x.data_type, x.dims, v)};
    });
}

// ---------------------------------------------------------------------------------------
// Cast

template <class From, class To>
std::optional<To> convert(From v) {
    if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
        // static_cast of NaN or of a value out of range is undefined; ONNX Runtime's result
        // is then the hardware's: not folded.
        if (std::isnan(v)) return std::nullopt;
        const auto t = std::trunc(static_cast<double>(v));
        const auto lowest = static_cast<double>(std::numeric_limits<To>::min());
        const auto beyond = std::ldexp(1.0, std::numeric_limits<To>::digits);  // 2^63 for int64, 2^64 for uint64
        if (t < lowest || t >= beyond) return std::nullopt;
        return static_cast<To>(v);
    } else {
        return static_cast<To>(v);
    }
}

result<std::vector<host_tensor>> cast(const evaluated_node& node) {
    const auto& x = *node.inputs[0];
    const auto to = static_cast<std::int32_t>(int_attribute(node, "to", 0));
    const auto f16 = static_cast<std::int32_t>(data_type::float16);
    const auto f32 = static_cast<std::int32_t>(data_type::float32);
    const auto boolean = static_cast<std::int32_t>(data_type::boolean);
    if (to == x.data_type) return std::vector{x};
    if (x.data_type == f16 && to == f32) {
        std::vector<float> out;
        for (const auto h : elements_of<std::uint16_t>(x)) out.push_back(static_cast<float>(half_to_double(h)));
        return std::vector{tensor_of(f32, x.dims, out)};
    }
    if (x.data_type == f32 && to == f16) {
        std::vector<std::uint16_t> out;
        for (const auto f : elements_of<float>(x)) out.push_back(double_to_half(static_cast<double>(f)));
        return std::vector{tensor_of(f16, x.dims, out)};
    }
    if (element_size(to) == 0 || to == f16 || to == static_cast<std::int32_t>(data_type::bfloat16) || x.data_type == f16 ||
        x.data_type == static_cast<std::int32_t>(data_type::bfloat16))
        return refuse("Cast from " + onnx::data_type_name(x.data_type) + " to " + onnx::data_type_name(to) + " is not folded");
    return with_type(x.data_type, [&](auto from_tag) -> result<std::vector<host_tensor>> {
        using From = decltype(from_tag);
        const auto in = elements_of<From>(x);
        return with_type(to, [&](auto to_tag) -> result<std::vector<host_tensor>> {
            using To = decltype(to_tag);
            std::vector<To> out(in.size());
            for (std::size_t k = 0; k < in.size(); ++k) {
                if (to == boolean) {
                    out[k] = in[k] != From{0} ? 1 : 0;
                    continue;
                }
                if (x.data_type == boolean) {
                    out[k] = static_cast<To>(in[k] != 0 ? 1 : 0);
                    continue;
                }
                const auto v = convert<From, To>(in[k]);
                if (!v) return refuse("Cast of a value the target type cannot hold");
                out[k] = *v;
            }
            return std::vector{tensor_of(to, x.dims, out)};
        });
    });
}

// ---------------------------------------------------------------------------------------
// Data movement: on bytes, whatever the type.

std::uint64_t width_of(const host_tensor& t) {
    return t.elements() == 0 ? element_size(t.data_type) : t.bytes.size() / t.elements();
}

host_tensor gather_elements(const host_tensor& x, std::vector<std::int64_t> dims, std::span<const std::uint64_t> sources) {
    const auto w = width_of(x);
    host_tensor out{x.data_type, std::move(dims), std::vector<std::byte>(static_cast<std::size_t>(sources.size() * w))};
    for (std::size_t k = 0; k < sources.size(); ++k)
        std::memcpy(out.bytes.data() + k * w, x.bytes.data() + sources[k] * w, static_cast<std::size_t>(w));
    return out;
}

result<std::vector<host_tensor>> check_size(host_tensor t, std::uint64_t limit) {
    if (t.bytes.size() > limit) return refuse("the result would be larger than the fold limit");
    return std::vector{std::move(t)};
}

result<std::vector<host_tensor>> reshape_to(const host_tensor& x, std::vector<std::int64_t> dims) {
    if (count_of(dims) != x.elements()) return failure(error_code::invalid_argument, "the new shape has another element count");
    return std::vector{host_tensor{x.data_type, std::move(dims), x.bytes}};
}

result<std::vector<host_tensor>> reshape(const evaluated_node& node) {
    const auto& x = *node.inputs[0];
    const auto shape = integers(node.inputs.size() > 1 ? node.inputs[1] : nullptr);
    if (!shape) return failure(error_code::invalid_argument, "Reshape needs an integer shape");
    const bool allow_zero = int_attribute(node, "allowzero", 0) != 0;
    std::vector<std::int64_t> dims = *shape;
    std::optional<std::size_t> infer;
    std::uint64_t known = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == 0 && !allow_zero) {
            if (i >= x.dims.size()) return failure(error_code::invalid_argument, "Reshape copies a dim the input lacks");
            dims[i] = x.dims[i];
        }
        if (dims[i] == -1) {
            if (infer) return failure(error_code::invalid_argument, "Reshape with two -1 dims");
            infer = i;
        } else if (dims[i] < 0) {
            return failure(error_code::invalid_argument, "Reshape to a negative dim");
        } else {
            known *= static_cast<std::uint64_t>(dims[i]);
        }
    }
    if (infer) {
        if (known == 0 || x.elements() % known != 0)
            return failure(error_code::invalid_argument, "Reshape cannot infer the -1 dim");
        dims[*infer] = static_cast<std::int64_t>(x.elements() / known);
    }
    return reshape_to(x, std::move(dims));
}

result<std::vector<host_tensor>> squeeze_unsqueeze(const evaluated_node& node) {
    const auto& x = *node.inputs[0];
    const bool squeeze = node.op_type == "Squeeze";
    std::optional<std::vector<std::int64_t>> axes;
    if (node.opset >= 13) {
        if (node.inputs.size() > 1 && node.inputs[1] != nullptr) axes = integers(node.inputs[1]);
    } else if (const auto* a = find_attribute(node, "axes")) {
        axes = a->ints;
    }
    if (!squeeze && !axes) return failure(error_code::invalid_argument, "Unsqueeze needs axes");
    std::vector<std::int64_t> dims;
    if (squeeze) {
        std::vector<bool> drop(x.dims.size(), false);
        if (!axes) {
            for (std::size_t i = 0; i < x.dims.size(); ++i) drop[i] = x.dims[i] == 1;
        } else {
            for (const auto a : *axes) {
                const auto axis = normalize_axis(a, x.dims.size());
                if (!axis || x.dims[*axis] != 1) return failure(error_code::invalid_argument, "Squeeze of a dim that is not 1");
                drop[*axis] = true;
            }
        }
        for (std::size_t i = 0; i < x.dims.size(); ++i)
            if (!drop[i]) dims.push_back(x.dims[i]);
    } else {
        const auto rank = x.dims.size() + axes->size();
        std::vector<bool> inserted(rank, false);
        for (const auto a : *axes) {
            const auto axis = normalize_axis(a, rank);
            if (!axis || inserted[*axis]) return failure(error_code::invalid_argument, "Unsqueeze axes out of range or repeated");
            inserted[*axis] = true;
        }
        std::size_t next = 0;
        for (std::size_t i = 0; i < rank; ++i) dims.push_back(inserted[i] ? 1 : x.dims[next++]);
    }
    return reshape_to(x, std::move(dims));
}

result<std::vector<host_tensor>> flatten(const evaluated_node& node) {
    const auto& x = *node.inputs[0];
    auto axis = int_attribute(node, "axis", 1);
    const auto rank = static_cast<std::int64_t>(x.dims.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return failure(error_code::invalid_argument, "Flatten axis out of range");
    std::int64_t outer = 1;
    for (std::int64_t i = 0; i < axis; ++i) outer *= x.dims[static_cast<std::size_t>(i)];
    const auto inner = static_cast<std::int64_t>(outer == 0 ? 0 : x.elements() / static_cast<std::uint64_t>(outer));
    return reshape_to(x, {outer, inner});
}

result<std::vector<host_tensor>> concat(const evaluated_node& node, std::uint64_t limit) {
    const auto* first = node.inputs.empty() ? nullptr : node.inputs[0];
    if (first == nullptr) return failure(error_code::invalid_argument, "Concat needs inputs");
    const auto axis = normalize_axis(int_attribute(node, "axis", 0), first->dims.size());
    if (!axis) return failure(error_code::invalid_argument, "Concat axis out of range");
    auto dims = first->dims;
    dims[*axis] = 0;
    for (const auto* in : node.inputs) {
        if (in == nullptr || in->data_type != first->data_type || in->dims.size() != first->dims.size())
            return failure(error_code::invalid_argument, "Concat inputs differ in type or rank");
        for (std::size_t i = 0; i < dims.size(); ++i)
            if (i != *axis && in->dims[i] != first->dims[i])
                return failure(error_code::invalid_argument, "Concat inputs differ in shape");
        dims[*axis] += in->dims[*axis];
    }
    std::uint64_t outer = 1;
    for (std::size_t i = 0; i < *axis; ++i) outer *= static_cast<std::uint64_t>(dims[i]);
    host_tensor out{first->data_type, dims, {}};
    for (std::uint64_t o = 0; o < outer; ++o)
        for (const auto* in : node.inputs) {
            const auto block = outer == 0 ? 0 : in->bytes.size() / outer;
            const auto* begin = in->bytes.data() + o * block;
            out.bytes.insert(out.bytes.end(), begin, begin + block);
        }
    return check_size(std::move(out), limit);
}

result<std::vector<host_tensor>> gather(const evaluated_node& node, std::uint64_t limit) {
    const auto& x = *node.inputs[0];
    const auto indices = node.inputs.size() > 1 ? node.inputs[1] : nullptr;
    const auto values = integers(indices);
    if (!values) return failure(error_code::invalid_argument, "Gather needs integer indices");
    const auto axis = normalize_axis(int_attribute(node, "axis", 0), x.dims.size());
    if (!axis) return failure(error_code::invalid_argument, "Gather axis out of range");
    std::vector<std::int64_t> dims(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(*axis));
    dims.insert(dims.end(), indices->dims.begin(), indices->dims.end());
    dims.insert(dims.end(), x.dims.begin() + static_cast<std::ptrdiff_t>(*axis) + 1, x.dims.end());
    if (count_of(dims) * width_of(x) > limit) return refuse("the result would be larger than the fold limit");
    std::uint64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < *axis; ++i) outer *= static_cast<std::uint64_t>(x.dims[i]);
    for (std::size_t i = *axis + 1; i < x.dims.size(); ++i) inner *= static_cast<std::uint64_t>(x.dims[i]);
    const auto n = x.dims[*axis];
    std::vector<std::uint64_t> sources;
    for (std::uint64_t o = 0; o < outer; ++o)
        for (auto index : *values) {
            if (index < -n || index >= n) return failure(error_code::invalid_argument, "a Gather index is out of range");
            if (index < 0) index += n;
            for (std::uint64_t i = 0; i < inner; ++i)
                sources.push_back((o * static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(index)) * inner + i);
        }
    return std::vector{gather_elements(x, std::move(dims), sources)};
}

// Copies the elements of `x` selected per axis by `picks` (indices along each axis).
host_tensor select(const host_tensor& x, const std::vector<std::vector<std::int64_t>>& picks) {
    std::vector<std::int64_t> dims;
    for (const auto& p : picks) dims.push_back(static_cast<std::int64_t>(p.size()));
    const auto strides = strides_of(x.dims);
    const auto total = count_of(dims);
    std::vector<std::uint64_t> sources;
    sources.reserve(static_cast<std::size_t>(total));
    std::vector<std::size_t> index(dims.size(), 0);
    for (std::uint64_t k = 0; k < total; ++k) {
        std::uint64_t offset = 0;
        for (std::size_t d = 0; d < dims.size(); ++d) offset += static_cast<std::uint64_t>(picks[d][index[d]]) * strides[d];
        sources.push_back(offset);
        for (std::size_t d = dims.size(); d-- > 0;) {
            if (++index[d] < picks[d].size()) break;
            index[d] = 0;
        }
    }
    return gather_elements(x, std::move(dims), sources);
}

result<std::vector<host_tensor>> slice(const evaluated_node& node) {
    const auto& x = *node.inputs[0];
    std::optional<std::vector<std::int64_t>> starts, ends, axes, steps;
    if (node.opset >= 10) {
        auto input = [&](std::size_t k) { return k < node.inputs.size() ? integers(node.inputs[k]) : std::nullopt; };
        starts = input(1);
        ends = input(2);
        axes = input(3);
        steps = input(4);
    } else {
        if (const auto* a = find_attribute(node, "starts")) starts = a->ints;
        if (const auto* a = find_attribute(node, "ends")) ends = a->ints;
        if (const auto* a = find_attribute(node, "axes")) axes = a->ints;
    }
    if (!starts || !ends || starts->size() != ends->size())
        return failure(error_code::invalid_argument, "Slice needs starts and ends");
    if (!axes) {
        axes.emplace(starts->size());
        std::iota(axes->begin(), axes->end(), 0);
    }
    if (!steps) steps.emplace(starts->size(), 1);
    if (axes->size() != starts->size() || steps->size() != starts->size())
        return failure(error_code::invalid_argument, "Slice inputs differ in length");
    std::vector<std::vector<std::int64_t>> picks(x.dims.size());
    std::vector<bool> sliced(x.dims.size(), false);
    for (std::size_t i = 0; i < x.dims.size(); ++i) {
        picks[i].resize(static_cast<std::size_t>(x.dims[i]));
        std::iota(picks[i].begin(), picks[i].end(), 0);
    }
    for (std::size_t k = 0; k < starts->size(); ++k) {
        const auto axis = normalize_axis((*axes)[k], x.dims.size());
        if (!axis || sliced[*axis]) return failure(error_code::invalid_argument, "Slice axes out of range or repeated");
        sliced[*axis] = true;
        const auto dim = x.dims[*axis];
        const auto step = (*steps)[k];
        if (step == 0) return failure(error_code::invalid_argument, "Slice with step 0");
        auto start = (*starts)[k];
        auto end = (*ends)[k];
        if (start < 0) start = start < -dim ? -dim - 1 : start + dim;  // saturate below
        if (end < 0) end = end < -dim ? -dim - 1 : end + dim;
        if (step > 0) {
            start = std::clamp<std::int64_t>(start, 0, dim);
            end = std::clamp<std::int64_t>(end, 0, dim);
        } else {
            start = std::clamp<std::int64_t>(start, 0, dim - 1);
            end = std::clamp<std::int64_t>(end, -1, dim - 1);
        }
        auto& p = picks[*axis];
        p.clear();
        for (auto i = start; step > 0 ? i < end : i > end; i += step) p.push_back(i);
    }
    return std::vector{select(x, picks)};
}

result<std::vector<host_tensor>> transpose(const evaluated_node& node) {
    const auto& x = *node.inputs[0];
    std::vector<std::int64_t> perm(x.dims.size());
    std::iota(perm.rbegin(), perm.rend(), 0);
    if (const auto* a = find_attribute(node, "perm")) perm = a->ints;
    if (perm.size() != x.dims.size()) return failure(error_code::invalid_argument, "Transpose perm of another rank");
    std::vector<bool> seen(perm.size(), false);
    std::vector<std::int64_t> dims;
    for (const auto p : perm) {
        if (p < 0 || static_cast<std::size_t>(p) >= perm.size() || seen[static_cast<std::size_t>(p)])
            return failure(error_code::invalid_argument, "Transpose perm is not a permutation");
        seen[static_cast<std::size_t>(p)] = true;
        dims.push_back(x.dims[static_cast<std::size_t>(p)]);
    }
    const auto in_strides = strides_of(x.dims);
    const auto total = count_of(dims);
    std::vector<std::uint64_t> sources;
    std::vector<std::int64_t> index(dims.size(), 0);
    for (std::uint64_t k = 0; k < total; ++k) {
        std::uint64_t offset = 0;
        for (std::size_t d = 0; d < dims.size(); ++d)
            offset += static_cast<std::uint64_t>(index[d]) * in_strides[static_cast<std::size_t>(perm[d])];
        sources.push_back(offset);
        for (std::size_t d = dims.size(); d-- > 0;) {
            if (++index[d] < dims[d]) break;
            index[d] = 0;
        }
    }
    return std::vector{gather_elements(x, std::move(dims), sources)};
}

result<std::vector<host_tensor>> expand_or_tile(const evaluated_node& node, std::uint64_t limit) {
    const auto& x = *node.inputs[0];
    const auto shape = integers(node.inputs.size() > 1 ? node.inputs[1] : nullptr);
    if (!shape) return failure(error_code::invalid_argument, std::string(node.op_type) + " needs an integer shape");
    std::vector<std::int64_t> dims;
    std::vector<std::uint64_t> sources;
    if (node.op_type == "Expand") {
        for (const auto d : *shape)
            if (d < 0) return failure(error_code::invalid_argument, "Expand to a negative dim");
        const std::vector<std::vector<std::int64_t>> shapes{x.dims, *shape};
        const auto out = broadcast_shape(shapes);
        if (!out) return failure(error_code::invalid_argument, "Expand's shape does not broadcast");
        dims = *out;
        if (count_of(dims) * width_of(x) > limit) return refuse("the result would be larger than the fold limit");
        sources = broadcast_offsets(x.dims, dims);
    } else {
        if (shape->size() != x.dims.size()) return failure(error_code::invalid_argument, "Tile repeats of another rank");
        std::vector<std::vector<std::int64_t>> picks(x.dims.size());
        std::uint64_t total = 1;
        for (std::size_t i = 0; i < x.dims.size(); ++i) {
            if ((*shape)[i] < 0) return failure(error_code::invalid_argument, "Tile with negative repeats");
            total *= static_cast<std::uint64_t>(x.dims[i]) * static_cast<std::uint64_t>((*shape)[i]);
            if (total * width_of(x) > limit) return refuse("the result would be larger than the fold limit");
        }
        for (std::size_t i = 0; i < x.dims.size(); ++i)
            for (std::int64_t r = 0; r < (*shape)[i]; ++r)
                for (std::int64_t j = 0; j < x.dims[i]; ++j) picks[i].push_back(j);
        return std::vector{select(x, picks)};
    }
    return std::vector{gather_elements(x, std::move(dims), sources)};
}

result<std::vector<host_tensor>> where(const evaluated_node& node, std::uint64_t limit) {
    if (node.inputs.size() != 3 || node.inputs[0] == nullptr || node.inputs[1] == nullptr || node.inputs[2] == nullptr)
        return failure(error_code::invalid_argument, "Where needs three inputs");
    const auto& c = *node.inputs[0];
    const auto& a = *node.inputs[1];
    const auto& b = *node.inputs[2];
    if (a.data_type != b.data_type || c.data_type != static_cast<std::int32_t>(data_type::boolean))
        return failure(error_code::invalid_argument, "Where's inputs have the wrong types");
    const std::vector<std::vector<std::int64_t>> shapes{c.dims, a.dims, b.dims};
    const auto dims = broadcast_shape(shapes);
    if (!dims) return failure(error_code::invalid_argument, "Where's inputs do not broadcast");
    const auto w = width_of(a);
    if (count_of(*dims) * w > limit) return refuse("the result would be larger than the fold limit");
    const auto ic = broadcast_offsets(c.dims, *dims);
    const auto ia = broadcast_offsets(a.dims, *dims);
    const auto ib = broadcast_offsets(b.dims, *dims);
    host_tensor out{a.data_type, *dims, std::vector<std::byte>(ic.size() * w)};
    for (std::size_t k = 0; k < ic.size(); ++k) {
        const auto& from = c.bytes[ic[k]] != std::byte{0} ? a : b;
        const auto at = c.bytes[ic[k]] != std::byte{0} ? ia[k] : ib[k];
        std::memcpy(out.bytes.data() + k * w, from.bytes.data() + at * w, static_cast<std::size_t>(w));
    }
    return std::vector{std::move(out)};
}

// ---------------------------------------------------------------------------------------
// Generators and reductions

result<std::vector<host_tensor>> constant_of_shape(const evaluated_node& node, std::uint64_t limit) {
    const auto shape = integers(node.inputs.empty() ? nullptr : node.inputs[0]);
    if (!shape) return failure(error_code::invalid_argument, "ConstantOfShape needs an integer shape");
    for (const auto d : *shape)
        if (d < 0) return failure(error_code::invalid_argument, "ConstantOfShape with a negative dim");
    host_tensor value{static_cast<std::int32_t>(data_type::float32), {1}, std::vector<std::byte>(4)};
    if (node.value_attribute) value = *node.value_attribute;
    if (value.elements() != 1 || element_size(value.data_type) == 0)
        return refuse("ConstantOfShape with a value that is not one fixed-width element");
    const auto count = count_of(*shape);
    if (count * value.bytes.size() > limit) return refuse("the result would be larger than the fold limit");
    host_tensor out{value.data_type, *shape, {}};
    out.bytes.reserve(static_cast<std::size_t>(count * value.bytes.size()));
    for (std::uint64_t k = 0; k < count; ++k) out.bytes.insert(out.bytes.end(), value.bytes.begin(), value.bytes.end());
    return std::vector{std::move(out)};
}

result<std::vector<host_tensor>> range(const evaluated_node& node, std::uint64_t limit) {
    if (node.inputs.size() != 3 || node.inputs[0] == nullptr || node.inputs[1] == nullptr || node.inputs[2] == nullptr)
        return failure(error_code::invalid_argument, "Range needs three inputs");
    const auto type = node.inputs[0]->data_type;
    for (const auto* in : node.inputs)
        if (in->data_type != type || in->elements() != 1)
            return failure(error_code::invalid_argument, "Range needs three scalars of one type");
    if (type == static_cast<std::int32_t>(data_type::boolean)) return refuse("Range of BOOL");
    return with_type(type, [&](auto tag) -> result<std::vector<host_tensor>> {
        using T = decltype(tag);
        const T start = elements_of<T>(*node.inputs[0])[0];
        const T end = elements_of<T>(*node.inputs[1])[0];
        const T delta = elements_of<T>(*node.inputs[2])[0];
        if (delta == T{0}) return failure(error_code::invalid_argument, "Range with delta 0");
        // As ONNX Runtime: the count from the difference in double, values by repeated addition.
        // `limit - start` as C++ computes it in ONNX Runtime: in int for the narrow types,
        // wrapping in the type for the others.
        double span = 0;
        if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(int)) span = static_cast<double>(int{end} - int{start});
        else span = static_cast<double>(*arithmetic<T>("Sub", end, start));
        const double steps = std::ceil(span / static_cast<double>(delta));
        const auto n = steps > 0 ? steps : 0.0;
        if (n * sizeof(T) > static_cast<double>(limit)) return refuse("the result would be larger than the fold limit");
        std::vector<T> out(static_cast<std::size_t>(n));
        T value = start;
        for (auto& e : out) {
            e = value;
            if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(int)) value = static_cast<T>(value + delta);
            else value = *arithmetic<T>("Add", value, delta);
        }
        return std::vector{tensor_of(type, {static_cast<std::int64_t>(out.size())}, out)};
    });
}

result<std::vector<host_tensor>> reduce(const evaluated_node& node) {
    const auto& x = *node.inputs[0];
    const auto op = node.op_type;
    std::optional<std::vector<std::int64_t>> axes;
    const bool axes_as_input = node.opset >= 18 || (op == "ReduceSum" && node.opset >= 13);
    if (axes_as_input) {
        if (node.inputs.size() > 1 && node.inputs[1] != nullptr) axes = integers(node.inputs[1]);
    } else if (const auto* a = find_attribute(node, "axes")) {
        axes = a->ints;
    }
    const bool keep = int_attribute(node, "keepdims", 1) != 0;
    if ((!axes || axes->empty()) && int_attribute(node, "noop_with_empty_axes", 0) != 0) return std::vector{x};
    std::vector<bool> reduced(x.dims.size(), !axes || axes->empty());
    if (axes)
        for (const auto a : *axes) {
            const auto axis = normalize_axis(a, x.dims.size());
            if (!axis) return failure(error_code::invalid_argument, "reduction axis out of range");
            reduced[*axis] = true;
        }
    std::vector<std::int64_t> dims, kept;
    std::uint64_t group = 1;
    for (std::size_t i = 0; i < x.dims.size(); ++i) {
        if (reduced[i]) group *= static_cast<std::uint64_t>(x.dims[i]);
        if (!reduced[i]) dims.push_back(x.dims[i]);
        kept.push_back(reduced[i] ? 1 : x.dims[i]);
    }
    if (group == 0 && (op == "ReduceMin" || op == "ReduceMax")) return refuse(std::string(op) + " of nothing");
    if (x.data_type == static_cast<std::int32_t>(data_type::boolean)) return refuse(std::string(op) + " of BOOL");
    return with_type(x.data_type, [&](auto tag) -> result<std::vector<host_tensor>> {
        using T = decltype(tag);
        if constexpr (std::is_floating_point_v<T>)
            if (group > 2 && (op == "ReduceSum" || op == "ReduceProd"))
                return refuse("a float reduction of more than two elements (ONNX Runtime's summation order differs)");
        const auto v = elements_of<T>(x);
        // Each input element's output: its index with the reduced axes zeroed.
        const auto out_count = count_of(kept);
        std::vector<T> out(static_cast<std::size_t>(out_count), op == "ReduceProd" ? T{1} : T{0});
        std::vector<bool> started(out.size(), false);
        const auto out_strides = strides_of(kept);
        std::vector<std::int64_t> index(x.dims.size(), 0);
        for (std::size_t k = 0; k < v.size(); ++k) {
            std::uint64_t o = 0;
            for (std::size_t d = 0; d < index.size(); ++d)
                if (!reduced[d]) o += static_cast<std::uint64_t>(index[d]) * out_strides[d];
            auto& acc = out[static_cast<std::size_t>(o)];
            if (op == "ReduceSum") acc = *arithmetic<T>("Add", acc, v[k]);
            else if (op == "ReduceProd") acc = *arithmetic<T>("Mul", acc, v[k]);
            else if (!started[o]) acc = v[k];
            else if constexpr (std::is_floating_point_v<T>) {
                if (std::isnan(v[k]) || std::isnan(acc)) return refuse(std::string(op) + " of NaN");
                acc = op == "ReduceMin" ? std::min(acc, v[k]) : std::max(acc, v[k]);
            } else {
                acc = op == "ReduceMin" ? std::min(acc, v[k]) : std::max(acc, v[k]);
            }
            started[o] = true;
            for (std::size_t d = index.size(); d-- > 0;) {
                if (++index[d] < x.dims[d]) break;
                index[d] = 0;
            }
        }
        return std::vector{tensor_of(x.data_type, keep ? kept : dims, out)};
    });
}

}  // namespace

std::uint64_t host_tensor::elements() const noexcept { return count_of(dims); }

bool can_evaluate(std::string_view op_type) noexcept {
    return std::find(evaluated_ops.begin(), evaluated_ops.end(), op_type) != evaluated_ops.end();
}

host_tensor shape_tensor(std::span<const std::int64_t> dims, std::int64_t start, std::int64_t end) {
    const auto rank = static_cast<std::int64_t>(dims.size());
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<std::int64_t>(start, 0, rank);
    end = std::clamp<std::int64_t>(end, 0, rank);
    std::vector<std::int64_t> values;
    for (auto i = start; i < end; ++i) values.push_back(dims[static_cast<std::size_t>(i)]);
    return tensor_of(static_cast<std::int32_t>(data_type::int64), {static_cast<std::int64_t>(values.size())}, values);
}

result<std::vector<host_tensor>> evaluate(const evaluated_node& node, std::uint64_t limit) {
    const auto op = node.op_type;
    if (!can_evaluate(op)) return refuse(std::string(op) + " is not folded");
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        const auto* in = node.inputs[k];
        if (in == nullptr) continue;
        if (element_size(in->data_type) == 0)
            return refuse("inputs of type " + onnx::data_type_name(in->data_type) + " are not folded");
        if (in->bytes.size() != in->elements() * element_size(in->data_type))
            return failure(error_code::invalid_argument, "an input's bytes do not match its shape");
    }
    const bool needs_first = op != "ConstantOfShape" && op != "Concat";
    if (needs_first && (node.inputs.empty() || node.inputs[0] == nullptr))
        return failure(error_code::invalid_argument, std::string(op) + " needs an input");
    const auto* first = node.inputs.empty() ? nullptr : node.inputs[0];
    const auto f16 = static_cast<std::int32_t>(data_type::float16);
    const bool moves_data = op == "Identity" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" ||
                            op == "Concat" || op == "Gather" || op == "Slice" || op == "Transpose" || op == "Expand" ||
                            op == "Tile" || op == "Where" || op == "Cast" || op == "Shape" || op == "Size";
    if (!moves_data && first != nullptr &&
        (first->data_type == f16 || first->data_type == static_cast<std::int32_t>(data_type::bfloat16)))
        return refuse(std::string(op) + " of " + onnx::data_type_name(first->data_type) + " is not folded");

    if (op == "Identity") return std::vector{*first};
    if (op == "Shape")
        return std::vector{shape_tensor(first->dims, int_attribute(node, "start", 0),
                                        int_attribute(node, "end", std::numeric_limits<std::int64_t>::max()))};
    if (op == "Size") {
        const std::vector<std::int64_t> size{static_cast<std::int64_t>(first->elements())};
        return std::vector{tensor_of(static_cast<std::int32_t>(data_type::int64), {}, size)};
    }
    if (op == "Reshape") return reshape(node);
    if (op == "Squeeze" || op == "Unsqueeze") return squeeze_unsqueeze(node);
    if (op == "Flatten") return flatten(node);
    if (op == "Concat") return concat(node, limit);
    if (op == "Gather") return gather(node, limit);
    if (op == "Slice") return slice(node);
    if (op == "Transpose") return transpose(node);
    if (op == "Expand" || op == "Tile") return expand_or_tile(node, limit);
    if (op == "Where") return where(node, limit);
    if (op == "Cast") return cast(node);
    if (op == "ConstantOfShape") return constant_of_shape(node, limit);
    if (op == "Range") return range(node, limit);
    if (op.starts_with("Reduce")) return reduce(node);
    if (op == "Neg" || op == "Abs" || op == "Floor" || op == "Ceil" || op == "Sqrt" || op == "Not") return unary(node);
    if (op == "And" || op == "Or") {
        if (node.inputs.size() != 2 || node.inputs[1] == nullptr ||
            first->data_type != static_cast<std::int32_t>(data_type::boolean) || node.inputs[1]->data_type != first->data_type)
            return failure(error_code::invalid_argument, std::string(op) + " needs two BOOL inputs");
        // As Min/Max of 0/1 bytes.
        evaluated_node as = node;
        as.op_type = op == "And" ? "Min" : "Max";
        auto a = *first, b = *node.inputs[1];
        a.data_type = b.data_type = static_cast<std::int32_t>(data_type::uint8);
        as.inputs = {&a, &b};
        ONNXSTREAM_ASSIGN(auto out, elementwise(as, limit));
        out[0].data_type = static_cast<std::int32_t>(data_type::boolean);
        return out;
    }
    return elementwise(node, limit);
}

}  // namespace onnxstream::passes
