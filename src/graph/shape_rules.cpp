// The shape rules of the layers (convolutions, pools, resizes, Gemm, Split, Pad, Tile,
// Range, TopK, recurrent layers, If), as onnx.shape_inference states them: a dim that
// onnx would leave to a fresh symbol is unknown here.
#include "shape_inference.hpp"

#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/onnx/data_type.hpp>

#include <algorithm>
#include <cmath>

namespace onnxstream::graph::detail {

namespace {

constexpr auto int64_type = static_cast<std::int32_t>(onnx::data_type::int64);

bool all_non_negative(const dim_list& v) {
    return std::all_of(v.begin(), v.end(), [](std::int64_t d) { return d >= 0; });
}

// The attribute's ints when it has `count` of them, the fallback when it is absent, empty when it has another count.
std::optional<dim_list> sized(const std::optional<dim_list>& given, std::size_t count, std::int64_t fallback) {
    if (!given) return dim_list(count, fallback);
    if (given->size() != count) return std::nullopt;
    return given;
}

// How a window (Conv, the pools, ConvTranspose) pads its spatial axes, from auto_pad and pads.
struct window_pads {
    enum class kind { explicit_pads, same, unknown };  // same: SAME_UPPER or SAME_LOWER
    kind how = kind::explicit_pads;
    dim_list pads;  // the begins, then the ends; zeros for VALID

