#include "layer_mapper.hpp"

namespace onnxstream::caffe::detail {

mapper::outcome mapper::inner_product(graph::node_id n, const std::string& input, std::int64_t axis, std::int64_t outputs,
                                      blob weight, std::optional<blob> bias, shape out_shape) {
    auto& l = add_layer("InnerProduct", {input}, {out_name(n)});
    l.params.push_back(param::message(
        "inner_product_param",
        {param::integer("num_output", outputs), param::flag("bias_term", bias.has_value()), param::integer("axis", axis)}));
    l.blobs.push_back(std::move(weight));
    if (bias) l.blobs.push_back(std::move(*bias));
    shapes_[out_name(n)] = std::move(out_shape);
    return ok();
}

result<std::vector<float>> mapper::transposed(const graph::constant& b, double scale) const {
    ONNXSTREAM_ASSIGN(const auto v, values(b));
    const auto k = static_cast<std::size_t>(b.dims[0]);
    const auto nn = static_cast<std::size_t>(b.dims[1]);
    if (v.size() != k * nn)
        return failure(error_code::invalid_tensor, "a 2-D weight holds " + std::to_string(v.size()) + " values for its shape");
    std::vector<float> out(k * nn);
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < nn; ++j) out[j * k + i] = static_cast<float>(v[i * nn + j] * scale);
    return out;
}

mapper::outcome mapper::gemm(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its A input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& a = in_shape(n, 0);
    const auto b = constant_at(n, 1);
    if (!b || b->dims.size() != 2 || !is_float_type(b->data_type))
        return refuse("its B input is not a 2-D floating-point constant", "InnerProduct needs constant weights");
    if (attr_int(n, "transA", 0) != 0) return refuse("transA = 1 has no InnerProduct form", "transpose A in the source model");
    if (a.size() != 2) return refuse("its A input is not 2-D", "check the model with onnx.checker");
    const bool trans_b = attr_int(n, "transB", 0) != 0;
    const auto alpha = attr_float(n, "alpha", 1.0);
    const auto beta = attr_float(n, "beta", 1.0);
    const auto k = trans_b ? b->dims[1] : b->dims[0];
    const auto outputs = trans_b ? b->dims[0] : b->dims[1];
    if (k != a[1]) return refuse("its B does not match A's columns", "check the model with onnx.checker");
    blob weight;
    if (trans_b && alpha == 1.0) {
        ONNXSTREAM_ASSIGN(weight, constant_blob(*b, {outputs, k}));
    } else if (trans_b) {
        ONNXSTREAM_ASSIGN(const auto v, values(*b));
        std::vector<float> f(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) f[i] = static_cast<float>(v[i] * alpha);
        ONNXSTREAM_ASSIGN(weight, values_blob(std::move(f), {outputs, k}));
    } else {
        ONNXSTREAM_ASSIGN(auto f, transposed(*b, alpha));
        ONNXSTREAM_ASSIGN(weight, values_blob(std::move(f), {outputs, k}));
        decide("weights", "Gemm B [K, N] stored transposed as [num_output, K] (no transpose: true)");
    }
    std::optional<blob> bias;
    if (has_input(n, 2)) {
        const auto c = constant_at(n, 2);
        if (!c) return refuse("its C input is not a constant", "InnerProduct needs a constant bias");
        ONNXSTREAM_ASSIGN(const auto v, values(*c));
        const bool per_row = c->dims.size() == 2 && c->dims[0] != 1;
        if (per_row && a[0] != 1) return refuse("its C varies along M", "InnerProduct's bias is per output only");
        if (v.size() != 1 && static_cast<std::int64_t>(v.size()) != outputs)
            return refuse("its C does not broadcast to [N]", "check the model with onnx.checker");
        if (beta == 1.0 && static_cast<std::int64_t>(v.size()) == outputs && is_float_type(c->data_type)) {
            ONNXSTREAM_ASSIGN(auto bb, constant_blob(*c, {outputs}));
            bias = std::move(bb);
        } else {
            std::vector<float> f(static_cast<std::size_t>(outputs));
            for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(beta * v[v.size() == 1 ? 0 : i]);
            ONNXSTREAM_ASSIGN(auto bb, values_blob(std::move(f), {outputs}));
            bias = std::move(bb);
        }
    }
    return inner_product(n, in_name(n, 0), 1, outputs, std::move(weight), std::move(bias), {a[0], outputs});
}

