#include <onnxstream/graph/constant_values.hpp>

#include <onnxstream/onnx/data_type.hpp>

#include <cmath>

namespace onnxstream::graph {

std::optional<constant> find_constant(const graph_model& model, const graph_index& index, value_id v) {
    if (v == none) return std::nullopt;
    const auto& val = index.at(v);
    if (val.kind == value_kind::initializer && !val.overridable) {
        constant c;
        c.tensor = val.tensor;
        c.site = model.tensors[val.tensor].site;
        c.data_type = model.tensor_type(val.tensor);
        c.dims = model.tensor_dims(val.tensor);
        for (const auto d : c.dims) c.element_count *= static_cast<std::uint64_t>(d);
        return c;
    }
    const auto n = index.producer(v);
    if (n == none) return std::nullopt;
    const auto& nd = model.nodes[n];
    if (nd.op_type() != "Constant" || !nd.domain().empty() || nd.outputs.size() != 1) return std::nullopt;
    const auto attributes = model.attribute_messages(n);
    if (attributes.size() != 1) return std::nullopt;
    const auto a = read_attribute(model.tree(), attributes[0]);
    constant c;
    c.node = n;
    if (a.name == "value" && a.tensor != none) {
        c.site = model.site_of(a.tensor);
        if (c.site == none) return std::nullopt;
        const auto tensor = model.file().tensor(c.site);
        const auto& info = *tensor;
        c.data_type = info.data_type;
        c.dims = info.dims.to_vector();
        c.element_count = info.element_count;
        return c;
    }
    if (a.name == "value_float" && a.f) {
        c.data_type = static_cast<std::int32_t>(onnx::data_type::float32);
        c.inline_values = std::vector<double>{*a.f};
    } else if (a.name == "value_int" && a.i) {
        c.data_type = static_cast<std::int32_t>(onnx::data_type::int64);
        c.inline_values = std::vector<double>{static_cast<double>(*a.i)};
    } else if (a.name == "value_floats") {
        c.data_type = static_cast<std::int32_t>(onnx::data_type::float32);
        c.inline_values = a.floats;
        c.dims = {static_cast<std::int64_t>(a.floats.size())};
    } else if (a.name == "value_ints") {
        c.data_type = static_cast<std::int32_t>(onnx::data_type::int64);
        c.inline_values.emplace();
        for (const auto i : a.ints) c.inline_values->push_back(static_cast<double>(i));
        c.dims = {static_cast<std::int64_t>(a.ints.size())};
    } else {
        return std::nullopt;
    }
    c.element_count = c.inline_values->size();
    return c;
}

result<std::vector<double>> constant_elements(const graph_model& model, const tensor_reader& reader, const constant& c,
                                              std::uint64_t max_elements) {
    if (c.inline_values) return *c.inline_values;
    if (element_size(c.data_type) == 0)
        return failure(error_code::unsupported, "values of type " + onnx::data_type_name(c.data_type) + " are not read");
    if (c.element_count > max_elements) return failure(error_code::unsupported, "the constant is too large to read");
    std::vector<std::byte> bytes;
    if (c.tensor != none) {
        ONNXSTREAM_ASSIGN(bytes, reader.tensor_bytes(model, c.tensor));
    } else {
        ONNXSTREAM_ASSIGN(bytes, reader.site_bytes(c.site));
    }
    std::vector<double> out;
    out.reserve(static_cast<std::size_t>(c.element_count));
    for (std::uint64_t i = 0; i < c.element_count; ++i) {
        const auto x = decode_element(c.data_type, bytes, i);
        if (!x) return failure(error_code::invalid_tensor, "a constant has fewer values than its dims say");
        out.push_back(*x);
    }
    return out;
}

namespace {

struct scalar {
    double value = 0;
    bool is_bool = false;
};

constexpr int max_depth = 16;

bool is_integer_type(std::int32_t type) {
    switch (static_cast<onnx::data_type>(type)) {
        case onnx::data_type::int8:
        case onnx::data_type::int16:
        case onnx::data_type::int32:
        case onnx::data_type::int64:
        case onnx::data_type::uint8:
        case onnx::data_type::uint16:
        case onnx::data_type::uint32:
        case onnx::data_type::uint64: return true;
        default: return false;
    }
}

std::optional<scalar> evaluate(const graph_model& model, const graph_index& index, const tensor_reader& reader, value_id v,
                               int depth) {
    if (v == none || depth > max_depth) return std::nullopt;
    if (const auto c = find_constant(model, index, v)) {
        if (c->element_count != 1) return std::nullopt;
        auto values = constant_elements(model, reader, *c, 1);
        if (!values || values->size() != 1) return std::nullopt;
        return scalar{.value = (*values)[0], .is_bool = c->data_type == static_cast<std::int32_t>(onnx::data_type::boolean)};
    }
    const auto n = index.producer(v);
    if (n == none) return std::nullopt;
    const auto& nd = model.nodes[n];
    if (!nd.domain().empty() || nd.outputs.empty() || index.output(n, 0) != v) return std::nullopt;
    auto operand = [&](std::size_t slot) -> std::optional<scalar> {
        if (slot >= nd.inputs.size()) return std::nullopt;
        return evaluate(model, index, reader, index.input(n, slot), depth + 1);
    };
    if (nd.op_type() == "Identity") return operand(0);
    if (nd.op_type() == "Not") {
        const auto x = operand(0);
        if (!x || !x->is_bool) return std::nullopt;
        return scalar{.value = x->value != 0 ? 0.0 : 1.0, .is_bool = true};
    }
    if (nd.op_type() == "Equal") {
        const auto a = operand(0);
        const auto b = operand(1);
        if (!a || !b) return std::nullopt;
        return scalar{.value = a->value == b->value ? 1.0 : 0.0, .is_bool = true};
    }
    if (nd.op_type() == "Cast") {
        const auto x = operand(0);
        const auto to = model.attribute(n, "to");
        if (!x || !to || !to->i) return std::nullopt;
        const auto type = static_cast<std::int32_t>(*to->i);
        if (type == static_cast<std::int32_t>(onnx::data_type::boolean))
            return scalar{.value = x->value != 0 ? 1.0 : 0.0, .is_bool = true};
        if (is_integer_type(type)) {
            if (!std::isfinite(x->value)) return std::nullopt;
            return scalar{.value = std::trunc(x->value)};
        }
        if (type == static_cast<std::int32_t>(onnx::data_type::float32))
            return scalar{.value = static_cast<double>(static_cast<float>(x->value))};
        if (type == static_cast<std::int32_t>(onnx::data_type::float64)) return scalar{.value = x->value};
        return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

std::optional<bool> constant_condition(const graph_model& model, const graph_index& index, const tensor_reader& reader,
                                       value_id v) {
    const auto x = evaluate(model, index, reader, v, 0);
    if (!x || std::isnan(x->value)) return std::nullopt;
    return x->value != 0;
}

std::optional<double> constant_scalar(const graph_model& model, const graph_index& index, const tensor_reader& reader,
                                      value_id v) {
    const auto x = evaluate(model, index, reader, v, 0);
    if (!x) return std::nullopt;
    return x->value;
}

}  // namespace onnxstream::graph