    [[nodiscard]] std::int64_t begin(std::size_t axis) const { return pads[axis]; }
    [[nodiscard]] std::int64_t end(std::size_t axis) const { return pads[axis + pads.size() / 2]; }
};

// Empty when pads has not two ints per spatial axis; an auto_pad onnx does not know is
// `unknown`, which refuses an axis only once it is reached (as the rules did before).
std::optional<window_pads> pads_of(const inference& rules, node_id n, std::size_t rank) {
    auto pads = sized(rules.attr_ints(n, "pads"), 2 * rank, 0);
    if (!pads) return std::nullopt;
    const auto a = rules.model.attribute(n, "auto_pad");
    const std::string_view auto_pad = a && a->s ? *a->s : std::string_view("NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return window_pads{window_pads::kind::same, {}};
    if (auto_pad == "VALID") return window_pads{window_pads::kind::explicit_pads, dim_list(2 * rank, 0)};
    if (auto_pad != "NOTSET") return window_pads{window_pads::kind::unknown, {}};
    return window_pads{window_pads::kind::explicit_pads, std::move(*pads)};
}

}  // namespace

// Conv: [N, M, spatial...] with M from the weight's first dim.
value_shape inference::conv(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto& w = of(n, 1);
    if (!x.dims || x.dims->size() < 3) return out;
    const auto rank = x.dims->size() - 2;
    auto kernel = attr_ints(n, "kernel_shape");
    if (!kernel) {
        if (!w.dims || w.dims->size() != x.dims->size()) return out;
        kernel = dim_list(w.dims->begin() + 2, w.dims->end());
    }
    if (kernel->size() != rank) return out;
    dim_list dims{(*x.dims)[0], w.dims && w.dims->size() == x.dims->size() ? (*w.dims)[0] : unknown_dim};
    for (std::size_t i = 0; i < rank; ++i) dims.push_back(unknown_dim);
    if (!all_non_negative(*kernel)) {
        out.dims = dims;
        return out;
    }
    const auto strides = sized(attr_ints(n, "strides"), rank, 1);
    const auto dilations = sized(attr_ints(n, "dilations"), rank, 1);
    const auto pads = pads_of(*this, n, rank);
    if (!strides || !dilations || !pads) return out;
    const bool ceil_mode = attr_i(n, "ceil_mode", 0) != 0;
    for (std::size_t i = 0; i < rank; ++i) {
        const auto in = (*x.dims)[2 + i];
        const auto s = (*strides)[i], d = (*dilations)[i], k = (*kernel)[i];
        if (in < 0 || s <= 0 || d <= 0 || k <= 0 || in > (std::int64_t{1} << 40) || k > (std::int64_t{1} << 20) ||
            d > (std::int64_t{1} << 20))
            continue;
        const auto effective_kernel = (k - 1) * d + 1;
        if (pads->how == window_pads::kind::same) {
            if (ceil_mode) continue;  // onnx and the runtimes part ways here
            dims[2 + i] = (in + s - 1) / s;
            continue;
        }
        if (pads->how == window_pads::kind::unknown) return out;
        const auto begin = pads->begin(i), end = pads->end(i);
        if (begin < 0 || end < 0 || begin > (std::int64_t{1} << 40) || end > (std::int64_t{1} << 40)) continue;
        const auto span = in + begin + end - effective_kernel;
        if (span < 0) return out;
        auto count = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        // A last window that starts in the end padding: the runtimes drop it, onnx 1.12 does not.
        if (ceil_mode && (count - 1) * s >= in + begin) continue;
        dims[2 + i] = count;
    }
    out.dims = dims;
    return out;
}

// ConvTranspose: [N, M * group, spatial...], the spatial dims from output_shape or the strides.
value_shape inference::conv_transpose(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto& w = of(n, 1);
    if (!x.dims || x.dims->size() < 3) return out;
    const auto rank = x.dims->size() - 2;
    const bool w_known = w.dims && w.dims->size() == x.dims->size();
    auto kernel = attr_ints(n, "kernel_shape");
    if (!kernel) {
        if (!w_known) return out;
        kernel = dim_list(w.dims->begin() + 2, w.dims->end());
    }
    if (kernel->size() != rank) return out;
    const auto group = attr_i(n, "group", 1);
    dim_list dims{(*x.dims)[0],
                  w_known && (*w.dims)[1] >= 0 && group > 0 && group < (1 << 20) ? (*w.dims)[1] * group : unknown_dim};
    for (std::size_t i = 0; i < rank; ++i) dims.push_back(unknown_dim);
    if (const auto output_shape = attr_ints(n, "output_shape")) {
        if (output_shape->size() != rank || !all_non_negative(*output_shape)) return out;
        std::copy(output_shape->begin(), output_shape->end(), dims.begin() + 2);
        out.dims = dims;
        return out;
    }
    const auto strides = sized(attr_ints(n, "strides"), rank, 1);
    const auto dilations = sized(attr_ints(n, "dilations"), rank, 1);
    const auto pads = pads_of(*this, n, rank);
    const auto output_padding = sized(attr_ints(n, "output_padding"), rank, 0);
    if (!strides || !dilations || !pads || !output_padding) return out;
    constexpr std::int64_t big = std::int64_t{1} << 30;
    for (std::size_t i = 0; i < rank; ++i) {
        const auto in = (*x.dims)[2 + i];
        const auto s = (*strides)[i], d = (*dilations)[i], k = (*kernel)[i];
        if (in < 0 || s <= 0 || d <= 0 || k <= 0 || in > big || s > big || d > big || k > big) continue;
        if (pads->how == window_pads::kind::same) {
            dims[2 + i] = in * s;
            continue;
        }
        if (pads->how == window_pads::kind::unknown) return out;
        const auto begin = pads->begin(i), end = pads->end(i);
        const auto extra = (*output_padding)[i];
        if (begin < 0 || end < 0 || extra < 0 || begin > big || end > big || extra > big) continue;
        const auto size = s * (in - 1) + extra + (k - 1) * d + 1 - begin - end;
        if (size < 0) return out;
        dims[2 + i] = size;
    }
    out.dims = dims;
    return out;
}

// MaxPool, AveragePool, LpPool: Conv's arithmetic over kernel_shape, channels kept.
value_shape inference::pool(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto kernel = attr_ints(n, "kernel_shape");
    if (!x.dims || x.dims->size() < 3 || !kernel || kernel->size() != x.dims->size() - 2) return out;
    auto shape = conv(n, x);  // kernel_shape is set: the weight is not read
    if (shape.dims) (*shape.dims)[1] = (*x.dims)[1];
    return shape;
}

// GlobalAveragePool, GlobalMaxPool: [N, C, 1...].
value_shape inference::global_pool(const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims || x.dims->size() < 2) return out;
    dim_list dims = *x.dims;
    std::fill(dims.begin() + 2, dims.end(), 1);
    out.dims = std::move(dims);
    return out;
}

// Resize (sizes, or scales: floor of dim * scale in float, as onnx and the runtimes
// compute it) and Upsample (scales).
value_shape inference::resize(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    const auto rank = x.dims->size();
    const bool upsample = model.nodes[n].op_type() == "Upsample";
    if (model.attribute(n, "axes") || (model.attribute(n, "keep_aspect_ratio_policy") && has_input(n, 3))) {
        out.dims = dim_list(rank, unknown_dim);
        return out;
    }
    std::optional<std::vector<double>> scales;
    if (upsample && opset() < 9) {
        if (const auto a = model.attribute(n, "scales")) scales = a->floats;
    } else if (upsample || opset() < 11) {
        scales = floats(n, 1);
    } else if (has_input(n, 3)) {
        const auto sizes = ints(n, 3);
        if (sizes && sizes->size() == rank && all_non_negative(*sizes)) out.dims = *sizes;
        else out.dims = dim_list(rank, unknown_dim);
        return out;
    } else {
        scales = floats(n, 2);
    }
    out.dims = dim_list(rank, unknown_dim);
    if (!scales || scales->size() != rank) return out;
    for (std::size_t i = 0; i < rank; ++i) {
        const auto in = (*x.dims)[i];
        const auto scale = static_cast<float>((*scales)[i]);
        if (in < 0 || !(scale > 0.0F) || !std::isfinite(scale)) continue;
        const auto size = std::floor(static_cast<float>(in) * scale);
        if (size < 0.0F || size > 9.0e15F) continue;
        (*out.dims)[i] = static_cast<std::int64_t>(size);
    }
    return out;
}

// Gemm: [M, N] of the (transposed) operands.
value_shape inference::gemm(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto& b = of(n, 1);
    if (!x.dims || !b.dims || x.dims->size() != 2 || b.dims->size() != 2) return out;
    const bool trans_a = attr_i(n, "transA", 0) != 0, trans_b = attr_i(n, "transB", 0) != 0;
    out.dims = dim_list{(*x.dims)[trans_a ? 1 : 0], (*b.dims)[trans_b ? 0 : 1]};
    return out;
}

// ArgMax, ArgMin: int64, the axis kept as 1 or dropped.
value_shape inference::arg_reduce(node_id n, const value_shape& x) const {
    value_shape out{int64_type, std::nullopt};
    if (!x.dims) return out;
    const auto axis = axis_of(attr_i(n, "axis", 0), x.dims->size());
    if (!axis) return out;
    auto dims = *x.dims;
    if (attr_i(n, "keepdims", 1) != 0) dims[*axis] = 1;
    else dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(*axis));
    out.dims = dims;
    return out;
}

