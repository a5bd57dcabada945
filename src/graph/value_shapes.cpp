#include <onnxstream/graph/value_shapes.hpp>

#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

namespace onnxstream::graph {

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

// A ValueInfoProto's tensor type: elem_type and shape (dim_param and missing dims are -1).
value_shape declared_shape(const onnx::message_tree& tree, std::uint32_t value_info) {
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
                std::int64_t dim = -1;
                for (const auto& x : fields_of(d))
                    if (x.number == onnx::number(onnx::dimension_field::dim_value) && x.type == proto::wire_type::varint)
                        dim = static_cast<std::int64_t>(x.value);
                out.dims->push_back(dim);
            }
        }
    }
    return out;
}

std::optional<std::size_t> axis_of(std::int64_t axis, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r) return std::nullopt;
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::optional<std::vector<std::int64_t>> broadcast(const std::vector<const value_shape*>& in) {
    std::size_t rank = 0;
    for (const auto* s : in) {
        if (!s->dims) return std::nullopt;
        rank = std::max(rank, s->dims->size());
    }
    std::vector<std::int64_t> out(rank, 1);
    for (const auto* s : in)
        for (std::size_t i = 0; i < s->dims->size(); ++i) {
            auto& o = out[rank - s->dims->size() + i];
            const auto d = (*s->dims)[i];
            if (d == 1) continue;
            if (o == 1) o = d;                                // known or not
            else if (o == -1 && d != -1) o = d;               // the other is 1 or the same
            else if (o != d && d != -1) return std::nullopt;  // would not broadcast: leave unknown
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
                                               "Elu",
                                               "Selu",
                                               "Softplus",
                                               "HardSwish",
                                               "Round",
                                               "Sign",
                                               "LayerNormalization",
                                               "BatchNormalization",
                                               "Dropout",
                                               "InstanceNormalization",
                                               "PRelu"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

bool is_broadcasting(std::string_view op) {
    static constexpr std::string_view ops[] = {"Add", "Sub", "Mul", "Div",   "Pow",  "Max",     "Min",         "Mod",
                                               "And", "Or",  "Xor", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

bool is_boolean_result(std::string_view op) {
    return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "And" ||
           op == "Or" || op == "Xor" || op == "Not";
}

struct inference {
    const graph_model& model;
    const graph_index& index;
    const tensor_reader& reader;
    shape_table shapes;

    const value_shape& of(node_id n, std::size_t slot) const {
        static const value_shape unknown;
        const auto v = slot < model.nodes[n].inputs.size() ? index.input(n, slot) : none;
        return v == none ? unknown : shapes[v];
    }
    std::optional<std::vector<std::int64_t>> ints(node_id n, std::size_t slot) const {
        if (slot >= model.nodes[n].inputs.size() || model.nodes[n].inputs[slot] == empty_name) return std::nullopt;
        return constant_integers(model, index, reader, index.input(n, slot));
    }
    std::int64_t attr_i(node_id n, std::string_view name, std::int64_t fallback) const {
        const auto a = model.attribute(n, name);
        return a && a->i ? *a->i : fallback;
    }

    // The shape and type of node n's first output, from its inputs' (unknown where the
    // operator is not one of these).
    value_shape infer(node_id n) const {
        const auto& op = model.nodes[n].op_type;
        const auto& x = of(n, 0);
        if (is_passthrough(op) || op == "Not") return x;
        if (op == "Cast") {
            auto out = x;
            out.data_type = static_cast<std::int32_t>(attr_i(n, "to", 0));
            return out;
        }
        if (op == "Size") return {static_cast<std::int32_t>(data_type::int64), std::vector<std::int64_t>{}};
        if (op == "Range") return {x.data_type, std::vector<std::int64_t>{-1}};
        if (is_broadcasting(op) || op == "Where") return elementwise(n, x);
        if (op == "Shape") return shape_of(n, x);
        if (op == "Transpose") return transpose(n, x);
        if (op == "Unsqueeze" || op == "Squeeze") return squeeze(n, x);
        if (op == "Reshape") return reshape(n, x);
        if (op == "Flatten") return flatten(n, x);
        if (op == "Concat") return concat(n, x);
        if (op == "Gather") return gather(n, x);
        if (op == "Slice" && model.opset("") >= 10) return slice(n, x);
        if (op == "Expand") return expand(n, x);
        if (op == "MatMul") return matmul(n, x);
        if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd")
            return reduce(n, x);
        if (op == "ConstantOfShape") return constant_of_shape(n, x);
        return {};
    }

    // Broadcasting operators and Where: the inputs' shapes broadcast; Where's type is its second input's.
    value_shape elementwise(node_id n, const value_shape& x) const {
        const auto& nd = model.nodes[n];
        const auto& op = nd.op_type;
        value_shape out;
        std::vector<const value_shape*> in;
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) in.push_back(&of(n, k));
        out.data_type = op == "Where"           ? of(n, 1).data_type
                        : is_boolean_result(op) ? static_cast<std::int32_t>(data_type::boolean)
                                                : x.data_type;
        out.dims = broadcast(in);
        return out;
    }

    // Shape: a 1-D int64 of the rank between start and end.
    value_shape shape_of(node_id n, const value_shape& x) const {
        value_shape out;
        out.data_type = static_cast<std::int32_t>(data_type::int64);
        if (x.dims) {
            const auto rank = static_cast<std::int64_t>(x.dims->size());
            auto start = attr_i(n, "start", 0), end = attr_i(n, "end", rank);
            if (start < 0) start += rank;
            if (end < 0) end += rank;
            start = std::clamp<std::int64_t>(start, 0, rank);
            end = std::clamp<std::int64_t>(end, 0, rank);
            out.dims = std::vector<std::int64_t>{std::max<std::int64_t>(end - start, 0)};
        }
        return out;
    }

    // Transpose by perm (default: reversed).
    value_shape transpose(node_id n, const value_shape& x) const {
        value_shape out{x.data_type, std::nullopt};
        if (!x.dims) return out;
        std::vector<std::int64_t> perm(x.dims->size());
        for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(perm.size() - 1 - i);
        if (const auto a = model.attribute(n, "perm")) perm = a->ints;
        if (perm.size() != x.dims->size()) return out;
        std::vector<std::int64_t> dims;
        for (const auto p : perm) {
            if (p < 0 || static_cast<std::size_t>(p) >= perm.size()) return out;
            dims.push_back((*x.dims)[static_cast<std::size_t>(p)]);
        }
        out.dims = dims;
        return out;
    }

    // Squeeze and Unsqueeze, with axes from the attribute (opset < 13) or the second input.
    value_shape squeeze(node_id n, const value_shape& x) const {
        const auto& op = model.nodes[n].op_type;
        value_shape out{x.data_type, std::nullopt};
        std::optional<std::vector<std::int64_t>> axes;
        if (model.opset("") >= 13) axes = ints(n, 1);
        else if (const auto a = model.attribute(n, "axes")) axes = a->ints;
        if (!x.dims || !axes) return out;
        std::vector<std::int64_t> dims;
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
    value_shape reshape(node_id n, const value_shape& x) const {
        value_shape out{x.data_type, std::nullopt};
        const auto shape = ints(n, 1);
        if (!shape) return out;
        std::vector<std::int64_t> dims = *shape;
        const bool allow_zero = attr_i(n, "allowzero", 0) != 0;
        // A product past 64 bits (a hostile shape such as [2^40, 2^40, -1]) infers nothing.
        std::int64_t known = 1;
        bool overflows = false;
        std::optional<std::size_t> infer_at;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            if (dims[i] == 0 && !allow_zero) dims[i] = x.dims && i < x.dims->size() ? (*x.dims)[i] : -1;
            if ((*shape)[i] == -1) infer_at = i;
            else if (dims[i] >= 0) overflows = __builtin_mul_overflow(known, dims[i], &known) || overflows;
        }
        if (infer_at) {
            dims[*infer_at] = -1;
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
    value_shape flatten(node_id n, const value_shape& x) const {
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
            part = part < 0 || d < 0 ? -1 : part * d;
        }
        out.dims = std::vector<std::int64_t>{a, b};
        return out;
    }

    // Concat along axis: the sum there, any known dim elsewhere.
    value_shape concat(node_id n, const value_shape& x) const {
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
                if (i == *axis) dims[i] = dims[i] < 0 || (*s.dims)[i] < 0 ? -1 : dims[i] + (*s.dims)[i];
                else if (dims[i] < 0) dims[i] = (*s.dims)[i];
            }
        }
        out.dims = dims;
        return out;
    }

    // Gather along axis: the indices' shape in place of that dim.
    value_shape gather(node_id n, const value_shape& x) const {
        value_shape out{x.data_type, std::nullopt};
        const auto& indices = of(n, 1);
        if (!x.dims || !indices.dims) return out;
        const auto axis = axis_of(attr_i(n, "axis", 0), x.dims->size());
        if (!axis) return out;
        std::vector<std::int64_t> dims(x.dims->begin(), x.dims->begin() + static_cast<std::ptrdiff_t>(*axis));
        dims.insert(dims.end(), indices.dims->begin(), indices.dims->end());
        dims.insert(dims.end(), x.dims->begin() + static_cast<std::ptrdiff_t>(*axis) + 1, x.dims->end());
        out.dims = dims;
        return out;
    }

    // Slice (opset 10+, starts/ends/axes/steps as inputs).
    value_shape slice(node_id n, const value_shape& x) const {
        const auto& nd = model.nodes[n];
        value_shape out{x.data_type, std::nullopt};
        if (!x.dims) return out;
        auto dims = *x.dims;
        const auto starts = ints(n, 1), ends = ints(n, 2);
        auto axes = ints(n, 3), steps = ints(n, 4);
        const bool has_axes = nd.inputs.size() > 3 && nd.inputs[3] != empty_name;
        const bool has_steps = nd.inputs.size() > 4 && nd.inputs[4] != empty_name;
        if ((has_axes && !axes) || (has_steps && !steps) || !starts || !ends || starts->size() != ends->size()) {
            if (!has_axes || !axes) std::fill(dims.begin(), dims.end(), -1);
            else
                for (const auto a : *axes)
                    if (const auto axis = axis_of(a, dims.size())) dims[*axis] = -1;
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
            if (dim < 0) continue;
            auto start = (*starts)[k], end = (*ends)[k];
            const auto step = (*steps)[k];
            if (start < 0) start = start < -dim ? -1 - dim : start + dim;
            if (end < 0) end = end < -dim ? -1 - dim : end + dim;
            if (step > 0) {
                start = std::clamp<std::int64_t>(start, 0, dim);
                end = std::clamp<std::int64_t>(end, 0, dim);
                dims[*axis] = end > start ? (end - start + step - 1) / step : 0;
            } else {
                start = std::clamp<std::int64_t>(start, 0, dim - 1);
                end = std::clamp<std::int64_t>(end, -1, dim - 1);
                dims[*axis] = start > end ? (start - end + (-step) - 1) / (-step) : 0;
            }
        }
        out.dims = dims;
        return out;
    }

    // Expand: the input broadcast with the shape input.
    value_shape expand(node_id n, const value_shape& x) const {
        value_shape out{x.data_type, std::nullopt};
        const auto shape = ints(n, 1);
        if (!shape || !x.dims) return out;
        const value_shape target{0, *shape};
        out.dims = broadcast({&x, &target});
        return out;
    }

    // MatMul with numpy's rules for 1-D operands and batch broadcasting.
    value_shape matmul(node_id n, const value_shape& x) const {
        value_shape out{x.data_type, std::nullopt};
        const auto& b = of(n, 1);
        if (!x.dims || !b.dims || x.dims->empty() || b.dims->empty()) return out;
        auto a_dims = *x.dims, b_dims = *b.dims;
        const bool a_vector = a_dims.size() == 1, b_vector = b_dims.size() == 1;
        if (a_vector) a_dims.insert(a_dims.begin(), 1);
        if (b_vector) b_dims.push_back(1);
        const value_shape a_batch{0, std::vector<std::int64_t>(a_dims.begin(), a_dims.end() - 2)};
        const value_shape b_batch{0, std::vector<std::int64_t>(b_dims.begin(), b_dims.end() - 2)};
        auto dims = broadcast({&a_batch, &b_batch});
        if (!dims) return out;
        if (!a_vector) dims->push_back(a_dims[a_dims.size() - 2]);
        if (!b_vector) dims->push_back(b_dims.back());
        out.dims = dims;
        return out;
    }

    // ReduceMean/Sum/Max/Min/Prod over constant axes (keepdims keeps them as 1).
    value_shape reduce(node_id n, const value_shape& x) const {
        const auto& op = model.nodes[n].op_type;
        value_shape out{x.data_type, std::nullopt};
        if (!x.dims) return out;
        std::optional<std::vector<std::int64_t>> axes;
        const bool as_input = model.opset("") >= 18 || (op == "ReduceSum" && model.opset("") >= 13);
        if (as_input) axes = ints(n, 1);
        else if (const auto a = model.attribute(n, "axes")) axes = a->ints;
        if (!axes || axes->empty()) return out;  // all axes, or noop_with_empty_axes: left unknown
        auto dims = *x.dims;
        std::vector<bool> reduced(dims.size(), false);
        for (const auto a : *axes) {
            const auto axis = axis_of(a, dims.size());
            if (!axis) return out;
            reduced[*axis] = true;
        }
        const bool keep = attr_i(n, "keepdims", 1) != 0;
        std::vector<std::int64_t> result;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            if (!reduced[i]) result.push_back(dims[i]);
            else if (keep) result.push_back(1);
        }
        out.dims = result;
        return out;
    }

    // ConstantOfShape: the value's type (float32 by default), the shape input's values.
    value_shape constant_of_shape(node_id n, const value_shape& x) const {
        value_shape out{x.data_type, std::nullopt};
        out.data_type = static_cast<std::int32_t>(data_type::float32);
        if (const auto a = model.attribute(n, "value"); a && a->tensor != none) {
            const auto site = model.site_of(a->tensor);
            out.data_type = site == none ? 0 : model.file().tensor(site)->data_type;
        }
        if (const auto shape = ints(n, 0, 4096)) out.dims = *shape;
        return out;
    }

    std::optional<std::vector<std::int64_t>> ints(node_id n, std::size_t slot, std::uint64_t max) const {
        if (slot >= model.nodes[n].inputs.size() || model.nodes[n].inputs[slot] == empty_name) return std::nullopt;
        return constant_integers(model, index, reader, index.input(n, slot), max);
    }

    void run() {
        shapes = shape_table(index.size());
        // Declared inputs of the main graph.
        const auto& tree = model.tree();
        const auto& main = model.scopes[main_scope];
        std::size_t slot = 0;
        for (const auto& f : tree.fields(main.message)) {
            if (f.number() != onnx::number(onnx::graph_field::input) || f.child == none) continue;
            if (slot < main.inputs.size()) {
                const auto v = index.resolve(main_scope, main.inputs[slot]);
                if (v != none && index.at(v).kind == value_kind::graph_input) shapes.set(v, declared_shape(tree, f.child));
            }
            ++slot;
        }
        for (const auto v : index.value_ids()) {
            const auto& val = index.at(v);
            // An initializer nothing reads is no node's input, so no shape is asked of it:
            // none is copied (a model may have a million such tensors).
            if (val.kind != value_kind::initializer || val.overridable || index.uses(v).empty()) continue;
            value_shape shape{model.tensor_type(val.tensor), std::nullopt};
            if (model.dims_view(val.tensor).size() <= max_known_rank) shape.dims = model.tensor_dims(val.tensor);
            shapes.set(v, std::move(shape));
        }
        for (const auto s : model.scopes.ids()) {
            if (model.scopes[s].removed || model.scopes[s].kind == scope_kind::function) continue;
            for (const auto n : model.scopes[s].nodes) {
                if (!model.node_live(n) || model.nodes[n].scope != s) continue;
                const auto& nd = model.nodes[n];
                if (!nd.domain.empty() && nd.domain != "ai.onnx") continue;
                const auto out = nd.outputs.empty() ? none : index.output(n, 0);
                if (out == none) continue;
                if (nd.op_type == "Constant") {
                    if (const auto c = find_constant(model, index, out)) {
                        value_shape shape{c->data_type, std::nullopt};
                        if (c->dims.size() <= max_known_rank) shape.dims = c->dims;
                        shapes.set(out, std::move(shape));
                    }
                    continue;
                }
                shapes.set(out, infer(n));
            }
        }
    }
};

}  // namespace

shape_table infer_shapes(const graph_model& model, const graph_index& index, const tensor_reader& reader) {
    inference i{model, index, reader, {}};
    i.run();
    return std::move(i.shapes);
}

}  // namespace onnxstream::graph
