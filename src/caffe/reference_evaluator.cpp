#include <onnxstream/caffe/reference_evaluator.hpp>

#include <onnxstream/caffe/blob_limits.hpp>
#include <onnxstream/caffe/layer_mapping.hpp>
#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/graph/graph_index.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "node_attributes.hpp"

namespace onnxstream::caffe {
namespace {

using detail::node_attributes;
using detail::squeezed_shape;
using graph::none;
using dims = std::vector<std::int64_t>;

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

std::string dims_text(const dims& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
    return out.empty() ? "scalar" : out;
}

// `axis` (negative from the end) below `rank`, or up to it when `end_allowed`.
std::optional<std::size_t> axis_of(std::int64_t axis, std::size_t rank, bool end_allowed = false) {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis > (end_allowed ? r : r - 1)) return std::nullopt;
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

// A double from a tensor as an int64: saturated, NaN as 0 (a C++ cast would be undefined).
std::int64_t to_int64(double v) {
    if (std::isnan(v)) return 0;
    if (v >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
    if (v <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(v);
}

class evaluator : node_attributes {
public:
    evaluator(const graph::graph_model& model, const graph::tensor_reader& reader, const evaluation_limits& limits)
        : node_attributes(model), model_(model), index_(model), reader_(reader), limits_(limits) {}

    result<std::map<std::string, dense_tensor>> run(const std::map<std::string, dense_tensor>& inputs) {
        for (const auto& [name, t] : inputs) {
            ONNXSTREAM_ASSIGN(const auto count, counted(t.shape, "the input '" + name + "'"));
            if (count != t.values.size())
                return failure(error_code::invalid_argument, "the input '" + name + "' holds " + std::to_string(t.values.size()) +
                                                                 " values for shape " + dims_text(t.shape));
            held_ += count;
        }
        if (held_ > limits_.max_total_elements) return too_much("the inputs");
        values_ = inputs;
        const auto& main = model_.scopes[graph::main_scope];
        for (const auto n : main.nodes) {
            if (!model_.node_live(n)) continue;
            current_ = n;
            out_of_range_ = false;
            ONNXSTREAM_TRY(node(n));
            // The accessors below never touch memory outside a tensor; a node whose sizes
            // disagree is a model error, reported as such.
            if (out_of_range_)
                return failure(error_code::invalid_argument,
                               "the sizes of node " + model_.node_label(n) + " (" + std::string(model_.nodes[n].op_type()) +
                                   ") do not agree: its computation reaches outside a tensor",
                               "check the model with onnx.checker (full_check), or leave out --check");
        }
        return std::move(values_);
    }

private:
    // --- sizes and checked access --------------------------------------------------

    std::string here() const { return current_ == none ? std::string("the inputs") : "node " + model_.node_label(current_); }
    failure too_much(const std::string& what) const {
        return failure(error_code::limit_exceeded,
                       "the check's reference evaluation of " + what + " would hold more than " +
                           std::to_string(limits_.max_total_elements) + " values at once",
                       "leave out --check, or export with a smaller --input-shape");
    }
    // The element count of `shape`, refused past the per-tensor limit (or when negative).
    // The product of the non-zero dimensions is held to the limit, so that a zero cannot
    // hide huge dimensions beside it: every product of dims (Flatten's, an index's) then
    // stays below the limit too.
    result<std::size_t> counted(const dims& shape, const std::string& what = {}) const {
        dims nonzero;
        for (const auto d : shape)
            if (d != 0) nonzero.push_back(d);
        auto c = element_count(nonzero, limits_.max_tensor_elements);
        if (c && nonzero.size() != shape.size()) c = 0;
        if (!c)
            return failure(error_code::limit_exceeded,
                           "the check's reference evaluation of " + (what.empty() ? here() : what) + " needs a tensor of shape " +
                               dims_text(shape) + ": a negative size, or more than " +
                               std::to_string(limits_.max_tensor_elements) + " elements",
                           "leave out --check, or export with a smaller --input-shape");
        return static_cast<std::size_t>(*c);
    }
    result<dense_tensor> zeros(dims shape) const {
        ONNXSTREAM_ASSIGN(const auto count, counted(shape));
        dense_tensor t;
        t.shape = std::move(shape);
        t.values.assign(count, 0.0);
        return t;
    }
    double at(const dense_tensor& t, std::int64_t i) {
        if (i < 0 || sz(i) >= t.values.size()) {
            out_of_range_ = true;
            return 0.0;
        }
        return t.values[sz(i)];
    }
    double at(const dense_tensor& t, std::size_t i) {
        if (i >= t.values.size()) {
            out_of_range_ = true;
            return 0.0;
        }
        return t.values[i];
    }
    double& slot(dense_tensor& t, std::int64_t i) {
        if (i < 0 || sz(i) >= t.values.size()) {
            out_of_range_ = true;
            scratch_ = 0.0;
            return scratch_;
        }
        return t.values[sz(i)];
    }
    // Attribute `name` as `count` integers in [min, 2^31 - 1] (fallback when absent):
    // bounded before they enter index arithmetic.
    result<dims> bounded_ints(graph::node_id n, std::string_view name, dims fallback, std::int64_t min) const {
        auto v = attr_ints(n, name).value_or(std::move(fallback));
        for (const auto x : v)
            if (x < min || x > max_blob_dimension)
                return failure(error_code::invalid_argument,
                               "node " + model_.node_label(n) + " has " + std::string(name) + " " + std::to_string(x) +
                                   ", outside [" + std::to_string(min) + ", 2^31 - 1]",
                               "check the model with onnx.checker");
        return v;
    }
    failure disagree(const std::string& what) const {
        return failure(error_code::invalid_argument, "node " + model_.node_label(current_) + ": " + what,
                       "check the model with onnx.checker (full_check), or leave out --check");
    }

    bool has(graph::node_id n, std::size_t slot) const {
        return slot < model_.nodes[n].inputs.size() && model_.nodes[n].inputs[slot] != graph::empty_name;
    }

    result<dense_tensor> input(graph::node_id n, std::size_t slot) {
        const auto name = std::string(model_.text(model_.nodes[n].inputs[slot]));
        if (const auto found = values_.find(name); found != values_.end()) return found->second;
        const auto c = graph::find_constant(model_, index_, index_.input(n, slot));
        if (!c) return failure(error_code::unsupported, "the value '" + name + "' is not known to the reference evaluator");
        return constant_tensor(*c, name);
    }
    result<dense_tensor> constant_tensor(const graph::constant& c, const std::string& name) const {
        dense_tensor t;
        t.shape = c.dims;
        ONNXSTREAM_ASSIGN(const auto count, counted(t.shape, "the constant '" + name + "'"));
        ONNXSTREAM_ASSIGN(t.values, graph::constant_elements(model_, reader_, c, limits_.max_tensor_elements));
        if (t.values.size() != count)
            return failure(error_code::invalid_argument, "the constant '" + name + "' holds " + std::to_string(t.values.size()) +
                                                             " values for shape " + dims_text(t.shape));
        return t;
    }
    // Stores output `slot` of `n`; its values must match its shape, and everything held
    // stays within the limits.
    result<void> set(graph::node_id n, std::size_t slot, dense_tensor t, bool integer = false) {
        ONNXSTREAM_ASSIGN(const auto count, counted(t.shape));
        if (count != t.values.size())
            return disagree("its output " + std::to_string(slot) + " has " + std::to_string(t.values.size()) +
                            " values for shape " + dims_text(t.shape));
        if (slot < model_.nodes[n].outputs.size() && model_.nodes[n].outputs[slot] != graph::empty_name) {
            const auto name = std::string(model_.text(model_.nodes[n].outputs[slot]));
            if (integer) integer_.insert(name);
            if (const auto old = values_.find(name); old != values_.end()) held_ -= old->second.values.size();
            held_ += count;
            if (held_ > limits_.max_total_elements) return too_much(here());
            values_[name] = std::move(t);
        }
        return {};
    }
    // Whether input `slot` holds integers (ONNX integer types: Div truncates).
    bool integer_input(graph::node_id n, std::size_t slot) const {
        const auto name = std::string(model_.text(model_.nodes[n].inputs[slot]));
        if (integer_.contains(name)) return true;
        if (values_.contains(name)) return false;
        const auto c = graph::find_constant(model_, index_, index_.input(n, slot));
        return c && c->data_type != 1 && c->data_type != 10 && c->data_type != 11 && c->data_type != 16;
    }

    result<void> shape_of(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto rank = static_cast<std::int64_t>(x.shape.size());
        auto start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
        if (start < 0) start += rank;
        if (end < 0) end += rank;
        start = std::clamp<std::int64_t>(start, 0, rank);
        end = std::clamp<std::int64_t>(end, start, rank);
        dense_tensor y;
        y.shape = {end - start};
        for (auto i = start; i < end; ++i) y.values.push_back(static_cast<double>(x.shape[sz(i)]));
        return set(n, 0, std::move(y), true);
    }

    result<void> gather(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        ONNXSTREAM_ASSIGN(const auto idx, input(n, 1));
        const auto axis = axis_of(attr_int(n, "axis", 0), x.shape.size());
        if (!axis) return disagree("its axis is out of range");
        const auto a = *axis;
        // Products of the input's own dims: at most its element count, which is bounded.
        std::size_t outer = 1, inner = 1;
        for (std::size_t i = 0; i < a; ++i) outer *= sz(x.shape[i]);
        for (std::size_t i = a + 1; i < x.shape.size(); ++i) inner *= sz(x.shape[i]);
        dense_tensor y;
        y.shape.assign(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(a));
        y.shape.insert(y.shape.end(), idx.shape.begin(), idx.shape.end());
        y.shape.insert(y.shape.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(a) + 1, x.shape.end());
        ONNXSTREAM_ASSIGN(const auto count, counted(y.shape));
        y.values.reserve(count);
        for (std::size_t o = 0; o < outer; ++o)
            for (const auto v : idx.values) {
                auto k = to_int64(v);
                if (k < 0) k += x.shape[a];
                if (k < 0 || k >= x.shape[a]) return failure(error_code::unsupported, "a Gather index is out of range");
                const auto first = (o * sz(x.shape[a]) + sz(k)) * inner;
                for (std::size_t j = 0; j < inner; ++j) y.values.push_back(at(x, first + j));
            }
        return set(n, 0, std::move(y), integer_input(n, 0));
    }
    result<dims> int_input(graph::node_id n, std::size_t slot) {
        ONNXSTREAM_ASSIGN(const auto t, input(n, slot));
        dims out;
        for (const auto v : t.values) out.push_back(to_int64(v));
        return out;
    }

    result<void> node(graph::node_id n) {
        const std::string op(model_.nodes[n].op_type());
        if (op == "Constant") {
            const auto c = graph::find_constant(model_, index_, index_.output(n, 0));
            if (!c) return failure(error_code::unsupported, "a Constant the reference evaluator cannot read");
            ONNXSTREAM_ASSIGN(auto t, constant_tensor(*c, model_.node_label(n)));
            return set(n, 0, std::move(t));
        }
        if (op == "Conv" || op == "ConvTranspose") return conv(n, op == "ConvTranspose");
        if (op == "MaxPool" || op == "AveragePool") return pool(n, op == "MaxPool");
        if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return global_pool(n, op == "GlobalMaxPool");
        if (op == "ReduceMean") return reduce_mean(n);
        if (op == "Gemm") return gemm(n);
        if (op == "MatMul") return matmul(n);
        if (op == "BatchNormalization") return batchnorm(n);
        if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min" || op == "Sum" ||
            op == "PRelu")
            return elementwise(n, op);
        if (op == "Relu" || op == "LeakyRelu" || op == "Sigmoid" || op == "Tanh" || op == "Elu" || op == "HardSigmoid" ||
            op == "HardSwish" || op == "Identity" || op == "Dropout" || op == "Clip")
            return unary(n, op);
        if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") return reshape(n, op);
        if (op == "Concat") return concat(n);
        if (op == "Softmax") return softmax(n);
        if (op == "Transpose") return transpose(n);
        if (op == "Split") return split(n);
        if (op == "Slice") return slice(n);
        if (op == "LRN") return lrn(n);
        if (op == "Pad") return pad(n);
        if (op == "Shape") return shape_of(n);
        if (op == "Gather") return gather(n);
        if (op == "Cast") {
            ONNXSTREAM_ASSIGN(auto x, input(n, 0));
            const auto to = attr_int(n, "to", 1);
            const bool to_integer = to != 1 && to != 10 && to != 11 && to != 16;
            if (to_integer)
                for (auto& v : x.values) v = std::trunc(v);
            return set(n, 0, std::move(x), to_integer);
        }
        if (op == "Resize" || op == "Upsample") return resize(n);
        return failure(error_code::unsupported, "the reference evaluator has no " + op + " (node " + model_.node_label(n) + ")");
    }

    // Strides, dilations and pads (auto_pad applied) of a Conv or ConvTranspose, each
    // checked against the input and weight shapes it indexes with.
    struct conv_geometry {
        std::int64_t group = 1;
        dims strides, dil, pads;
    };
    result<conv_geometry> geometry(graph::node_id n, const dense_tensor& x, const dense_tensor& w, bool transposed) const {
        conv_geometry g;
        g.group = attr_int(n, "group", 1);
        ONNXSTREAM_ASSIGN(g.strides, bounded_ints(n, "strides", dims{1, 1}, 1));
        ONNXSTREAM_ASSIGN(g.dil, bounded_ints(n, "dilations", dims{1, 1}, 1));
        ONNXSTREAM_ASSIGN(g.pads, bounded_ints(n, "pads", dims{0, 0, 0, 0}, 0));
        if (g.strides.size() != 2 || g.dil.size() != 2 || g.pads.size() != 4)
            return disagree("its strides, dilations or pads are not those of a 2-D convolution");
        const auto C = x.shape[1];
        if (g.group < 1 || g.group > C || C % g.group != 0) return disagree("its group does not divide its input channels");
        if (w.shape[2] < 1 || w.shape[3] < 1) return disagree("its kernel is empty");
        if (!transposed && (w.shape[0] % g.group != 0 || w.shape[1] != C / g.group))
            return disagree("its weight shape does not match its input channels and group");
        if (transposed && w.shape[0] != C) return disagree("its weight shape does not match its input channels");
        const auto auto_pad = attr_text(n, "auto_pad", "NOTSET");
        if (!transposed && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
            const std::array<std::int64_t, 2> in{x.shape[2], x.shape[3]}, k{w.shape[2], w.shape[3]};
            for (std::size_t i = 0; i < 2; ++i) {
                const auto target = (in[i] + g.strides[i] - 1) / g.strides[i];
                const auto total = std::max<std::int64_t>(0, (target - 1) * g.strides[i] + (k[i] - 1) * g.dil[i] + 1 - in[i]);
                g.pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
                g.pads[i + 2] = total - g.pads[i];
            }
        } else if (auto_pad == "VALID") {
            g.pads = {0, 0, 0, 0};
        }
        return g;
    }

    result<void> conv(graph::node_id n, bool transposed) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        ONNXSTREAM_ASSIGN(const auto w, input(n, 1));
        dense_tensor b;
        if (has(n, 2)) {
            ONNXSTREAM_ASSIGN(b, input(n, 2));
        }
        if (x.shape.size() != 4 || w.shape.size() != 4)
            return failure(error_code::unsupported, "only 2-D convolutions are evaluated");
        ONNXSTREAM_ASSIGN(const auto g, geometry(n, x, w, transposed));
        const auto outputs = transposed ? w.shape[1] * g.group : w.shape[0];
        if (!b.values.empty() && b.values.size() != sz(outputs)) return disagree("its bias does not have one value per output");
        if (!transposed) {
            ONNXSTREAM_ASSIGN(auto y, forward_conv(x, w, b, g));
            return set(n, 0, std::move(y));
        }
        ONNXSTREAM_ASSIGN(const auto op, bounded_ints(n, "output_padding", dims{0, 0}, 0));
        if (op.size() != 2) return disagree("its output_padding is not 2-D");
        ONNXSTREAM_ASSIGN(auto y, transposed_conv(x, w, b, g, op));
        return set(n, 0, std::move(y));
    }

    result<dense_tensor> forward_conv(const dense_tensor& x, const dense_tensor& w, const dense_tensor& b,
                                      const conv_geometry& geo) {
        const auto& [group, strides, dil, pads] = geo;
        const auto kh = w.shape[2], kw = w.shape[3];
        const auto N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
        const auto M = w.shape[0];
        const auto cg = C / group, mg = M / group;
        const auto Ho = onnx_pool_size(H, kh, strides[0], pads[0], pads[2], dil[0], false);
        const auto Wo = onnx_pool_size(W, kw, strides[1], pads[1], pads[3], dil[1], false);
        ONNXSTREAM_ASSIGN(auto y, zeros({N, M, Ho, Wo}));
        for (std::int64_t nn = 0; nn < N; ++nn)
            for (std::int64_t m = 0; m < M; ++m) {
                const auto g = m / mg;
                for (std::int64_t oh = 0; oh < Ho; ++oh)
                    for (std::int64_t ow = 0; ow < Wo; ++ow) {
                        double acc = b.values.empty() ? 0.0 : at(b, m);
                        for (std::int64_t c = 0; c < cg; ++c)
                            for (std::int64_t i = 0; i < kh; ++i) {
                                const auto ih = oh * strides[0] - pads[0] + i * dil[0];
                                if (ih < 0 || ih >= H) continue;
                                for (std::int64_t j = 0; j < kw; ++j) {
                                    const auto iw = ow * strides[1] - pads[1] + j * dil[1];
                                    if (iw < 0 || iw >= W) continue;
                                    acc += at(x, ((nn * C + g * cg + c) * H + ih) * W + iw) *
                                           at(w, ((m * cg + c) * kh + i) * kw + j);
                                }
                            }
                        slot(y, ((nn * M + m) * Ho + oh) * Wo + ow) = acc;
                    }
            }
        return y;
    }

    result<dense_tensor> transposed_conv(const dense_tensor& x, const dense_tensor& w, const dense_tensor& b,
                                         const conv_geometry& geo, const dims& op) {
        const auto& [group, strides, dil, pads] = geo;
        const auto kh = w.shape[2], kw = w.shape[3];
        const auto N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
        // Every factor is bounded (dims by the tensor limit, attributes by 2^31): no overflow.
        const auto mg = w.shape[1], M = mg * group, cg = C / group;
        const auto Ho = strides[0] * (H - 1) + (kh - 1) * dil[0] + 1 - pads[0] - pads[2] + op[0];
        const auto Wo = strides[1] * (W - 1) + (kw - 1) * dil[1] + 1 - pads[1] - pads[3] + op[1];
        ONNXSTREAM_ASSIGN(auto y, zeros({N, M, Ho, Wo}));
        for (std::int64_t nn = 0; nn < N; ++nn)
            for (std::int64_t c = 0; c < C; ++c) {
                const auto g = c / cg;
                for (std::int64_t ih = 0; ih < H; ++ih)
                    for (std::int64_t iw = 0; iw < W; ++iw) {
                        const auto v = at(x, ((nn * C + c) * H + ih) * W + iw);
                        for (std::int64_t m = 0; m < mg; ++m)
                            for (std::int64_t i = 0; i < kh; ++i) {
                                const auto oh = ih * strides[0] - pads[0] + i * dil[0];
                                if (oh < 0 || oh >= Ho) continue;
                                for (std::int64_t j = 0; j < kw; ++j) {
                                    const auto ow = iw * strides[1] - pads[1] + j * dil[1];
                                    if (ow < 0 || ow >= Wo) continue;
                                    slot(y, ((nn * M + g * mg + m) * Ho + oh) * Wo +
                                                ow) += v * at(w, ((c * mg + m) * kh + i) * kw + j);
                                }
                            }
                    }
            }
        if (!b.values.empty() && Ho * Wo > 0)
            for (std::size_t i = 0; i < y.values.size(); ++i) y.values[i] += at(b, (i / sz(Ho * Wo)) % sz(M));
        return y;
    }

    result<void> pool(graph::node_id n, bool is_max) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        if (x.shape.size() != 4) return failure(error_code::unsupported, "only 2-D pooling is evaluated");
        ONNXSTREAM_ASSIGN(const auto k, bounded_ints(n, "kernel_shape", dims{1, 1}, 1));
        ONNXSTREAM_ASSIGN(const auto s, bounded_ints(n, "strides", dims{1, 1}, 1));
        ONNXSTREAM_ASSIGN(auto pads, bounded_ints(n, "pads", dims{0, 0, 0, 0}, 0));
        if (k.size() != 2 || s.size() != 2 || pads.size() != 4)
            return disagree("its kernel_shape, strides or pads are not those of 2-D pooling");
        const bool ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
        const bool include_pad = attr_int(n, "count_include_pad", 0) != 0;
        const auto N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
        const auto auto_pad = attr_text(n, "auto_pad", "NOTSET");
        if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            const std::array<std::int64_t, 2> in{H, W};
            for (std::size_t i = 0; i < 2; ++i) {
                const auto target = (in[i] + s[i] - 1) / s[i];
                const auto total = std::max<std::int64_t>(0, (target - 1) * s[i] + k[i] - in[i]);
                pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
                pads[i + 2] = total - pads[i];
            }
        }
        const auto Ho = onnx_pool_size(H, k[0], s[0], pads[0], pads[2], 1, ceil_mode);
        const auto Wo = onnx_pool_size(W, k[1], s[1], pads[1], pads[3], 1, ceil_mode);
        ONNXSTREAM_ASSIGN(auto y, zeros({N, C, Ho, Wo}));
        for (std::int64_t p = 0; p < N * C; ++p)
            for (std::int64_t oh = 0; oh < Ho; ++oh)
                for (std::int64_t ow = 0; ow < Wo; ++ow) {
                    const auto hs = oh * s[0] - pads[0], ws = ow * s[1] - pads[1];
                    const auto he = hs + k[0], we = ws + k[1];
                    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
                    std::int64_t valid = 0;
                    for (auto ih = std::max<std::int64_t>(hs, 0); ih < std::min(he, H); ++ih)
                        for (auto iw = std::max<std::int64_t>(ws, 0); iw < std::min(we, W); ++iw) {
                            const auto v = at(x, (p * H + ih) * W + iw);
                            acc = is_max ? std::max(acc, v) : acc + v;
                            ++valid;
                        }
                    if (!is_max) {
                        const auto divisor = include_pad ? (std::min(he, H + pads[2]) - hs) * (std::min(we, W + pads[3]) - ws)
                                                         : valid;
                        acc /= static_cast<double>(divisor);
                    }
                    slot(y, (p * Ho + oh) * Wo + ow) = acc;
                }
        return set(n, 0, std::move(y));
    }