mapper::outcome mapper::matmul(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its A input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& a = in_shape(n, 0);
    const auto b = constant_at(n, 1);
    if (!b || b->dims.size() != 2 || !is_float_type(b->data_type))
        return refuse("only MatMul with a constant 2-D floating-point B has a Caffe layer (InnerProduct)",
                      "multiplying two computed tensors has no Caffe layer");
    if (a.size() < 2 || a.back() != b->dims[0]) return refuse("its A does not match B", "check the model with onnx.checker");
    ONNXSTREAM_ASSIGN(auto f, transposed(*b, 1.0));
    ONNXSTREAM_ASSIGN(auto weight, values_blob(std::move(f), {b->dims[1], b->dims[0]}));
    decide("weights", "MatMul B [K, N] stored transposed as [num_output, K]");
    auto out = a;
    out.back() = b->dims[1];
    return inner_product(n, in_name(n, 0), static_cast<std::int64_t>(a.size()) - 1, b->dims[1], std::move(weight), std::nullopt,
                         out);
}

mapper::outcome mapper::flatten(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& in = in_shape(n, 0);
    const auto axis = axis_index(attr_int(n, "axis", 1), in.size(), true);
    if (!axis) return refuse("its axis is out of range", "check the model with onnx.checker");
    const auto a = *axis;
    const shape out{product(in, 0, a), product(in, a)};
    if (a == 1) {
        auto& l = add_layer("Flatten", {in_name(n, 0)}, {out_name(n)});
        l.params.push_back(param::message("flatten_param", {param::integer("axis", 1)}));
        shapes_[out_name(n)] = out;
    } else {
        reshape_layer(in_name(n, 0), out_name(n), out);
    }
    return ok();
}

mapper::outcome mapper::reshape(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& op = model_.nodes[n].op_type();
    const auto& in = in_shape(n, 0);
    shape target;
    if (op == "Reshape") {
        ONNXSTREAM_ASSIGN(const auto given, static_values(n, 1));
        if (!given) return refuse("its shape is computed", "export with static shapes (--input-shape)");
        const auto& v = *given;
        std::int64_t known = 1;
        std::optional<std::size_t> infer;
        for (std::size_t i = 0; i < v.size(); ++i) {
            auto d = saturated_int64(v[i]);
            if (d == 0 && attr_int(n, "allowzero", 0) == 0) {
                if (i >= in.size()) return refuse("a 0 in its shape has no input dimension", "check the model");
                d = in[i];
            }
            if (d == -1) {
                if (infer) return refuse("its shape has two -1", "check the model");
                infer = i;
                target.push_back(1);
                continue;
            }
            if (d < 0 || d > max_blob_dimension) return refuse("its shape has a dimension out of range", "check the model");
            target.push_back(d);
            known *= d;  // at most 2^31 - 1 per factor, and past the input's count it stops
            if (known > product(in)) return refuse("its shape does not fit the input", "check the model");
        }
        if (infer) {
            if (known == 0 || product(in) % known != 0) return refuse("its shape does not fit the input", "check the model");
            target[*infer] = product(in) / known;
        }
    } else {
        std::vector<std::int64_t> axes;
        if (const auto a = attr_ints(n, "axes")) {
            axes = *a;
        } else if (has_input(n, 1)) {
            const auto c = constant_at(n, 1);
            if (!c) return refuse("its axes are computed", "export with constant axes");
            ONNXSTREAM_ASSIGN(const auto v, values(*c));
            for (const auto x : v) axes.push_back(saturated_int64(x));
        }
        const auto squeezed = squeezed_shape(in, axes, op == "Squeeze");
        if (!squeezed)
            return refuse("its axes are out of range or repeated, or it squeezes a dimension that is not 1", "check the model");
        target = *squeezed;
    }
    if (element_count(target, max_blob_elements) != element_count(in, max_blob_elements))
        return refuse("its output has a different element count", "check the model");
    reshape_layer(in_name(n, 0), out_name(n), target);
    return ok();
}

void mapper::reshape_layer(const std::string& in, const std::string& out, const shape& target) {
    auto& l = add_layer("Reshape", {in}, {out});
    std::vector<param> dims;
    for (const auto d : target) dims.push_back(param::integer("dim", d));
    l.params.push_back(param::message("reshape_param", {param::message("shape", std::move(dims))}));
    shapes_[out] = target;
}