// Split: the sizes given (attribute before opset 13, input after), or equal parts.
std::vector<value_shape> inference::split(node_id n, const value_shape& x) const {
    const auto outputs = model.nodes[n].outputs.size();
    std::vector<value_shape> out(outputs, value_shape{x.data_type, std::nullopt});
    if (!x.dims || outputs == 0) return out;
    const auto axis = axis_of(attr_i(n, "axis", 0), x.dims->size());
    if (!axis) return out;
    std::optional<dim_list> sizes;
    const bool given = opset() >= 13 ? has_input(n, 1) : model.attribute(n, "split").has_value();
    if (opset() >= 13) sizes = ints(n, 1, 4096);
    else sizes = attr_ints(n, "split");
    const auto dim = (*x.dims)[*axis];
    if (!given) {
        const auto parts = static_cast<std::int64_t>(outputs);
        if (dim >= 0 && dim % parts == 0 && !model.attribute(n, "num_outputs")) sizes = dim_list(outputs, dim / parts);
    }
    for (std::size_t k = 0; k < outputs; ++k) {
        auto dims = *x.dims;
        dims[*axis] = sizes && sizes->size() == outputs && (*sizes)[k] >= 0 ? (*sizes)[k] : unknown_dim;
        out[k].dims = dims;
    }
    if (sizes && (sizes->size() != outputs || !all_non_negative(*sizes)))
        return std::vector<value_shape>(outputs, {x.data_type, {}});
    return out;
}

