#include <onnxstream/graph/value_shapes.hpp>

#include "shape_inference.hpp"

#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

namespace onnxstream::graph {

using detail::dim_list;
using onnx::data_type;

bool value_shape::fully_known() const {
    return data_type != 0 && dims && std::all_of(dims->begin(), dims->end(), [](std::int64_t d) { return d >= 0; });
}

std::size_t shape_table::shape_hash::operator()(const value_shape& s) const noexcept {
    // FNV-1a style, a 64-bit word at a time: the type, whether the rank is known, the dims.
    std::uint64_t h = 0xcbf29ce484222325ULL;
    const auto mix = [&h](std::uint64_t x) { h = (h ^ x) * 0x100000001b3ULL; };
    mix(static_cast<std::uint32_t>(s.data_type));
    mix(s.dims ? s.dims->size() : ~std::uint64_t{0});
    if (s.dims)
        for (const auto d : *s.dims) mix(static_cast<std::uint64_t>(d));
    return static_cast<std::size_t>(h);
}

std::int64_t shape_table::symbol(std::string_view name) {
    if (name.empty()) return unknown_dim;
    const auto [it, added] = symbol_numbers_.try_emplace(std::string(name), static_cast<std::uint32_t>(symbols_.size()));
    if (added) symbols_.emplace_back(name);
    return symbol_dim(it->second);
}

std::string_view shape_table::symbol_name(std::int64_t dim) const noexcept {
    if (!is_symbol(dim)) return {};
    const auto k = static_cast<std::uint64_t>(-2 - dim);
    return k < symbols_.size() ? std::string_view(symbols_[k]) : std::string_view{};
}

void shape_table::set(value_id v, value_shape shape) {
    auto& slot = slots_[v.value];
    if (shape.data_type == 0 && !shape.dims) {
        slot = unknown_slot;
        return;
    }
    const auto [it, added] = lookup_.try_emplace(std::move(shape), static_cast<std::uint32_t>(distinct_.size()));
    if (added) distinct_.push_back(&it->first);
    slot = it->second;
}

void shape_table::set_same(value_id v, value_id from) { slots_[v.value] = from == none ? unknown_slot : slots_[from.value]; }

proto::encoded_message encode_type(const value_shape& shape, const shape_table& table) {
    using onnx::number;
    proto::encoded_message tensor_type;
    tensor_type.varint_field(number(onnx::tensor_type_field::elem_type), static_cast<std::uint64_t>(shape.data_type));
    if (shape.dims) {
        proto::encoded_message dims;
        for (const auto d : *shape.dims) {
            proto::encoded_message dim;
            if (d >= 0) dim.varint_field(number(onnx::dimension_field::dim_value), static_cast<std::uint64_t>(d));
            else if (is_symbol(d)) dim.text_field(number(onnx::dimension_field::dim_param), table.symbol_name(d));
            dims.message_field(number(onnx::shape_field::dim), dim);
        }
        tensor_type.message_field(number(onnx::tensor_type_field::shape), dims);
    }
    proto::encoded_message type;
    type.message_field(number(onnx::type_field::tensor_type), tensor_type);
    return type;
}

std::optional<std::vector<std::int64_t>> constant_integers(const graph_model& model, const graph_index& index,
                                                           const tensor_reader& reader, value_id v, std::uint64_t max_elements) {
    const auto c = find_constant(model, index, v);
    if (!c || c->element_count > max_elements) return std::nullopt;
    const auto i64 = static_cast<std::int32_t>(data_type::int64);
    const auto i32 = static_cast<std::int32_t>(data_type::int32);
    if (c->data_type != i64 && c->data_type != i32) return std::nullopt;
    if (c->inline_values) {
        // value_int(s): read the attribute itself, doubles lose large integers.
        const auto attributes = model.attribute_messages(c->node);
        if (attributes.size() != 1) return std::nullopt;
        const auto a = read_attribute(model.tree(), attributes[0]);
        if (a.i) return std::vector<std::int64_t>{*a.i};
        return a.ints;
    }
    auto bytes = c->tensor != none ? reader.tensor_bytes(model, c->tensor) : reader.site_bytes(c->site);
    const auto width = c->data_type == i64 ? 8U : 4U;
    if (!bytes || bytes->size() != c->element_count * width) return std::nullopt;
    std::vector<std::int64_t> out;
    for (std::uint64_t k = 0; k < c->element_count; ++k) {
        if (width == 8) {
            std::int64_t x = 0;
            std::memcpy(&x, bytes->data() + k * 8, 8);
            out.push_back(x);
        } else {
            std::int32_t x = 0;
            std::memcpy(&x, bytes->data() + k * 4, 4);
            out.push_back(x);
        }
    }
    return out;
}

namespace {

// A ValueInfoProto's tensor type: elem_type and shape (dim_param a symbol of `table`,
// missing dims unknown).
value_shape declared_shape(const onnx::message_tree& tree, std::uint32_t value_info, shape_table& table) {
    value_shape out;
    const auto* type = tree.find(value_info, onnx::number(onnx::value_info_field::type));
    if (type == nullptr || type->type() != proto::wire_type::length_delimited) return out;
    auto fields_of = [&](const proto::field_token& t) {
        std::vector<proto::field_token> inner;
        if (!proto::tokenize(tree.bytes(), t.payload_offset, t.end_offset(), inner)) inner.clear();
        return inner;
    };
    for (const auto& tt : fields_of(tree.token(*type))) {
        if (tt.number != onnx::number(onnx::type_field::tensor_type) || tt.type != proto::wire_type::length_delimited) continue;
        for (const auto& f : fields_of(tt)) {
            if (f.number == onnx::number(onnx::tensor_type_field::elem_type) && f.type == proto::wire_type::varint)
                out.data_type = static_cast<std::int32_t>(f.value);
            if (f.number != onnx::number(onnx::tensor_type_field::shape) || f.type != proto::wire_type::length_delimited)
                continue;
            out.dims.emplace();
            for (const auto& d : fields_of(f)) {
                if (d.number != onnx::number(onnx::shape_field::dim) || d.type != proto::wire_type::length_delimited) continue;
                std::int64_t dim = unknown_dim;
                for (const auto& x : fields_of(d)) {
                    if (x.number == onnx::number(onnx::dimension_field::dim_value) && x.type == proto::wire_type::varint &&
                        static_cast<std::int64_t>(x.value) >= 0)
                        dim = static_cast<std::int64_t>(x.value);
                    else if (x.number == onnx::number(onnx::dimension_field::dim_param) &&
                             x.type == proto::wire_type::length_delimited)
                        dim = table.symbol(std::string_view(reinterpret_cast<const char*>(tree.bytes().data() + x.payload_offset),
                                                            static_cast<std::size_t>(x.end_offset() - x.payload_offset)));
                }
                out.dims->push_back(dim);
            }
        }
    }
    return out;
}

bool is_passthrough(std::string_view op) {
    static constexpr std::string_view ops[] = {"Relu",
                                               "Sigmoid",
                                               "Tanh",
                                               "Exp",
                                               "Log",
                                               "Neg",
                                               "Abs",
                                               "Sqrt",
                                               "Erf",
                                               "Identity",
                                               "Softmax",
                                               "LogSoftmax",
                                               "LeakyRelu",
                                               "Clip",
                                               "HardSigmoid",
                                               "Reciprocal",
                                               "Floor",
                                               "Ceil",
                                               "Sin",
                                               "Cos",
                                               "Tan",
                                               "Asin",
                                               "Acos",
                                               "Atan",
                                               "Sinh",
                                               "Cosh",
                                               "Asinh",
                                               "Acosh",
                                               "Atanh",
                                               "Elu",
                                               "Selu",
                                               "Celu",
                                               "Softplus",
                                               "Softsign",
                                               "HardSwish",
                                               "Mish",
                                               "Gelu",
                                               "ThresholdedRelu",
                                               "Shrink",
                                               "Round",
                                               "Sign",
                                               "LayerNormalization",
                                               "BatchNormalization",
                                               "Dropout",
                                               "InstanceNormalization",
                                               "PRelu",
                                               "LRN",
                                               "Hardmax",
                                               "LpNormalization",
                                               "MeanVarianceNormalization",
                                               "CumSum",
                                               "Trilu",
                                               "ScatterND",
                                               "ScatterElements",
                                               "Scatter",
                                               "ReverseSequence"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

bool is_broadcasting(std::string_view op) {
    static constexpr std::string_view ops[] = {
        "Add", "Sub",  "Mul",      "Div",        "Pow",       "Max",       "Min",         "Mod",
        "And", "Or",   "Xor",      "Equal",      "Less",      "Greater",   "LessOrEqual", "GreaterOrEqual",
        "Sum", "Mean", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

bool is_boolean_result(std::string_view op) {
    return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "And" ||
           op == "Or" || op == "Xor" || op == "Not" || op == "IsNaN" || op == "IsInf";
}

bool is_reduction(std::string_view op) {
    static constexpr std::string_view ops[] = {"ReduceMean", "ReduceSum", "ReduceMax",    "ReduceMin",       "ReduceProd",
                                               "ReduceL1",   "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

constexpr auto int64_type = static_cast<std::int32_t>(data_type::int64);

}  // namespace

namespace detail {

std::optional<std::size_t> axis_of(std::int64_t axis, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r) return std::nullopt;
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::optional<dim_list> broadcast(const std::vector<const value_shape*>& in) {
    std::size_t rank = 0;
    for (const auto* s : in) {
        if (!s->dims) return std::nullopt;
        rank = std::max(rank, s->dims->size());
    }
    dim_list out(rank, 1);
    for (std::size_t i = 0; i < rank; ++i) {
        std::int64_t number = 1;
        std::int64_t first_other = unknown_dim;
        int others = 0;  // distinct symbols or unknowns, as onnx counts them
        for (const auto* s : in) {
            const auto r = s->dims->size();
            if (i < rank - r) continue;
            const auto d = (*s->dims)[i - (rank - r)];
            if (d >= 0) {
                if (d == 1) continue;
                if (number != 1 && number != d) return std::nullopt;  // would not broadcast: leave unknown
                number = d;
            } else if (others == 0) {
                first_other = d;
                others = 1;
            } else if (d != first_other) {
                ++others;
            }
        }
        out[i] = number != 1 || others == 0 ? number : others == 1 ? first_other : unknown_dim;
    }
    return out;
}

const value_shape& inference::of(node_id n, std::size_t slot) const {
    static const value_shape unknown;
    const auto v = has_input(n, slot) ? index.input(n, slot) : none;
    return v == none ? unknown : shapes[v];
}

bool inference::has_input(node_id n, std::size_t slot) const {
    return slot < model.nodes[n].inputs.size() && model.nodes[n].inputs[slot] != empty_name;
}

std::optional<dim_list> inference::ints(node_id n, std::size_t slot, std::uint64_t max) const {
    if (!has_input(n, slot)) return std::nullopt;
    return constant_integers(model, index, reader, index.input(n, slot), max);
}

std::optional<std::vector<double>> inference::floats(node_id n, std::size_t slot, std::uint64_t max) const {
    if (!has_input(n, slot)) return std::nullopt;
    const auto c = find_constant(model, index, index.input(n, slot));
    if (!c || c->element_count > max) return std::nullopt;
    auto values = constant_elements(model, reader, *c, max);
    if (!values) return std::nullopt;
    return std::move(*values);
}

std::int64_t inference::attr_i(node_id n, std::string_view name, std::int64_t fallback) const {
    const auto a = model.attribute(n, name);
    return a && a->i ? *a->i : fallback;
}

std::optional<dim_list> inference::attr_ints(node_id n, std::string_view name) const {
    auto a = model.attribute(n, name);
    if (!a) return std::nullopt;
    return std::move(a->ints);
}

std::vector<value_shape> inference::infer(node_id n) const {
    const auto& op = model.nodes[n].op_type();
    const auto& x = of(n, 0);
    if (op == "Dropout" && model.nodes[n].outputs.size() > 1) return {x, {static_cast<std::int32_t>(data_type::boolean), x.dims}};
    if (is_passthrough(op)) return {x};
    if (op == "Not" || op == "IsNaN" || op == "IsInf") return {{static_cast<std::int32_t>(data_type::boolean), x.dims}};
    if (op == "Cast") return {{static_cast<std::int32_t>(attr_i(n, "to", 0)), x.dims}};
    if (op == "CastLike") return {{of(n, 1).data_type, x.dims}};
    if (op == "Size") return {{int64_type, dim_list{}}};
    if (op == "Range") return {range(n, x)};
    if (is_broadcasting(op) || op == "Where") return {elementwise(n, x)};
    if (op == "Shape") return {shape_of(n, x)};
    if (op == "Transpose") return {transpose(n, x)};
    if (op == "Unsqueeze" || op == "Squeeze") return {squeeze(n, x)};
    if (op == "Reshape") return {reshape(n, x)};
    if (op == "Flatten") return {flatten(n, x)};
    if (op == "Concat") return {concat(n, x)};
    if (op == "Gather") return {gather(n, x)};
    if (op == "GatherElements") return {{x.data_type, of(n, 1).dims}};
    if (op == "Slice") return {slice(n, x)};
    if (op == "Expand") return {expand(n, x)};
    if (op == "MatMul") return {matmul(n, x)};
    if (is_reduction(op)) return {reduce(n, x)};
    if (op == "ConstantOfShape") return {constant_of_shape(n)};
    if (op == "NonZero")
        return {{int64_type,
                 x.dims ? std::optional(dim_list{static_cast<std::int64_t>(x.dims->size()), unknown_dim}) : std::nullopt}};
    if (op == "Conv") return {conv(n, x)};
    if (op == "ConvTranspose") return {conv_transpose(n, x)};
    if (op == "MaxPool") return {pool(n, x), {int64_type, pool(n, x).dims}};
    if (op == "AveragePool" || op == "LpPool") return {pool(n, x)};
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "GlobalLpPool") return {global_pool(x)};
    if (op == "Resize" || op == "Upsample") return {resize(n, x)};
    if (op == "Gemm") return {gemm(n, x)};
    if (op == "ArgMax" || op == "ArgMin") return {arg_reduce(n, x)};
    if (op == "Split") return split(n, x);
    if (op == "Pad") return {pad(n, x)};
    if (op == "Tile") return {tile(n, x)};
    if (op == "TopK") return top_k(n, x);
    if (op == "LSTM" || op == "GRU" || op == "RNN") return recurrent(n, x);
    if (op == "If") return if_branches(n);
    if (op == "DepthToSpace" || op == "SpaceToDepth") return {space_depth(n, x)};
    return {};
}

// Broadcasting operators and Where: the inputs' shapes broadcast; Where's type is its second input's.
value_shape inference::elementwise(node_id n, const value_shape& x) const {
    const auto& nd = model.nodes[n];
    const auto& op = nd.op_type();
    value_shape out;
    std::vector<const value_shape*> in;
    for (std::size_t k = 0; k < nd.inputs.size(); ++k) in.push_back(&of(n, k));
    out.data_type = op == "Where"           ? of(n, 1).data_type
                    : is_boolean_result(op) ? static_cast<std::int32_t>(data_type::boolean)
                                            : x.data_type;
    out.dims = broadcast(in);
    return out;
}

// Shape: a 1-D int64 of the rank between start and end (of unknown length when the rank is).
value_shape inference::shape_of(node_id n, const value_shape& x) const {
    value_shape out{int64_type, dim_list{unknown_dim}};
    if (x.dims) {
        const auto rank = static_cast<std::int64_t>(x.dims->size());
        auto start = attr_i(n, "start", 0), end = attr_i(n, "end", rank);
        if (start < 0) start += rank;
        if (end < 0) end += rank;
        start = std::clamp<std::int64_t>(start, 0, rank);
        end = std::clamp<std::int64_t>(end, 0, rank);
        out.dims = dim_list{std::max<std::int64_t>(end - start, 0)};
    }
    return out;
}

// Transpose by perm (default: reversed).
value_shape inference::transpose(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    dim_list perm(x.dims->size());
    for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(perm.size() - 1 - i);
    if (const auto a = model.attribute(n, "perm")) perm = a->ints;
    if (perm.size() != x.dims->size()) return out;
    dim_list dims;
    for (const auto p : perm) {
        if (p < 0 || static_cast<std::size_t>(p) >= perm.size()) return out;
        dims.push_back((*x.dims)[static_cast<std::size_t>(p)]);
    }
    out.dims = dims;
    return out;
}

// Squeeze and Unsqueeze, with axes from the attribute (opset < 13) or the second input;
// Squeeze without axes drops the 1s when every dim is known.
value_shape inference::squeeze(node_id n, const value_shape& x) const {
    const auto& op = model.nodes[n].op_type();
    value_shape out{x.data_type, std::nullopt};
    std::optional<dim_list> axes;
    const bool axes_given = opset() >= 13 ? has_input(n, 1) : model.attribute(n, "axes").has_value();
    if (opset() >= 13) axes = ints(n, 1);
    else axes = attr_ints(n, "axes");
    if (!x.dims) return out;
    dim_list dims;
    if (op == "Squeeze" && !axes_given) {
        for (const auto d : *x.dims) {
            if (d < 0) return out;
            if (d != 1) dims.push_back(d);
        }
        out.dims = dims;
        return out;
    }
    if (!axes) return out;
    if (op == "Squeeze") {
        std::vector<bool> drop(x.dims->size(), false);
        for (const auto a : *axes) {
            const auto axis = axis_of(a, x.dims->size());
            if (!axis) return out;
            drop[*axis] = true;
        }
        for (std::size_t i = 0; i < drop.size(); ++i)
            if (!drop[i]) dims.push_back((*x.dims)[i]);
    } else {
        const auto rank = x.dims->size() + axes->size();
        std::vector<bool> added(rank, false);
        for (const auto a : *axes) {
            const auto axis = axis_of(a, rank);
            if (!axis) return out;
            added[*axis] = true;
        }
        std::size_t next = 0;
        for (std::size_t i = 0; i < rank; ++i) {
            if (!added[i] && next >= x.dims->size()) return out;
            dims.push_back(added[i] ? 1 : (*x.dims)[next++]);
        }
    }
    out.dims = dims;
    return out;
}

// Reshape: 0 copies the input's dim (unless allowzero), -1 is inferred when the rest is known.
value_shape inference::reshape(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto shape = ints(n, 1);
    if (!shape) {
        // A shape computed at run time: its length is the rank (as onnx infers it).
        const auto& s = of(n, 1);
        if (s.dims && s.dims->size() == 1 && (*s.dims)[0] >= 0)
            out.dims = dim_list(static_cast<std::size_t>((*s.dims)[0]), unknown_dim);
        return out;
    }
    dim_list dims = *shape;
    const bool allow_zero = attr_i(n, "allowzero", 0) != 0;
    // A product past 64 bits (a hostile shape such as [2^40, 2^40, -1]) infers nothing.
    std::int64_t known = 1;
    bool overflows = false;
    std::optional<std::size_t> infer_at;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == 0 && !allow_zero) dims[i] = x.dims && i < x.dims->size() ? (*x.dims)[i] : unknown_dim;
        if ((*shape)[i] == -1) infer_at = i;
        else if ((*shape)[i] < -1) return out;  // no valid shape
        else if (dims[i] >= 0) overflows = __builtin_mul_overflow(known, dims[i], &known) || overflows;
    }
    if (infer_at) {
        dims[*infer_at] = unknown_dim;
        const value_shape probe{x.data_type, x.dims};
        bool others_known = true;
        for (std::size_t i = 0; i < dims.size(); ++i)
            if (i != *infer_at && dims[i] < 0) others_known = false;
        if (others_known && probe.fully_known() && known > 0 && !overflows) {
            std::int64_t total = 1;
            for (const auto d : *x.dims) overflows = __builtin_mul_overflow(total, d, &total) || overflows;
            if (!overflows && total % known == 0) dims[*infer_at] = total / known;
        }
    }
    out.dims = dims;
    return out;
}

// Flatten to 2-D at axis.
value_shape inference::flatten(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    auto axis = attr_i(n, "axis", 1);
    const auto rank = static_cast<std::int64_t>(x.dims->size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return out;
    std::int64_t a = 1, b = 1;
    for (std::int64_t i = 0; i < rank; ++i) {
        auto& part = i < axis ? a : b;
        const auto d = (*x.dims)[static_cast<std::size_t>(i)];
        if (part < 0 || d < 0 || __builtin_mul_overflow(part, d, &part)) part = unknown_dim;
    }
    out.dims = dim_list{a, b};
    return out;
}

// Concat along axis: the sum there; elsewhere a number wins, then the first symbol (onnx's merge).
value_shape inference::concat(node_id n, const value_shape& x) const {
    const auto& nd = model.nodes[n];
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    const auto axis = axis_of(attr_i(n, "axis", 0), x.dims->size());
    if (!axis) return out;
    auto dims = *x.dims;
    dims[*axis] = 0;
    for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
        const auto& s = of(n, k);
        if (!s.dims || s.dims->size() != dims.size()) return out;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            const auto d = (*s.dims)[i];
            if (i == *axis)
                dims[i] = dims[i] < 0 || d < 0 || __builtin_add_overflow(dims[i], d, &dims[i]) ? unknown_dim : dims[i];
            else if (d >= 0 && dims[i] >= 0 && d != dims[i]) return out;
            else if (d >= 0 || dims[i] == unknown_dim) dims[i] = d;
        }
    }
    out.dims = dims;
    return out;
}

// Gather along axis: the indices' shape in place of that dim.
value_shape inference::gather(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto& indices = of(n, 1);
    if (!x.dims || !indices.dims) return out;
    const auto axis = axis_of(attr_i(n, "axis", 0), x.dims->size());
    if (!axis) return out;
    dim_list dims(x.dims->begin(), x.dims->begin() + static_cast<std::ptrdiff_t>(*axis));
    dims.insert(dims.end(), indices.dims->begin(), indices.dims->end());
    dims.insert(dims.end(), x.dims->begin() + static_cast<std::ptrdiff_t>(*axis) + 1, x.dims->end());
    out.dims = dims;
    return out;
}

// Slice: starts/ends/axes/steps as inputs (opset 10+) or attributes (before). A sliced dim
// that is not a number becomes unknown.
value_shape inference::slice(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    auto dims = *x.dims;
    const bool inputs = opset() >= 10;
    const auto starts = inputs ? ints(n, 1) : attr_ints(n, "starts");
    const auto ends = inputs ? ints(n, 2) : attr_ints(n, "ends");
    auto axes = inputs ? ints(n, 3) : attr_ints(n, "axes");
    auto steps = inputs ? ints(n, 4) : std::nullopt;
    const bool has_axes = inputs ? has_input(n, 3) : axes.has_value();
    const bool has_steps = inputs && has_input(n, 4);
    if ((has_axes && !axes) || (has_steps && !steps) || !starts || !ends || starts->size() != ends->size()) {
        if (!has_axes || !axes) std::fill(dims.begin(), dims.end(), unknown_dim);
        else
            for (const auto a : *axes)
                if (const auto axis = axis_of(a, dims.size())) dims[*axis] = unknown_dim;
        out.dims = dims;
        return out;
    }
    if (!axes) {
        axes.emplace();
        for (std::size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<std::int64_t>(i));
    }
    if (!steps) steps.emplace(starts->size(), 1);
    if (axes->size() != starts->size() || steps->size() != starts->size()) return out;
    for (std::size_t k = 0; k < starts->size(); ++k) {
        const auto axis = axis_of((*axes)[k], dims.size());
        if (!axis || (*steps)[k] == 0) return out;
        const auto dim = dims[*axis];
        if (dim < 0) {
            dims[*axis] = unknown_dim;
            continue;
        }
        auto start = (*starts)[k], end = (*ends)[k];
        const auto step = (*steps)[k];
        if (start < 0) start = start < -dim ? -1 - dim : start + dim;
        if (end < 0) end = end < -dim ? -1 - dim : end + dim;
        if (step > 0) {
            start = std::clamp<std::int64_t>(start, 0, dim);
            end = std::clamp<std::int64_t>(end, 0, dim);
            dims[*axis] = end > start ? (end - start - 1) / step + 1 : 0;
        } else {
            if (step == std::numeric_limits<std::int64_t>::min()) return out;
            start = std::clamp<std::int64_t>(start, 0, dim - 1);
            end = std::clamp<std::int64_t>(end, -1, dim - 1);
            dims[*axis] = start > end ? (start - end - 1) / (-step) + 1 : 0;
        }
    }
    out.dims = dims;
    return out;
}

// Expand: the input broadcast with the shape input.
value_shape inference::expand(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto shape = ints(n, 1);
    if (!shape || !x.dims) return out;
    if (std::any_of(shape->begin(), shape->end(), [](std::int64_t d) { return d < 0; })) return out;
    const value_shape target{0, *shape};
    out.dims = broadcast({&x, &target});
    return out;
}

// MatMul with numpy's rules for 1-D operands and batch broadcasting.
value_shape inference::matmul(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto& b = of(n, 1);
    if (!x.dims || !b.dims || x.dims->empty() || b.dims->empty()) return out;
    auto a_dims = *x.dims, b_dims = *b.dims;
    const bool a_vector = a_dims.size() == 1, b_vector = b_dims.size() == 1;
    if (a_vector) a_dims.insert(a_dims.begin(), 1);
    if (b_vector) b_dims.push_back(1);
    const auto a_k = a_dims.back(), b_k = b_dims[b_dims.size() - 2];
    if (a_k >= 0 && b_k >= 0 && a_k != b_k) return out;
    const value_shape a_batch{0, dim_list(a_dims.begin(), a_dims.end() - 2)};
    const value_shape b_batch{0, dim_list(b_dims.begin(), b_dims.end() - 2)};
    auto dims = broadcast({&a_batch, &b_batch});
    if (!dims) return out;
    if (!a_vector) dims->push_back(a_dims[a_dims.size() - 2]);
    if (!b_vector) dims->push_back(b_dims.back());
    out.dims = dims;
    return out;
}

// Reductions over constant axes (keepdims keeps them as 1); no axes: all of them, or none
// with noop_with_empty_axes.
value_shape inference::reduce(node_id n, const value_shape& x) const {
    const auto& op = model.nodes[n].op_type();
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    std::optional<dim_list> axes;
    const bool as_input = opset() >= 18 || (op == "ReduceSum" && opset() >= 13);
    if (as_input) {
        if (has_input(n, 1)) {
            axes = ints(n, 1);
            if (!axes) return out;
        }
    } else {
        axes = attr_ints(n, "axes");
    }
    auto dims = *x.dims;
    if (!axes || axes->empty()) {
        if (as_input && attr_i(n, "noop_with_empty_axes", 0) != 0) {
            out.dims = dims;
            return out;
        }
        axes.emplace();
        for (std::size_t i = 0; i < dims.size(); ++i) axes->push_back(static_cast<std::int64_t>(i));
    }
    std::vector<bool> reduced(dims.size(), false);
    for (const auto a : *axes) {
        const auto axis = axis_of(a, dims.size());
        if (!axis) return out;
        reduced[*axis] = true;
    }
    const bool keep = attr_i(n, "keepdims", 1) != 0;
    dim_list result;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (!reduced[i]) result.push_back(dims[i]);
        else if (keep) result.push_back(1);
    }
    out.dims = result;
    return out;
}

// ConstantOfShape: the value's type (float32 by default), the shape input's values.
value_shape inference::constant_of_shape(node_id n) const {
    value_shape out{static_cast<std::int32_t>(data_type::float32), std::nullopt};
    if (const auto a = model.attribute(n, "value"); a && a->tensor != none) {
        const auto site = model.site_of(a->tensor);
        out.data_type = site == none ? 0 : model.file().tensor(site)->data_type;
    }
    if (const auto shape = ints(n, 0, 4096);
        shape && std::all_of(shape->begin(), shape->end(), [](std::int64_t d) { return d >= 0; }))
        out.dims = *shape;
    else if (const auto& s = of(n, 0); s.dims && s.dims->size() == 1 && (*s.dims)[0] >= 0 && (*s.dims)[0] <= 4096)
        out.dims = dim_list(static_cast<std::size_t>((*s.dims)[0]), unknown_dim);
    return out;
}

// The nodes of scope `s` in order; a node's subgraphs before the node (an If's branches
// give its outputs).
void inference::run_scope(scope_id s) {
    for (const auto n : model.scopes[s].nodes) {
        if (!model.node_live(n) || model.nodes[n].scope != s) continue;
        for (const auto inner : model.nodes[n].subgraphs())
            if (!model.scopes[inner].removed) run_scope(inner);
        const auto& nd = model.nodes[n];
        // ONNX orders nodes so that each reads what nodes before it made: a node that reads
        // a later one's output is a cycle or out of order, and nothing after it is sure.
        for (std::size_t k = 0; k < nd.inputs.size() && read_too_early == none; ++k) {
            const auto p = has_input(n, k) ? index.producer(index.input(n, k)) : none;
            if (p != none && !done[p.value]) {
                read_too_early = n;
                read_too_early_slot = k;
            }
        }
        done[n.value] = true;
        if (!nd.domain().empty() && nd.domain() != "ai.onnx") continue;
        const auto first = nd.outputs.empty() ? none : index.output(n, 0);
        if (nd.op_type() == "Constant") {
            if (first == none) continue;
            if (const auto c = find_constant(model, index, first)) {
                value_shape shape{c->data_type, std::nullopt};
                if (c->dims.size() <= max_known_rank) shape.dims = c->dims;
                shapes.set(first, std::move(shape));
            }
            continue;
        }
        // A unary operator whose output has its input's shape takes the input's slot: a
        // million Relus were each a copy of the dims, a hash and a lookup (infer's {x}).
        if (nd.outputs.size() == 1 && is_passthrough(nd.op_type())) {
            if (nd.outputs[0] != empty_name && first != none) shapes.set_same(first, has_input(n, 0) ? index.input(n, 0) : none);
            continue;
        }
        auto outs = infer(n);
        for (std::size_t k = 0; k < outs.size() && k < nd.outputs.size(); ++k) {
            if (nd.outputs[k] == empty_name) continue;
            const auto v = index.output(n, k);
            if (v != none) shapes.set(v, std::move(outs[k]));
        }
    }
}

}  // namespace detail

namespace {

// Parses one dim of --input-shape.
result<given_dim> parse_dim(std::string_view text) {
    given_dim d;
    if (text == "?") return d;
    if (text.empty()) return failure(error_code::invalid_argument, "an empty dim", "write dims as 1,3,224,224 or N,3,H,W");
    if (text.front() >= '0' && text.front() <= '9') {
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc{} || end != text.data() + text.size())
            return failure(error_code::invalid_argument, "'" + std::string(text) + "' is no dim",
                           "a dim is a number, a symbol name (N) or ?");
        d.value = value;
        return d;
    }
    if (text.front() == '-')
        return failure(error_code::invalid_argument, "a negative dim", "a dim is a number, a symbol name (N) or ?");
    d.param = std::string(text);
    return d;
}

}  // namespace

result<input_shape_override> parse_input_shape(std::string_view text) {
    const auto eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0)
        return failure(error_code::invalid_argument, "--input-shape takes NAME=DIMS",
                       "for example --input-shape input=1,3,224,224 (or input=N,3,H,W)");
    input_shape_override out;
    out.name = std::string(text.substr(0, eq));
    auto rest = text.substr(eq + 1);
    if (rest.empty()) return out;  // a scalar
    while (true) {
        const auto comma = rest.find(',');
        ONNXSTREAM_ASSIGN(auto d, parse_dim(rest.substr(0, comma)));
        out.dims.push_back(std::move(d));
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return out;
}

namespace {

// The declared shape of main-graph input `declared` with `given` in its place, or why not.
result<value_shape> overridden(const value_shape& declared, const input_shape_override& given, shape_table& table) {
    const auto contradiction = [&](std::string what) {
        return failure(error_code::invalid_argument, "--input-shape " + given.name + ": " + what,
                       "give the dims the model declares for fixed dims; only symbolic or unknown dims can be set");
    };
    if (declared.dims && declared.dims->size() != given.dims.size())
        return contradiction("the model declares " + std::to_string(declared.dims->size()) + " dims, not " +
                             std::to_string(given.dims.size()));
    value_shape out{declared.data_type, dim_list{}};
    for (std::size_t i = 0; i < given.dims.size(); ++i) {
        const auto was = declared.dims ? (*declared.dims)[i] : unknown_dim;
        const auto& g = given.dims[i];
        const auto now = !g.param.empty() ? table.symbol(g.param) : g.value;
        if (was >= 0 && now != was && now != unknown_dim)
            return contradiction("dim " + std::to_string(i) + " is " + std::to_string(was) + " in the model, not " +
                                 (g.param.empty() ? std::to_string(g.value) : g.param));
        out.dims->push_back(now == unknown_dim ? was : now);
    }
    return out;
}

}  // namespace

namespace {

// Both entry points: `refuse_out_of_order` makes a node that reads a later node's output an error.
result<shape_table> run_inference(const graph_model& model, const graph_index& index, const tensor_reader& reader,
                                  std::span<const input_shape_override> overrides, bool refuse_out_of_order) {
    detail::inference i{model, index, reader, shape_table(index.size())};
    // Declared inputs of the main graph, some of them given other dims.
    const auto& tree = model.tree();
    const auto& main = model.scopes[main_scope];
    std::vector<bool> used(overrides.size(), false);
    std::size_t slot = 0;
    for (const auto& f : tree.fields(main.message)) {
        if (f.number() != onnx::number(onnx::graph_field::input) || f.child == none) continue;
        if (slot < main.inputs.size()) {
            const auto v = index.resolve(main_scope, main.inputs[slot]);
            if (v != none && index.at(v).kind == value_kind::graph_input) {
                auto shape = declared_shape(tree, f.child, i.shapes);
                for (std::size_t k = 0; k < overrides.size(); ++k) {
                    if (overrides[k].name != model.text(main.inputs[slot])) continue;
                    ONNXSTREAM_ASSIGN(shape, overridden(shape, overrides[k], i.shapes));
                    used[k] = true;
                }
                i.shapes.set(v, std::move(shape));
            }
        }
        ++slot;
    }
    for (std::size_t k = 0; k < overrides.size(); ++k)
        if (!used[k])
            return failure(error_code::invalid_argument,
                           "--input-shape names '" + overrides[k].name + "', which is no input of the model",
                           "name one of the main graph's inputs (onnxstream inspect lists them)");
    for (const auto v : index.value_ids()) {
        const auto& val = index.at(v);
        // An initializer nothing reads is no node's input, so no shape is asked of it:
        // none is copied (a model may have a million such tensors).
        if (val.kind != value_kind::initializer || val.overridable || index.uses(v).empty()) continue;
        value_shape shape{model.tensor_type(val.tensor), std::nullopt};
        if (model.dims_view(val.tensor).size() <= max_known_rank) shape.dims = model.tensor_dims(val.tensor);
        i.shapes.set(v, std::move(shape));
    }
    i.done.assign(model.nodes.size(), false);
    i.run_scope(main_scope);
    if (refuse_out_of_order && i.read_too_early != none) {
        const auto& nd = model.nodes[i.read_too_early];
        return failure(error_code::not_onnx,
                       "node '" + model.node_label(i.read_too_early) + "' (" + std::string(nd.op_type()) + ") reads '" +
                           std::string(model.text(nd.inputs[i.read_too_early_slot])) +
                           "' before any node makes it: the graph has a cycle or is not in topological order",
                       "fix the exporter's output (onnx.checker.check_model names the node too)");
    }
    return std::move(i.shapes);
}

}  // namespace

result<shape_table> infer_shapes(const graph_model& model, const graph_index& index, const tensor_reader& reader,
                                 std::span<const input_shape_override> overrides) {
    return run_inference(model, index, reader, overrides, true);
}

shape_table infer_shapes(const graph_model& model, const graph_index& index, const tensor_reader& reader) {
    // A graph out of order keeps what was inferred (the passes judge each node on its own);
    // with no overrides nothing else fails.
    auto shapes = run_inference(model, index, reader, {}, false);
    return shapes ? std::move(*shapes) : shape_table(index.size());
}

}  // namespace onnxstream::graph
