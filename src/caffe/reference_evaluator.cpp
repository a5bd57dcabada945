#include <onnxstream/caffe/reference_evaluator.hpp>

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

std::size_t count_of(const dims& s) {
    std::size_t n = 1;
    for (const auto d : s) n *= static_cast<std::size_t>(d);
    return n;
}

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

class evaluator : node_attributes {
public:
    evaluator(const graph::graph_model& model, const graph::tensor_reader& reader)
        : node_attributes(model), model_(model), index_(model), reader_(reader) {}

    result<std::map<std::string, dense_tensor>> run(const std::map<std::string, dense_tensor>& inputs) {
        values_ = inputs;
        const auto& main = model_.scopes[graph::main_scope];
        for (const auto n : main.nodes) {
            if (!model_.node_live(n)) continue;
            ONNXSTREAM_TRY(node(n));
        }
        return std::move(values_);
    }

private:
    bool has(graph::node_id n, std::size_t slot) const {
        return slot < model_.nodes[n].inputs.size() && model_.nodes[n].inputs[slot] != graph::empty_name;
    }

    result<dense_tensor> input(graph::node_id n, std::size_t slot) {
        const auto name = std::string(model_.text(model_.nodes[n].inputs[slot]));
        if (const auto found = values_.find(name); found != values_.end()) return found->second;
        const auto c = graph::find_constant(model_, index_, index_.input(n, slot));
        if (!c) return failure(error_code::unsupported, "the value '" + name + "' is not known to the reference evaluator");
        dense_tensor t;
        t.shape = c->dims;
        ONNXSTREAM_ASSIGN(t.values, graph::constant_elements(model_, reader_, *c, 1ULL << 31));
        return t;
    }
    void set(graph::node_id n, std::size_t slot, dense_tensor t, bool integer = false) {
        if (slot < model_.nodes[n].outputs.size() && model_.nodes[n].outputs[slot] != graph::empty_name) {
            const auto name = std::string(model_.text(model_.nodes[n].outputs[slot]));
            if (integer) integer_.insert(name);
            values_[name] = std::move(t);
        }
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
        set(n, 0, std::move(y), true);
        return {};
    }

    result<void> gather(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        ONNXSTREAM_ASSIGN(const auto idx, input(n, 1));
        auto axis = attr_int(n, "axis", 0);
        if (axis < 0) axis += static_cast<std::int64_t>(x.shape.size());
        const auto a = sz(axis);
        std::size_t outer = 1, inner = 1;
        for (std::size_t i = 0; i < a; ++i) outer *= sz(x.shape[i]);
        for (std::size_t i = a + 1; i < x.shape.size(); ++i) inner *= sz(x.shape[i]);
        dense_tensor y;
        y.shape.assign(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(a));
        y.shape.insert(y.shape.end(), idx.shape.begin(), idx.shape.end());
        y.shape.insert(y.shape.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(a) + 1, x.shape.end());
        for (std::size_t o = 0; o < outer; ++o)
            for (const auto v : idx.values) {
                auto k = static_cast<std::int64_t>(v);
                if (k < 0) k += x.shape[a];
                if (k < 0 || k >= x.shape[a]) return failure(error_code::unsupported, "a Gather index is out of range");
                const auto first = x.values.begin() + static_cast<std::ptrdiff_t>((o * sz(x.shape[a]) + sz(k)) * inner);
                y.values.insert(y.values.end(), first, first + static_cast<std::ptrdiff_t>(inner));
            }
        set(n, 0, std::move(y), integer_input(n, 0));
        return {};
    }
    result<dims> int_input(graph::node_id n, std::size_t slot) {
        ONNXSTREAM_ASSIGN(const auto t, input(n, slot));
        dims out;
        for (const auto v : t.values)
            out.push_back(v >= 9.2e18    ? std::numeric_limits<std::int64_t>::max()
                          : v <= -9.2e18 ? std::numeric_limits<std::int64_t>::min()
                                         : static_cast<std::int64_t>(v));
        return out;
    }