    result<void> global_pool(graph::node_id n, bool is_max) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        if (x.shape.size() < 2) return disagree("global pooling needs an input of rank 2 or more");
        const auto planes = sz(x.shape[0] * x.shape[1]);
        const auto area = x.values.size() / std::max<std::size_t>(planes, 1);
        dense_tensor y;
        y.shape = {x.shape[0], x.shape[1]};
        for (std::size_t i = 2; i < x.shape.size(); ++i) y.shape.push_back(1);
        for (std::size_t p = 0; p < planes; ++p) {
            double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
            for (std::size_t i = 0; i < area; ++i) acc = is_max ? std::max(acc, at(x, p * area + i)) : acc + at(x, p * area + i);
            y.values.push_back(is_max ? acc : acc / static_cast<double>(area));
        }
        return set(n, 0, std::move(y));
    }

    result<void> reduce_mean(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        auto axes = attr_ints(n, "axes");
        if (!axes && has(n, 1)) {
            ONNXSTREAM_ASSIGN(axes, int_input(n, 1));
        }
        std::set<std::int64_t> a;
        for (auto v : axes.value_or(dims{})) a.insert(v < 0 ? v + static_cast<std::int64_t>(x.shape.size()) : v);
        if (x.shape.size() != 4 || a != std::set<std::int64_t>{2, 3})
            return failure(error_code::unsupported, "the reference evaluator only has ReduceMean over H and W");
        ONNXSTREAM_TRY(global_pool(n, false));
        if (attr_int(n, "keepdims", 1) == 0) {
            auto& y = values_[std::string(model_.text(model_.nodes[n].outputs[0]))];
            y.shape = {x.shape[0], x.shape[1]};
        }
        return {};
    }

    result<void> gemm(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto a, input(n, 0));
        ONNXSTREAM_ASSIGN(const auto b, input(n, 1));
        if (a.shape.size() != 2 || b.shape.size() != 2) return disagree("Gemm needs 2-D A and B");
        const bool ta = attr_int(n, "transA", 0) != 0, tb = attr_int(n, "transB", 0) != 0;
        const auto alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
        const auto M = ta ? a.shape[1] : a.shape[0], K = ta ? a.shape[0] : a.shape[1];
        const auto N = tb ? b.shape[0] : b.shape[1];
        if ((tb ? b.shape[1] : b.shape[0]) != K) return disagree("its A and B do not share K");
        dense_tensor c;
        if (has(n, 2)) {
            ONNXSTREAM_ASSIGN(c, input(n, 2));
        }
        if (c.shape.size() > 2) return disagree("its C has more than 2 dimensions");
        ONNXSTREAM_ASSIGN(auto y, zeros({M, N}));
        for (std::int64_t i = 0; i < M; ++i)
            for (std::int64_t j = 0; j < N; ++j) {
                double acc = 0;
                for (std::int64_t k = 0; k < K; ++k) acc += at(a, ta ? k * M + i : i * K + k) * at(b, tb ? j * K + k : k * N + j);
                double bias = 0;
                if (!c.values.empty()) {
                    const auto cols = c.shape.empty() ? 1 : c.shape.back();
                    const auto rows = c.shape.size() == 2 ? c.shape[0] : 1;
                    bias = at(c, (rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j));
                }
                slot(y, i * N + j) = alpha * acc + beta * bias;
            }
        return set(n, 0, std::move(y));
    }

    result<void> matmul(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto a, input(n, 0));
        ONNXSTREAM_ASSIGN(const auto b, input(n, 1));
        if (b.shape.size() != 2 || a.shape.empty())
            return failure(error_code::unsupported, "the reference evaluator only has MatMul by a 2-D B");
        const auto K = b.shape[0], N = b.shape[1];
        if (a.shape.back() != K || K < 1) return disagree("its A does not match B");
        const auto rows = static_cast<std::int64_t>(a.values.size()) / K;
        auto shape = a.shape;
        shape.back() = N;
        ONNXSTREAM_ASSIGN(auto y, zeros(std::move(shape)));
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t k = 0; k < K; ++k) {
                const auto v = at(a, i * K + k);
                for (std::int64_t j = 0; j < N; ++j) slot(y, i * N + j) += v * at(b, k * N + j);
            }
        return set(n, 0, std::move(y));
    }

    result<void> batchnorm(graph::node_id n) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        std::array<dense_tensor, 4> p;
        for (std::size_t k = 0; k < 4; ++k) {
            ONNXSTREAM_ASSIGN(p[k], input(n, k + 1));
        }
        const auto eps = attr_float(n, "epsilon", 1e-5);
        if (x.shape.size() < 2) return disagree("BatchNormalization needs an input of rank 2 or more");
        const auto C = sz(x.shape[1]);
        for (const auto& t : p)
            if (t.values.size() != C) return disagree("its scale, bias, mean and variance do not have one value per channel");
        if (x.values.empty()) return set(n, 0, std::move(x));
        const auto inner = x.values.size() / sz(x.shape[0]) / C;
        for (std::size_t i = 0; i < x.values.size(); ++i) {
            const auto c = (i / inner) % C;
            x.values[i] = (x.values[i] - at(p[2], c)) / std::sqrt(std::max(at(p[3], c) + eps, 0.0)) * at(p[0], c) + at(p[1], c);
        }
        return set(n, 0, std::move(x));
    }

    // numpy broadcasting of any number of inputs
    result<void> elementwise(graph::node_id n, const std::string& op) {
        bool integer = true;
        for (std::size_t s = 0; s < model_.nodes[n].inputs.size(); ++s) integer = integer && integer_input(n, s);
        std::vector<dense_tensor> in;
        for (std::size_t s = 0; s < model_.nodes[n].inputs.size(); ++s) {
            ONNXSTREAM_ASSIGN(auto t, input(n, s));
            in.push_back(std::move(t));
        }
        std::size_t rank = 0;
        for (const auto& t : in) rank = std::max(rank, t.shape.size());
        dims out(rank, 1);
        for (const auto& t : in)
            for (std::size_t i = 0; i < t.shape.size(); ++i) {
                auto& d = out[rank - t.shape.size() + i];
                d = std::max(d, t.shape[i]);
            }
        for (const auto& t : in)
            for (std::size_t i = 0; i < t.shape.size(); ++i)
                if (t.shape[i] != 1 && t.shape[i] != out[rank - t.shape.size() + i])
                    return disagree("its inputs do not broadcast (" + dims_text(t.shape) + " against " + dims_text(out) + ")");
        ONNXSTREAM_ASSIGN(auto y, zeros(out));
        std::vector<dims> strides;
        for (const auto& t : in) {
            dims st(rank, 0);
            std::int64_t acc = 1;
            for (std::size_t i = t.shape.size(); i-- > 0;) {
                const auto axis = rank - t.shape.size() + i;
                st[axis] = t.shape[i] == 1 ? 0 : acc;
                acc *= t.shape[i];
            }
            strides.push_back(st);
        }
        dims idx(rank, 0);
        for (std::size_t flat = 0; flat < y.values.size(); ++flat) {
            double acc = 0;
            for (std::size_t k = 0; k < in.size(); ++k) {
                std::int64_t offset = 0;
                for (std::size_t i = 0; i < rank; ++i) offset += idx[i] * strides[k][i];
                const auto v = at(in[k], offset);
                if (k == 0) acc = v;
                else if (op == "Add" || op == "Sum") acc += v;
                else if (op == "Sub") acc -= v;
                else if (op == "Mul") acc *= v;
                else if (op == "Div") acc = integer ? std::trunc(acc / v) : acc / v;
                else if (op == "Max") acc = std::max(acc, v);
                else if (op == "Min") acc = std::min(acc, v);
                else if (op == "PRelu") acc = acc < 0 ? acc * v : acc;
            }
            y.values[flat] = acc;
            for (std::size_t i = rank; i-- > 0;) {
                if (++idx[i] < out[i]) break;
                idx[i] = 0;
            }
        }
        return set(n, 0, std::move(y), integer);
    }

    result<void> unary(graph::node_id n, const std::string& op) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
        if (op == "Clip") {
            if (model_.opset("") < 11) {
                lo = attr_float(n, "min", lo);
                hi = attr_float(n, "max", hi);
            } else {
                if (has(n, 1)) {
                    ONNXSTREAM_ASSIGN(const auto t, input(n, 1));
                    if (t.values.size() != 1) return disagree("its min is not one value");
                    lo = t.values[0];
                }
                if (has(n, 2)) {
                    ONNXSTREAM_ASSIGN(const auto t, input(n, 2));
                    if (t.values.size() != 1) return disagree("its max is not one value");
                    hi = t.values[0];
                }
            }
        }
        const auto alpha = attr_float(n, "alpha", op == "LeakyRelu" ? 0.01 : op == "HardSigmoid" ? 0.2 : 1.0);
        const auto beta = attr_float(n, "beta", 0.5);
        for (auto& v : x.values) {
            if (op == "Relu") v = std::max(v, 0.0);
            else if (op == "LeakyRelu") v = v < 0 ? alpha * v : v;
            else if (op == "Sigmoid") v = 1.0 / (1.0 + std::exp(-v));
            else if (op == "Tanh") v = std::tanh(v);
            else if (op == "Elu") v = v < 0 ? alpha * (std::exp(v) - 1.0) : v;
            else if (op == "HardSigmoid") v = std::clamp(alpha * v + beta, 0.0, 1.0);
            else if (op == "HardSwish") v = v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0);
            else if (op == "Clip") v = std::min(std::max(v, lo), hi);
        }
        return set(n, 0, std::move(x));
    }

    result<void> reshape(graph::node_id n, const std::string& op) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        const auto& in = x.shape;
        dims target;
        if (op == "Flatten") {
            const auto axis = axis_of(attr_int(n, "axis", 1), in.size(), true);
            if (!axis) return disagree("its axis is out of range");
            std::int64_t a = 1, b = 1;
            for (std::size_t i = 0; i < in.size(); ++i) (i < *axis ? a : b) *= in[i];
            target = {a, b};
        } else if (op == "Reshape") {
            ONNXSTREAM_ASSIGN(const auto s, int_input(n, 1));
            std::int64_t known = 1;
            std::optional<std::size_t> infer;
            for (std::size_t i = 0; i < s.size(); ++i) {
                auto d = s[i];
                if (d == 0 && attr_int(n, "allowzero", 0) == 0) {
                    if (i >= in.size()) return disagree("a 0 in its shape has no input dimension");
                    d = in[i];
                }
                if (d == -1) {
                    if (infer) return disagree("its shape has two -1");
                    infer = i;
                    d = 1;
                } else {
                    const auto product = d < 0 ? std::nullopt : checked_multiply(known, d);
                    if (!product) return disagree("its shape has a negative or overflowing size");
                    known = *product;
                }
                target.push_back(d);
            }
            if (infer) {
                if (known == 0) return disagree("its shape infers a size from an empty product");
                target[*infer] = static_cast<std::int64_t>(x.values.size()) / known;
            }
        } else {
            dims axes;
            if (const auto a = attr_ints(n, "axes")) axes = *a;
            else if (has(n, 1)) {
                ONNXSTREAM_ASSIGN(axes, int_input(n, 1));
            }
            const auto squeezed = squeezed_shape(in, axes, op == "Squeeze");
            if (!squeezed) return failure(error_code::unsupported, "Squeeze of a dimension that is not 1");
            target = *squeezed;
        }
        if (element_count(target, limits_.max_tensor_elements) != x.values.size())
            return failure(error_code::unsupported, op + " changes the element count");
        x.shape = target;
        return set(n, 0, std::move(x), integer_input(n, 0));
    }

    result<void> concat(graph::node_id n) {
        std::vector<dense_tensor> in;
        for (std::size_t s = 0; s < model_.nodes[n].inputs.size(); ++s) {
            ONNXSTREAM_ASSIGN(auto t, input(n, s));
            in.push_back(std::move(t));
        }
        if (in.empty()) return disagree("Concat has no inputs");
        const auto axis = axis_of(attr_int(n, "axis", 1), in[0].shape.size());
        if (!axis) return disagree("its axis is out of range");
        const auto a = *axis;
        dense_tensor y;
        y.shape = in[0].shape;
        y.shape[a] = 0;
        for (const auto& t : in) {
            if (t.shape.size() != y.shape.size()) return disagree("its inputs differ in rank");
            for (std::size_t i = 0; i < t.shape.size(); ++i)
                if (i != a && t.shape[i] != y.shape[i]) return disagree("its inputs differ outside the axis");
            y.shape[a] += t.shape[a];  // each bounded by the tensor limit: the sum fits
        }
        ONNXSTREAM_ASSIGN(const auto count, counted(y.shape));
        y.values.reserve(count);
        bool integer = true;
        for (std::size_t s = 0; s < in.size(); ++s) integer = integer && integer_input(n, s);
        std::size_t outer = 1;
        for (std::size_t i = 0; i < a; ++i) outer *= sz(y.shape[i]);
        for (std::size_t o = 0; o < outer; ++o)
            for (const auto& t : in) {
                const auto block = t.values.size() / outer;
                for (std::size_t i = 0; i < block; ++i) y.values.push_back(at(t, o * block + i));
            }
        return set(n, 0, std::move(y), integer);
    }

    result<void> softmax(graph::node_id n) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        const auto rank = static_cast<std::int64_t>(x.shape.size());
        const bool coerced = model_.opset("") < 13;
        const auto index = axis_of(attr_int(n, "axis", coerced ? 1 : -1), x.shape.size());
        if (!index) return disagree("its axis is out of range");
        const auto axis = static_cast<std::int64_t>(*index);
        std::size_t outer = 1, length = 1, inner = 1;
        for (std::int64_t i = 0; i < rank; ++i) {
            const auto d = sz(x.shape[sz(i)]);
            if (i < axis) outer *= d;
            else if (i == axis || coerced) length *= d;
            else inner *= d;
        }
        for (std::size_t o = 0; o < outer; ++o)
            for (std::size_t i = 0; i < inner; ++i) {
                double top = -std::numeric_limits<double>::infinity(), sum = 0;
                // outer * length * inner is the element count: every index is in range.
                for (std::size_t k = 0; k < length; ++k) top = std::max(top, x.values[(o * length + k) * inner + i]);
                for (std::size_t k = 0; k < length; ++k) sum += std::exp(x.values[(o * length + k) * inner + i] - top);
                for (std::size_t k = 0; k < length; ++k) {
                    auto& v = x.values[(o * length + k) * inner + i];
                    v = std::exp(v - top) / sum;
                }
            }
        return set(n, 0, std::move(x));
    }

    result<void> transpose(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto rank = x.shape.size();
        auto perm = attr_ints(n, "perm");
        if (!perm) {
            perm.emplace();
            for (std::size_t i = rank; i-- > 0;) perm->push_back(static_cast<std::int64_t>(i));
        }
        if (perm->size() != rank) return disagree("its perm does not match the rank");
        std::vector<bool> seen(rank, false);
        for (const auto p : *perm) {
            if (p < 0 || sz(p) >= rank || seen[sz(p)]) return disagree("its perm is not a permutation of the axes");
            seen[sz(p)] = true;
        }
        dense_tensor y;
        for (const auto p : *perm) y.shape.push_back(x.shape[sz(p)]);
        y.values.resize(x.values.size());
        dims in_strides(rank, 1);
        for (std::size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * x.shape[i];
        dims idx(rank, 0);
        for (std::size_t flat = 0; flat < y.values.size(); ++flat) {
            std::int64_t offset = 0;
            for (std::size_t i = 0; i < rank; ++i) offset += idx[i] * in_strides[sz((*perm)[i])];
            y.values[flat] = at(x, offset);
            for (std::size_t i = rank; i-- > 0;) {
                if (++idx[i] < y.shape[i]) break;
                idx[i] = 0;
            }
        }
        return set(n, 0, std::move(y));
    }

    // Copies [begin, begin + length) of `axis` (the caller checks the range).
    dense_tensor take(const dense_tensor& x, std::size_t axis, std::int64_t begin, std::int64_t length) {
        dense_tensor y;
        y.shape = x.shape;
        y.shape[axis] = length;
        std::size_t outer = 1, inner = 1;
        for (std::size_t i = 0; i < axis; ++i) outer *= sz(x.shape[i]);
        for (std::size_t i = axis + 1; i < x.shape.size(); ++i) inner *= sz(x.shape[i]);
        const auto full = sz(x.shape[axis]);
        for (std::size_t o = 0; o < outer; ++o) {
            const auto first = (o * full + sz(begin)) * inner;
            for (std::size_t i = 0; i < sz(length) * inner; ++i) y.values.push_back(at(x, first + i));
        }
        return y;
    }

    result<void> split(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto index = axis_of(attr_int(n, "axis", 0), x.shape.size());
        if (!index) return disagree("its axis is out of range");
        const auto axis = *index;
        const auto parts = model_.nodes[n].outputs.size();
        if (parts == 0) return {};
        dims sizes;
        if (const auto s = attr_ints(n, "split")) sizes = *s;
        else if (has(n, 1)) {
            ONNXSTREAM_ASSIGN(sizes, int_input(n, 1));
        } else sizes.assign(parts, x.shape[axis] / static_cast<std::int64_t>(parts));
        std::int64_t begin = 0;
        for (std::size_t i = 0; i < parts && i < sizes.size(); ++i) {
            if (sizes[i] < 0 || sizes[i] > x.shape[axis] - begin) return disagree("its split sizes pass the end of the axis");
            ONNXSTREAM_TRY(set(n, i, take(x, axis, begin, sizes[i])));
            begin += sizes[i];
        }
        return {};
    }

    result<void> slice(graph::node_id n) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        dims starts, ends, axes, steps;
        if (model_.opset("") < 10) {
            starts = attr_ints(n, "starts").value_or(dims{});
            ends = attr_ints(n, "ends").value_or(dims{});
            axes = attr_ints(n, "axes").value_or(dims{});
        } else {
            ONNXSTREAM_ASSIGN(starts, int_input(n, 1));
            ONNXSTREAM_ASSIGN(ends, int_input(n, 2));
            if (has(n, 3)) {
                ONNXSTREAM_ASSIGN(axes, int_input(n, 3));
            }
            if (has(n, 4)) {
                ONNXSTREAM_ASSIGN(steps, int_input(n, 4));
            }
        }
        if (axes.empty())
            for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
        for (const auto s : steps)
            if (s != 1) return failure(error_code::unsupported, "the reference evaluator only slices with step 1");
        if (starts.size() != axes.size() || ends.size() != axes.size())
            return disagree("its starts, ends and axes differ in length");
        for (std::size_t i = 0; i < axes.size(); ++i) {
            const auto index = axis_of(axes[i], x.shape.size());
            if (!index) return disagree("an axis is out of range");
            const auto axis = *index;
            const auto dim = x.shape[axis];
            auto clamp = [&](std::int64_t v) {
                if (v < 0) v = v < -dim ? 0 : v + dim;
                return std::min(v, dim);
            };
            const auto b = clamp(starts[i]);
            const auto e = std::max(b, clamp(ends[i]));
            x = take(x, axis, b, e - b);
        }
        return set(n, 0, std::move(x));
    }

    result<void> pad(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        dims pads;
        if (model_.opset("") < 11) {
            pads = attr_ints(n, "pads").value_or(dims{});
        } else {
            ONNXSTREAM_ASSIGN(pads, int_input(n, 1));
        }
        if (attr_text(n, "mode", "constant") != "constant" || has(n, 2))
            return failure(error_code::unsupported, "the reference evaluator only pads with zeros");
        for (const auto p : pads)
            if (p != 0) return failure(error_code::unsupported, "the reference evaluator only has Pad of nothing");
        return set(n, 0, x);
    }

    result<void> lrn(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto size = attr_int(n, "size", 1);
        if (size < 1 || size > max_blob_dimension) return disagree("its size is out of range");
        const auto alpha = attr_float(n, "alpha", 1e-4), beta = attr_float(n, "beta", 0.75), bias = attr_float(n, "bias", 1.0);
        if (x.shape.size() < 2) return disagree("LRN needs an input of rank 2 or more");
        const auto N = x.shape[0], C = x.shape[1];
        if (N * C == 0) return set(n, 0, x);
        const auto inner = x.values.size() / sz(N * C);
        auto y = x;
        for (std::int64_t nn = 0; nn < N; ++nn)
            for (std::int64_t c = 0; c < C; ++c)
                for (std::size_t i = 0; i < inner; ++i) {
                    double sum = 0;
                    const auto lo = std::max<std::int64_t>(0, c - (size - 1) / 2);
                    const auto hi = std::min<std::int64_t>(C - 1, c + size / 2);
                    for (auto k = lo; k <= hi; ++k) {
                        const auto v = at(x, sz(nn * C + k) * inner + i);
                        sum += v * v;
                    }
                    const auto i_out = sz(nn * C + c) * inner + i;
                    slot(y, static_cast<std::int64_t>(i_out)) = at(x, i_out) /
                                                                std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
                }
        return set(n, 0, std::move(y));
    }

    result<void> resize(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto& nd = model_.nodes[n];
        const auto opset = model_.opset("");
        std::vector<double> scales;
        if (nd.op_type() == "Upsample" && opset < 9) {
            if (const auto a = model_.attribute(n, "scales")) scales = a->floats;
        } else {
            const std::size_t slot = nd.op_type() == "Upsample" || opset < 11 ? 1 : 2;
            if (has(n, slot)) {
                ONNXSTREAM_ASSIGN(const auto t, input(n, slot));
                scales = t.values;
            }
            if (scales.empty() && has(n, 3)) {
                ONNXSTREAM_ASSIGN(const auto t, input(n, 3));
                for (std::size_t i = 0; i < t.values.size(); ++i) scales.push_back(t.values[i] / static_cast<double>(x.shape[i]));
            }
        }
        if (attr_text(n, "mode", "nearest") != "nearest" || scales.size() != 4 || x.shape.size() != 4)
            return failure(error_code::unsupported, "the reference evaluator only has nearest 2-D resizing");
        const auto transform = opset >= 11 && nd.op_type() == "Resize"
                                   ? attr_text(n, "coordinate_transformation_mode", "half_pixel")
                                   : "asymmetric";
        const auto nearest = opset >= 11 && nd.op_type() == "Resize" ? attr_text(n, "nearest_mode", "round_prefer_floor")
                                                                     : "floor";
        dense_tensor y;
        y.shape = x.shape;
        for (std::size_t i = 2; i < 4; ++i) {
            const auto size = std::floor(static_cast<double>(x.shape[i]) * scales[i]);
            if (!(scales[i] > 0) || !(size >= 0) || size > static_cast<double>(limits_.max_tensor_elements))
                return disagree("its scales are not positive, or give a size out of range");
            y.shape[i] = static_cast<std::int64_t>(size);
        }
        ONNXSTREAM_ASSIGN(const auto count, counted(y.shape));
        y.values.reserve(count);
        auto source = [&](std::int64_t out, std::size_t axis) {
            const auto s = scales[axis];
            double v = transform == "asymmetric" ? static_cast<double>(out) / s : (static_cast<double>(out) + 0.5) / s - 0.5;
            std::int64_t i = 0;
            if (nearest == "floor") i = to_int64(std::floor(v));
            else if (nearest == "ceil") i = to_int64(std::ceil(v));
            else if (nearest == "round_prefer_ceil") i = to_int64(std::floor(v + 0.5));
            else i = to_int64(std::ceil(v - 0.5));
            return std::clamp<std::int64_t>(i, 0, x.shape[axis] - 1);
        };
        const auto planes = x.shape[0] * x.shape[1];
        for (std::int64_t p = 0; p < planes; ++p)
            for (std::int64_t h = 0; h < y.shape[2]; ++h)
                for (std::int64_t w = 0; w < y.shape[3]; ++w)
                    y.values.push_back(at(x, (p * x.shape[2] + source(h, 2)) * x.shape[3] + source(w, 3)));
        return set(n, 0, std::move(y));
    }

    const graph::graph_model& model_;
    const graph::graph_index index_;
    const graph::tensor_reader& reader_;
    const evaluation_limits limits_;
    std::map<std::string, dense_tensor> values_;
    std::set<std::string> integer_;
    std::uint64_t held_ = 0;  // elements in values_
    graph::node_id current_ = none;
    bool out_of_range_ = false;  // an accessor was asked for an element outside its tensor
    double scratch_ = 0.0;       // what a write outside a tensor lands on
};

}  // namespace

result<std::map<std::string, dense_tensor>> evaluate_onnx(const graph::graph_model& model, const graph::tensor_reader& reader,
                                                          const std::map<std::string, dense_tensor>& inputs,
                                                          const evaluation_limits& limits) {
    return evaluator(model, reader, limits).run(inputs);
}

}  // namespace onnxstream::caffe