// Pad: each dim grows by its begin and end pads (constant pads; else the rank alone).
value_shape inference::pad(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    const auto rank = x.dims->size();
    if (has_input(n, 3)) return out;  // axes (opset 18): not followed here
    const auto pads = opset() >= 11 ? ints(n, 1, 4096) : attr_ints(n, opset() >= 2 ? "pads" : "paddings");
    out.dims = dim_list(rank, unknown_dim);
    if (!pads) return out;
    if (pads->size() != 2 * rank) return {x.data_type, std::nullopt};
    for (std::size_t i = 0; i < rank; ++i) {
        const auto in = (*x.dims)[i];
        const auto begin = (*pads)[i], end = (*pads)[i + rank];
        std::int64_t size = 0;
        if (in < 0 || __builtin_add_overflow(in, begin, &size) || __builtin_add_overflow(size, end, &size) || size < 0) continue;
        (*out.dims)[i] = size;
    }
    return out;
}

// Tile: each dim times its repeats.
value_shape inference::tile(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    if (!x.dims) return out;
    const auto rank = x.dims->size();
    const auto repeats = ints(n, 1, 4096);
    out.dims = dim_list(rank, unknown_dim);
    if (!repeats) return out;
    if (repeats->size() != rank) return {x.data_type, std::nullopt};
    for (std::size_t i = 0; i < rank; ++i) {
        std::int64_t size = 0;
        const auto in = (*x.dims)[i], r = (*repeats)[i];
        if (in < 0 || r < 0 || __builtin_mul_overflow(in, r, &size)) continue;
        (*out.dims)[i] = size;
    }
    return out;
}

// Range: max(ceil((limit - start) / delta), 0) elements when all three are constants.
value_shape inference::range(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, dim_list{unknown_dim}};
    const auto start = floats(n, 0, 1), limit = floats(n, 1, 1), delta = floats(n, 2, 1);
    if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1) return out;
    if ((*delta)[0] == 0.0) return out;
    const auto count = std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0]);
    if (!std::isfinite(count) || count > 9.0e15) return out;
    (*out.dims)[0] = count < 0.0 ? 0 : static_cast<std::int64_t>(count);
    return out;
}

// TopK: values and int64 indices, K along the axis.
std::vector<value_shape> inference::top_k(node_id n, const value_shape& x) const {
    std::vector<value_shape> out{{x.data_type, std::nullopt}, {int64_type, std::nullopt}};
    if (!x.dims) return out;
    const auto axis = axis_of(attr_i(n, "axis", -1), x.dims->size());
    if (!axis) return out;
    std::optional<dim_list> k;
    if (opset() >= 10) k = ints(n, 1, 1);
    else if (const auto a = model.attribute(n, "k"); a && a->i) k = dim_list{*a->i};
    auto dims = *x.dims;
    dims[*axis] = k && k->size() == 1 && (*k)[0] >= 0 ? (*k)[0] : unknown_dim;
    out[0].dims = dims;
    out[1].dims = dims;
    return out;
}