    result<void> node(graph::node_id n) {
        const std::string op(model_.nodes[n].op_type);
        if (op == "Constant") {
            const auto c = graph::find_constant(model_, index_, index_.output(n, 0));
            if (!c) return failure(error_code::unsupported, "a Constant the reference evaluator cannot read");
            dense_tensor t;
            t.shape = c->dims;
            ONNXSTREAM_ASSIGN(t.values, graph::constant_elements(model_, reader_, *c, 1ULL << 31));
            set(n, 0, std::move(t));
            return {};
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
            set(n, 0, std::move(x), to_integer);
            return {};
        }
        if (op == "Resize" || op == "Upsample") return resize(n);
        return failure(error_code::unsupported, "the reference evaluator has no " + op + " (node " + model_.node_label(n) + ")");
    }

    // Strides, dilations and pads (auto_pad applied) of a Conv or ConvTranspose.
    struct conv_geometry {
        std::int64_t group = 1;
        dims strides, dil, pads;
    };
    conv_geometry geometry(graph::node_id n, const dense_tensor& x, const dense_tensor& w, bool transposed) const {
        conv_geometry g{attr_int(n, "group", 1), attr_ints(n, "strides").value_or(dims{1, 1}),
                        attr_ints(n, "dilations").value_or(dims{1, 1}), attr_ints(n, "pads").value_or(dims{0, 0, 0, 0})};
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
        const auto g = geometry(n, x, w, transposed);
        if (!transposed) set(n, 0, forward_conv(x, w, b, g));
        else set(n, 0, transposed_conv(x, w, b, g, attr_ints(n, "output_padding").value_or(dims{0, 0})));
        return {};
    }

    static dense_tensor forward_conv(const dense_tensor& x, const dense_tensor& w, const dense_tensor& b,
                                     const conv_geometry& geo) {
        const auto& [group, strides, dil, pads] = geo;
        const auto kh = w.shape[2], kw = w.shape[3];
        const auto N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
        dense_tensor y;
        const auto M = w.shape[0];
        const auto cg = C / group, mg = M / group;
        const auto Ho = onnx_pool_size(H, kh, strides[0], pads[0], pads[2], dil[0], false);
        const auto Wo = onnx_pool_size(W, kw, strides[1], pads[1], pads[3], dil[1], false);
        y.shape = {N, M, Ho, Wo};
        y.values.assign(count_of(y.shape), 0.0);
        for (std::int64_t nn = 0; nn < N; ++nn)
            for (std::int64_t m = 0; m < M; ++m) {
                const auto g = m / mg;
                for (std::int64_t oh = 0; oh < Ho; ++oh)
                    for (std::int64_t ow = 0; ow < Wo; ++ow) {
                        double acc = b.values.empty() ? 0.0 : b.values[sz(m)];
                        for (std::int64_t c = 0; c < cg; ++c)
                            for (std::int64_t i = 0; i < kh; ++i) {
                                const auto ih = oh * strides[0] - pads[0] + i * dil[0];
                                if (ih < 0 || ih >= H) continue;
                                for (std::int64_t j = 0; j < kw; ++j) {
                                    const auto iw = ow * strides[1] - pads[1] + j * dil[1];
                                    if (iw < 0 || iw >= W) continue;
                                    acc += x.values[sz(((nn * C + g * cg + c) * H + ih) * W + iw)] *
                                           w.values[sz(((m * cg + c) * kh + i) * kw + j)];
                                }
                            }
                        y.values[sz(((nn * M + m) * Ho + oh) * Wo + ow)] = acc;
                    }
            }
        return y;
    }