mapper::outcome mapper::concat(graph::node_id n) {
    const auto& nd = model_.nodes[n];
    std::vector<std::string> bottoms;
    for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
        if (!computed_input(n, s)) return refuse("one of its inputs is a constant", "Caffe's Concat joins computed blobs only");
        bottoms.push_back(in_name(n, s));
    }
    auto out = in_shape(n, 0);
    const auto axis = axis_index(attr_int(n, "axis", 1), out.size());
    if (!axis) return refuse("its axis is out of range", "check the model with onnx.checker");
    const auto a = *axis;
    out[a] = 0;
    for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
        const auto& part = in_shape(n, s);
        if (part.size() != out.size()) return refuse("its inputs differ in rank", "check the model with onnx.checker");
        for (std::size_t i = 0; i < part.size(); ++i)
            if (i != a && part[i] != out[i])
                return refuse("its inputs differ outside the axis", "check the model with onnx.checker");
        out[a] += part[a];  // each at most 2^31 - 1: the sum of any number of them fits
    }
    auto& l = add_layer("Concat", bottoms, {out_name(n)});
    l.params.push_back(param::message("concat_param", {param::integer("axis", static_cast<std::int64_t>(a))}));
    shapes_[out_name(n)] = out;
    return ok();
}

mapper::outcome mapper::softmax(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& in = in_shape(n, 0);
    const auto rank = static_cast<std::int64_t>(in.size());
    const bool coerced = model_.opset("") < 13;
    const auto index = axis_index(attr_int(n, "axis", coerced ? 1 : -1), in.size());
    if (!index) return refuse("its axis is out of range", "check the model with onnx.checker");
    const auto axis = static_cast<std::int64_t>(*index);
    // Before opset 13 the input is flattened to 2-D at `axis`: the same as Caffe's
    // softmax over one axis only when that axis is the last one that is not 1.
    if (coerced && product(in, static_cast<std::size_t>(axis) + 1) != 1 && axis != rank - 1)
        return refuse("before opset 13 Softmax normalises over all dimensions from axis " + std::to_string(axis) +
                          ", and Caffe's Softmax over one",
                      "flatten before the Softmax, or export with opset 13");
    auto& l = add_layer("Softmax", {in_name(n, 0)}, {out_name(n)});
    l.params.push_back(param::message("softmax_param", {param::integer("axis", axis)}));
    shapes_[out_name(n)] = in;
    return ok();
}

mapper::outcome mapper::transpose(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    if (options_.target == dialect::bvlc) return refuse("BVLC Caffe has no Permute layer", "export in the opencv dialect");
    const auto& in = in_shape(n, 0);
    auto perm = attr_ints(n, "perm");
    if (!perm) {
        perm.emplace();
        for (std::size_t i = in.size(); i-- > 0;) perm->push_back(static_cast<std::int64_t>(i));
    }
    if (perm->size() != in.size()) return refuse("its perm does not match the rank", "check the model");
    std::vector<bool> seen(in.size(), false);
    for (const auto p : *perm) {
        if (p < 0 || p >= static_cast<std::int64_t>(in.size()) || seen[static_cast<std::size_t>(p)])
            return refuse("its perm is not a permutation of the axes", "check the model with onnx.checker");
        seen[static_cast<std::size_t>(p)] = true;
    }
    shape out;
    std::vector<param> order;
    for (const auto p : *perm) {
        out.push_back(in[static_cast<std::size_t>(p)]);
        order.push_back(param::integer("order", p));
    }
    auto& l = add_layer("Permute", {in_name(n, 0)}, {out_name(n)});
    l.params.push_back(param::message("permute_param", std::move(order)));
    shapes_[out_name(n)] = out;
    return ok();
}