// RNN, GRU, LSTM: Y [seq, directions, batch, hidden] and Y_h/Y_c [directions, batch,
// hidden] (batch first with layout 1); seq and batch unknown when X's shape is.
std::vector<value_shape> inference::recurrent(node_id n, const value_shape& x) const {
    std::vector<value_shape> out(model.nodes[n].outputs.size(), value_shape{x.data_type, std::nullopt});
    if (x.dims && x.dims->size() != 3) return out;
    const auto d = model.attribute(n, "direction");
    const std::int64_t directions = d && d->s && *d->s == "bidirectional" ? 2 : 1;
    const auto hidden_size = attr_i(n, "hidden_size", unknown_dim);
    const auto hidden = hidden_size >= 0 ? hidden_size : unknown_dim;
    const bool batch_first = attr_i(n, "layout", 0) != 0;
    const auto seq = x.dims ? (*x.dims)[batch_first ? 1 : 0] : unknown_dim;
    const auto batch = x.dims ? (*x.dims)[batch_first ? 0 : 1] : unknown_dim;
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (k == 0)
            out[k].dims = batch_first ? dim_list{batch, seq, directions, hidden} : dim_list{seq, directions, batch, hidden};
        else out[k].dims = batch_first ? dim_list{batch, directions, hidden} : dim_list{directions, batch, hidden};
    }
    return out;
}

// If: what both branches agree on (a dim they differ in is unknown; another rank or type, nothing).
std::vector<value_shape> inference::if_branches(node_id n) const {
    std::vector<scope_id> branches;
    for (const auto s : model.nodes[n].subgraphs())
        if (model.scopes[s].attribute == "then_branch" || model.scopes[s].attribute == "else_branch") branches.push_back(s);
    const auto outputs = model.nodes[n].outputs.size();
    std::vector<value_shape> out(outputs);
    if (branches.size() != 2) return out;
    for (std::size_t k = 0; k < outputs; ++k) {
        if (k >= model.scopes[branches[0]].outputs.size() || k >= model.scopes[branches[1]].outputs.size()) continue;
        const auto a_value = index.graph_output(branches[0], k), b_value = index.graph_output(branches[1], k);
        if (a_value == none || b_value == none) continue;
        const auto& a = shapes[a_value];
        const auto& b = shapes[b_value];
        if (a.data_type == 0 || a.data_type != b.data_type) continue;
        out[k].data_type = a.data_type;
        if (!a.dims || !b.dims || a.dims->size() != b.dims->size()) continue;
        dim_list dims;
        for (std::size_t i = 0; i < a.dims->size(); ++i)
            dims.push_back((*a.dims)[i] == (*b.dims)[i] ? (*a.dims)[i] : unknown_dim);
        out[k].dims = dims;
    }
    return out;
}

// DepthToSpace, SpaceToDepth: channels and spatial dims traded by blocksize.
value_shape inference::space_depth(node_id n, const value_shape& x) const {
    value_shape out{x.data_type, std::nullopt};
    const auto b = attr_i(n, "blocksize", 0);
    if (!x.dims || x.dims->size() != 4 || b <= 0 || b > (1 << 16)) return out;
    const auto& in = *x.dims;
    const bool to_space = model.nodes[n].op_type() == "DepthToSpace";
    const auto scale = [&](std::int64_t d, bool up) {
        if (d < 0) return unknown_dim;
        if (up) return d > (std::int64_t{1} << 40) ? unknown_dim : d * b;
        return d % b == 0 ? d / b : unknown_dim;
    };
    const auto channels = in[1] < 0  ? unknown_dim
                          : to_space ? (in[1] % (b * b) == 0 ? in[1] / (b * b) : unknown_dim)
                                     : scale(scale(in[1], true), true);
    out.dims = dim_list{in[0], channels, scale(in[2], to_space), scale(in[3], to_space)};
    return out;
}

}  // namespace onnxstream::graph::detail