    static dense_tensor transposed_conv(const dense_tensor& x, const dense_tensor& w, const dense_tensor& b,
                                        const conv_geometry& geo, const dims& op) {
        const auto& [group, strides, dil, pads] = geo;
        const auto kh = w.shape[2], kw = w.shape[3];
        const auto N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
        dense_tensor y;
        const auto mg = w.shape[1], M = mg * group, cg = C / group;
        const auto Ho = strides[0] * (H - 1) + (kh - 1) * dil[0] + 1 - pads[0] - pads[2] + op[0];
        const auto Wo = strides[1] * (W - 1) + (kw - 1) * dil[1] + 1 - pads[1] - pads[3] + op[1];
        y.shape = {N, M, Ho, Wo};
        y.values.assign(count_of(y.shape), 0.0);
        for (std::int64_t nn = 0; nn < N; ++nn)
            for (std::int64_t c = 0; c < C; ++c) {
                const auto g = c / cg;
                for (std::int64_t ih = 0; ih < H; ++ih)
                    for (std::int64_t iw = 0; iw < W; ++iw) {
                        const auto v = x.values[sz(((nn * C + c) * H + ih) * W + iw)];
                        for (std::int64_t m = 0; m < mg; ++m)
                            for (std::int64_t i = 0; i < kh; ++i) {
                                const auto oh = ih * strides[0] - pads[0] + i * dil[0];
                                if (oh < 0 || oh >= Ho) continue;
                                for (std::int64_t j = 0; j < kw; ++j) {
                                    const auto ow = iw * strides[1] - pads[1] + j * dil[1];
                                    if (ow < 0 || ow >= Wo) continue;
                                    y.values[sz(((nn * M + g * mg + m) * Ho + oh) * Wo + ow)] +=
                                        v * w.values[sz(((c * mg + m) * kh + i) * kw + j)];
                                }
                            }
                    }
            }
        if (!b.values.empty())
            for (std::size_t i = 0; i < y.values.size(); ++i) y.values[i] += b.values[(i / sz(Ho * Wo)) % sz(M)];
        return y;
    }