mapper::outcome mapper::split(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& nd = model_.nodes[n];
    const auto& in = in_shape(n, 0);
    const auto index = axis_index(attr_int(n, "axis", 0), in.size());
    if (!index) return refuse("its axis is out of range", "check the model with onnx.checker");
    const auto a = *index;
    const auto axis = static_cast<std::int64_t>(a);
    std::vector<std::int64_t> sizes;
    if (const auto s = attr_ints(n, "split")) {
        sizes = *s;
    } else if (has_input(n, 1)) {
        ONNXSTREAM_ASSIGN(const auto v, static_values(n, 1));
        if (!v) return refuse("its split sizes are computed", "export with constant split sizes");
        for (const auto x : *v) sizes.push_back(saturated_int64(x));
    } else {
        const auto parts = static_cast<std::int64_t>(nd.outputs.size());
        if (parts == 0 || in[a] % parts != 0) return refuse("its axis does not split evenly", "give split sizes");
        sizes.assign(nd.outputs.size(), in[a] / parts);
    }
    if (sizes.size() != nd.outputs.size()) return refuse("its split sizes do not match its outputs", "check the model");
    for (const auto size : sizes)
        if (size < 1 || size > in[a]) return refuse("a split size is empty or larger than the axis", "check the model");
    std::vector<param> p{param::integer("axis", axis)};
    std::vector<std::string> tops;
    std::int64_t at = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (i > 0) p.push_back(param::integer("slice_point", at));
        auto name = nd.outputs[i] == empty_name ? fresh_blob(node_base() + "/unused") : out_name(n, i);
        auto s = in;
        s[a] = sizes[i];
        shapes_[name] = s;
        tops.push_back(std::move(name));
        at += sizes[i];
    }
    if (at != in[a]) return refuse("its split sizes do not add up to the axis", "check the model");
    auto& l = add_layer("Slice", {in_name(n, 0)}, tops);
    l.params.push_back(param::message("slice_param", std::move(p)));
    return ok();
}

mapper::outcome mapper::slice(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& in = in_shape(n, 0);
    std::vector<std::int64_t> starts, ends, axes, steps;
    auto read = [&](std::size_t slot, std::string_view attribute, std::vector<std::int64_t>& into) -> result<bool> {
        if (model_.opset("") < 10) {
            if (const auto a = attr_ints(n, attribute)) into = *a;
            return true;
        }
        if (!has_input(n, slot)) return true;
        ONNXSTREAM_ASSIGN(const auto v, static_values(n, slot));
        if (!v) return false;
        for (const auto x : *v) into.push_back(saturated_int64(x));
        return true;
    };
    for (auto [slot, attribute, into] : {std::tuple{1, "starts", &starts}, std::tuple{2, "ends", &ends},
                                         std::tuple{3, "axes", &axes}, std::tuple{4, "steps", &steps}}) {
        ONNXSTREAM_ASSIGN(const bool constant, read(static_cast<std::size_t>(slot), attribute, *into));
        if (!constant) return refuse("its starts, ends, axes or steps are computed", "export with constant slice bounds");
    }
    if (axes.empty())
        for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
    if (starts.size() != ends.size() || axes.size() != starts.size()) return refuse("its bounds do not match", "check the model");
    for (const auto s : steps)
        if (s != 1) return refuse("a step other than 1 has no Caffe Slice form", "slice with step 1");
    std::string current = in_name(n, 0);
    const auto out = out_name(n);
    std::vector<std::tuple<std::size_t, std::int64_t, std::int64_t>> cuts;
    for (std::size_t i = 0; i < axes.size(); ++i) {
        const auto index = axis_index(axes[i], in.size());
        if (!index) return refuse("an axis is out of range", "check the model with onnx.checker");
        const auto axis = *index;
        const auto dim = in[axis];
        auto clamp = [&](std::int64_t v) {
            if (v < 0) v = v < -dim ? 0 : v + dim;
            return std::min(v, dim);
        };
        const auto b = clamp(starts[i]);
        const auto e = std::max(b, clamp(ends[i]));
        if (e - b == 0) return refuse("it yields an empty tensor", "check the model");
        if (b != 0 || e != dim) cuts.emplace_back(axis, b, e - b);
    }
    if (cuts.empty()) {
        power(current, out, 1.0, 0.0, "");
        return ok();
    }
    for (std::size_t i = 0; i < cuts.size(); ++i) {
        const auto next = i + 1 == cuts.size() ? out : fresh_blob(out + "/part");
        crop(current, std::get<0>(cuts[i]), std::get<1>(cuts[i]), std::get<2>(cuts[i]), next, "/" + std::to_string(i));
        current = next;
    }
    return ok();
}

}  // namespace onnxstream::caffe::detail