    result<void> pool(graph::node_id n, bool is_max) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        if (x.shape.size() != 4) return failure(error_code::unsupported, "only 2-D pooling is evaluated");
        const auto k = attr_ints(n, "kernel_shape").value_or(dims{1, 1});
        const auto s = attr_ints(n, "strides").value_or(dims{1, 1});
        auto pads = attr_ints(n, "pads").value_or(dims{0, 0, 0, 0});
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
        dense_tensor y;
        y.shape = {N, C, Ho, Wo};
        y.values.resize(count_of(y.shape));
        for (std::int64_t p = 0; p < N * C; ++p)
            for (std::int64_t oh = 0; oh < Ho; ++oh)
                for (std::int64_t ow = 0; ow < Wo; ++ow) {
                    const auto hs = oh * s[0] - pads[0], ws = ow * s[1] - pads[1];
                    const auto he = hs + k[0], we = ws + k[1];
                    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
                    std::int64_t valid = 0;
                    for (auto ih = std::max<std::int64_t>(hs, 0); ih < std::min(he, H); ++ih)
                        for (auto iw = std::max<std::int64_t>(ws, 0); iw < std::min(we, W); ++iw) {
                            const auto v = x.values[sz((p * H + ih) * W + iw)];
                            acc = is_max ? std::max(acc, v) : acc + v;
                            ++valid;
                        }
                    if (!is_max) {
                        const auto divisor = include_pad ? (std::min(he, H + pads[2]) - hs) * (std::min(we, W + pads[3]) - ws)
                                                         : valid;
                        acc /= static_cast<double>(divisor);
                    }
                    y.values[sz((p * Ho + oh) * Wo + ow)] = acc;
                }
        set(n, 0, std::move(y));
        return {};
    }

    result<void> global_pool(graph::node_id n, bool is_max) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto planes = sz(x.shape[0] * x.shape[1]);
        const auto area = x.values.size() / std::max<std::size_t>(planes, 1);
        dense_tensor y;
        y.shape = {x.shape[0], x.shape[1]};
        for (std::size_t i = 2; i < x.shape.size(); ++i) y.shape.push_back(1);
        for (std::size_t p = 0; p < planes; ++p) {
            double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
            for (std::size_t i = 0; i < area; ++i)
                acc = is_max ? std::max(acc, x.values[p * area + i]) : acc + x.values[p * area + i];
            y.values.push_back(is_max ? acc : acc / static_cast<double>(area));
        }
        set(n, 0, std::move(y));
        return {};
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
        const bool ta = attr_int(n, "transA", 0) != 0, tb = attr_int(n, "transB", 0) != 0;
        const auto alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
        const auto M = ta ? a.shape[1] : a.shape[0], K = ta ? a.shape[0] : a.shape[1];
        const auto N = tb ? b.shape[0] : b.shape[1];
        dense_tensor c;
        if (has(n, 2)) {
            ONNXSTREAM_ASSIGN(c, input(n, 2));
        }
        dense_tensor y;
        y.shape = {M, N};
        y.values.resize(sz(M * N));
        for (std::int64_t i = 0; i < M; ++i)
            for (std::int64_t j = 0; j < N; ++j) {
                double acc = 0;
                for (std::int64_t k = 0; k < K; ++k)
                    acc += a.values[sz(ta ? k * M + i : i * K + k)] * b.values[sz(tb ? j * K + k : k * N + j)];
                double bias = 0;
                if (!c.values.empty()) {
                    const auto cols = c.shape.empty() ? 1 : c.shape.back();
                    const auto rows = c.shape.size() == 2 ? c.shape[0] : 1;
                    bias = c.values[sz((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j))];
                }
                y.values[sz(i * N + j)] = alpha * acc + beta * bias;
            }
        set(n, 0, std::move(y));
        return {};
    }

    result<void> matmul(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto a, input(n, 0));
        ONNXSTREAM_ASSIGN(const auto b, input(n, 1));
        if (b.shape.size() != 2 || a.shape.empty())
            return failure(error_code::unsupported, "the reference evaluator only has MatMul by a 2-D B");
        const auto K = b.shape[0], N = b.shape[1];
        const auto rows = a.values.size() / sz(K);
        dense_tensor y;
        y.shape = a.shape;
        y.shape.back() = N;
        y.values.assign(rows * sz(N), 0.0);
        for (std::size_t i = 0; i < rows; ++i)
            for (std::int64_t k = 0; k < K; ++k) {
                const auto v = a.values[i * sz(K) + sz(k)];
                for (std::int64_t j = 0; j < N; ++j) y.values[i * sz(N) + sz(j)] += v * b.values[sz(k * N + j)];
            }
        set(n, 0, std::move(y));
        return {};
    }

    result<void> batchnorm(graph::node_id n) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        std::array<dense_tensor, 4> p;
        for (std::size_t k = 0; k < 4; ++k) {
            ONNXSTREAM_ASSIGN(p[k], input(n, k + 1));
        }
        const auto eps = attr_float(n, "epsilon", 1e-5);
        const auto C = sz(x.shape[1]);
        const auto inner = x.values.size() / sz(x.shape[0]) / C;
        for (std::size_t i = 0; i < x.values.size(); ++i) {
            const auto c = (i / inner) % C;
            x.values[i] = (x.values[i] - p[2].values[c]) / std::sqrt(std::max(p[3].values[c] + eps, 0.0)) * p[0].values[c] +
                          p[1].values[c];
        }
        set(n, 0, std::move(x));
        return {};
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
        dense_tensor y;
        y.shape = out;
        y.values.resize(count_of(out));
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
                const auto v = in[k].values[sz(offset)];
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
        set(n, 0, std::move(y), integer);
        return {};
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
                    lo = t.values.at(0);
                }
                if (has(n, 2)) {
                    ONNXSTREAM_ASSIGN(const auto t, input(n, 2));
                    hi = t.values.at(0);
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
        set(n, 0, std::move(x));
        return {};
    }

    result<void> reshape(graph::node_id n, const std::string& op) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        const auto& in = x.shape;
        dims target;
        if (op == "Flatten") {
            auto axis = attr_int(n, "axis", 1);
            if (axis < 0) axis += static_cast<std::int64_t>(in.size());
            std::int64_t a = 1, b = 1;
            for (std::size_t i = 0; i < in.size(); ++i) (static_cast<std::int64_t>(i) < axis ? a : b) *= in[i];
            target = {a, b};
        } else if (op == "Reshape") {
            ONNXSTREAM_ASSIGN(const auto s, int_input(n, 1));
            std::int64_t known = 1;
            std::optional<std::size_t> infer;
            for (std::size_t i = 0; i < s.size(); ++i) {
                auto d = s[i];
                if (d == 0 && attr_int(n, "allowzero", 0) == 0) d = in.at(i);
                if (d == -1) {
                    infer = i;
                    d = 1;
                } else {
                    known *= d;
                }
                target.push_back(d);
            }
            if (infer) target[*infer] = static_cast<std::int64_t>(x.values.size()) / known;
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
        if (count_of(target) != x.values.size()) return failure(error_code::unsupported, op + " changes the element count");
        x.shape = target;
        set(n, 0, std::move(x), integer_input(n, 0));
        return {};
    }

    result<void> concat(graph::node_id n) {
        std::vector<dense_tensor> in;
        for (std::size_t s = 0; s < model_.nodes[n].inputs.size(); ++s) {
            ONNXSTREAM_ASSIGN(auto t, input(n, s));
            in.push_back(std::move(t));
        }
        auto axis = attr_int(n, "axis", 1);
        if (axis < 0) axis += static_cast<std::int64_t>(in[0].shape.size());
        const auto a = sz(axis);
        dense_tensor y;
        y.shape = in[0].shape;
        y.shape[a] = 0;
        for (const auto& t : in) y.shape[a] += t.shape[a];
        bool integer = true;
        for (std::size_t s = 0; s < in.size(); ++s) integer = integer && integer_input(n, s);
        std::size_t outer = 1;
        for (std::size_t i = 0; i < a; ++i) outer *= sz(y.shape[i]);
        for (std::size_t o = 0; o < outer; ++o)
            for (const auto& t : in) {
                const auto block = t.values.size() / outer;
                y.values.insert(y.values.end(), t.values.begin() + static_cast<std::ptrdiff_t>(o * block),
                                t.values.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
            }
        set(n, 0, std::move(y), integer);
        return {};
    }

    result<void> softmax(graph::node_id n) {
        ONNXSTREAM_ASSIGN(auto x, input(n, 0));
        const auto rank = static_cast<std::int64_t>(x.shape.size());
        const bool coerced = model_.opset("") < 13;
        auto axis = attr_int(n, "axis", coerced ? 1 : -1);
        if (axis < 0) axis += rank;
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
                for (std::size_t k = 0; k < length; ++k) top = std::max(top, x.values[(o * length + k) * inner + i]);
                for (std::size_t k = 0; k < length; ++k) sum += std::exp(x.values[(o * length + k) * inner + i] - top);
                for (std::size_t k = 0; k < length; ++k) {
                    auto& v = x.values[(o * length + k) * inner + i];
                    v = std::exp(v - top) / sum;
                }
            }
        set(n, 0, std::move(x));
        return {};
    }

    result<void> transpose(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto rank = x.shape.size();
        auto perm = attr_ints(n, "perm");
        if (!perm) {
            perm.emplace();
            for (std::size_t i = rank; i-- > 0;) perm->push_back(static_cast<std::int64_t>(i));
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
            y.values[flat] = x.values[sz(offset)];
            for (std::size_t i = rank; i-- > 0;) {
                if (++idx[i] < y.shape[i]) break;
                idx[i] = 0;
            }
        }
        set(n, 0, std::move(y));
        return {};
    }

    // Copies [begin, begin + length) of `axis`.
    static dense_tensor take(const dense_tensor& x, std::size_t axis, std::int64_t begin, std::int64_t length) {
        dense_tensor y;
        y.shape = x.shape;
        y.shape[axis] = length;
        std::size_t outer = 1, inner = 1;
        for (std::size_t i = 0; i < axis; ++i) outer *= sz(x.shape[i]);
        for (std::size_t i = axis + 1; i < x.shape.size(); ++i) inner *= sz(x.shape[i]);
        const auto full = sz(x.shape[axis]);
        for (std::size_t o = 0; o < outer; ++o) {
            const auto first = x.values.begin() + static_cast<std::ptrdiff_t>((o * full + sz(begin)) * inner);
            y.values.insert(y.values.end(), first, first + static_cast<std::ptrdiff_t>(sz(length) * inner));
        }
        return y;
    }

    result<void> split(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        auto axis = attr_int(n, "axis", 0);
        if (axis < 0) axis += static_cast<std::int64_t>(x.shape.size());
        const auto parts = model_.nodes[n].outputs.size();
        dims sizes;
        if (const auto s = attr_ints(n, "split")) sizes = *s;
        else if (has(n, 1)) {
            ONNXSTREAM_ASSIGN(sizes, int_input(n, 1));
        } else sizes.assign(parts, x.shape[sz(axis)] / static_cast<std::int64_t>(parts));
        std::int64_t at = 0;
        for (std::size_t i = 0; i < parts && i < sizes.size(); ++i) {
            set(n, i, take(x, sz(axis), at, sizes[i]));
            at += sizes[i];
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
        for (std::size_t i = 0; i < axes.size(); ++i) {
            const auto axis = sz(axes[i] < 0 ? axes[i] + static_cast<std::int64_t>(x.shape.size()) : axes[i]);
            const auto dim = x.shape[axis];
            auto clamp = [&](std::int64_t v) {
                if (v < 0) v = v < -dim ? 0 : v + dim;
                return std::min(v, dim);
            };
            const auto b = clamp(starts[i]);
            const auto e = std::max(b, clamp(ends[i]));
            x = take(x, axis, b, e - b);
        }
        set(n, 0, std::move(x));
        return {};
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
        set(n, 0, x);
        return {};
    }

    result<void> lrn(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto size = attr_int(n, "size", 1);
        const auto alpha = attr_float(n, "alpha", 1e-4), beta = attr_float(n, "beta", 0.75), bias = attr_float(n, "bias", 1.0);
        const auto N = x.shape[0], C = x.shape[1];
        const auto inner = x.values.size() / sz(N * C);
        auto y = x;
        for (std::int64_t nn = 0; nn < N; ++nn)
            for (std::int64_t c = 0; c < C; ++c)
                for (std::size_t i = 0; i < inner; ++i) {
                    double sum = 0;
                    const auto lo = std::max<std::int64_t>(0, c - (size - 1) / 2);
                    const auto hi = std::min<std::int64_t>(C - 1, c + size / 2);
                    for (auto k = lo; k <= hi; ++k) {
                        const auto v = x.values[sz(nn * C + k) * inner + i];
                        sum += v * v;
                    }
                    const auto at = sz(nn * C + c) * inner + i;
                    y.values[at] = x.values[at] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
                }
        set(n, 0, std::move(y));
        return {};
    }

    result<void> resize(graph::node_id n) {
        ONNXSTREAM_ASSIGN(const auto x, input(n, 0));
        const auto& nd = model_.nodes[n];
        const auto opset = model_.opset("");
        std::vector<double> scales;
        if (nd.op_type == "Upsample" && opset < 9) {
            if (const auto a = model_.attribute(n, "scales")) scales = a->floats;
        } else {
            const std::size_t slot = nd.op_type == "Upsample" || opset < 11 ? 1 : 2;
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
        const auto transform = opset >= 11 && nd.op_type == "Resize"
                                   ? attr_text(n, "coordinate_transformation_mode", "half_pixel")
                                   : "asymmetric";
        const auto nearest = opset >= 11 && nd.op_type == "Resize" ? attr_text(n, "nearest_mode", "round_prefer_floor") : "floor";
        dense_tensor y;
        y.shape = x.shape;
        for (std::size_t i = 2; i < 4; ++i)
            y.shape[i] = static_cast<std::int64_t>(std::floor(static_cast<double>(x.shape[i]) * scales[i]));
        auto source = [&](std::int64_t out, std::size_t axis) {
            const auto s = scales[axis];
            double v = transform == "asymmetric" ? static_cast<double>(out) / s : (static_cast<double>(out) + 0.5) / s - 0.5;
            std::int64_t i = 0;
            if (nearest == "floor") i = static_cast<std::int64_t>(std::floor(v));
            else if (nearest == "ceil") i = static_cast<std::int64_t>(std::ceil(v));
            else if (nearest == "round_prefer_ceil") i = static_cast<std::int64_t>(std::floor(v + 0.5));
            else i = static_cast<std::int64_t>(std::ceil(v - 0.5));
            return std::clamp<std::int64_t>(i, 0, x.shape[axis] - 1);
        };
        const auto planes = x.shape[0] * x.shape[1];
        for (std::int64_t p = 0; p < planes; ++p)
            for (std::int64_t h = 0; h < y.shape[2]; ++h)
                for (std::int64_t w = 0; w < y.shape[3]; ++w)
                    y.values.push_back(x.values[sz((p * x.shape[2] + source(h, 2)) * x.shape[3] + source(w, 3))]);
        set(n, 0, std::move(y));
        return {};
    }

    const graph::graph_model& model_;
    const graph::graph_index index_;
    const graph::tensor_reader& reader_;
    std::map<std::string, dense_tensor> values_;
    std::set<std::string> integer_;
};

}  // namespace

result<std::map<std::string, dense_tensor>> evaluate_onnx(const graph::graph_model& model, const graph::tensor_reader& reader,
                                                          const std::map<std::string, dense_tensor>& inputs) {
    return evaluator(model, reader).run(inputs);
}

}  // namespace onnxstream::caffe
