#include <onnxstream/caffe/layer_mapping.hpp>

#include <onnxstream/onnx/data_type.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

namespace onnxstream::caffe {

std::int64_t onnx_pool_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad_begin,
                            std::int64_t pad_end, std::int64_t dilation, bool ceil_mode) {
    const auto extent = (kernel - 1) * dilation + 1;
    const auto span = in + pad_begin + pad_end - extent;
    if (span < 0) return 0;
    auto out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    // A last window that would start inside the end padding is dropped (as PyTorch and
    // ONNX Runtime do).
    if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
    return out;
}

namespace {

using passes::none;
using passes::name_id;

constexpr std::int64_t int_max = std::numeric_limits<std::int32_t>::max();

// Caffe's pooling output size (pooling_layer.cpp): ceil, then a window starting in the
// padding is dropped; OpenCV's `ceil_mode: false` floors instead.
std::int64_t caffe_pool_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad, bool ceil_mode) {
    const auto span = in + 2 * pad - kernel;
    if (span < 0) return 0;
    auto out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (pad > 0 && (out - 1) * stride >= in + pad) --out;
    return out;
}

std::string join(const shape& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
    return out.empty() ? "scalar" : out;
}

std::int64_t product(const shape& s, std::size_t from = 0, std::size_t to = std::string::npos) {
    std::int64_t p = 1;
    for (std::size_t i = from; i < std::min(to, s.size()); ++i) p *= s[i];
    return p;
}

// Why a node is refused, with what to try.
struct refused {
    std::string why;
    std::string hint;
};

class mapper {
public:
    mapper(const passes::graph_model& model, const passes::tensor_reader& reader, weight_store& weights,
           const mapping_options& options)
        : model_(model), index_(model), reader_(reader), weights_(weights), options_(options) {}

    result<mapping> run() {
        out_.network.name = "onnxstream";
        const auto& main = model_.scopes[0];
        for (const auto t : main.initializers) used_blobs_.insert(std::string(model_.text(model_.tensors[t].name)));
        for (std::uint32_t n = 0; n < model_.nodes.size(); ++n)
            if (model_.node_live(n))
                for (const auto o : model_.nodes[n].outputs) used_blobs_.insert(std::string(model_.text(o)));
        for (std::size_t i = 0; i < main.inputs.size(); ++i) {
            const auto v = index_.resolve(0, main.inputs[i]);
            if (v == none || index_.at(v).kind != passes::value_kind::graph_input) continue;
            const auto name = std::string(model_.text(main.inputs[i]));
            used_blobs_.insert(name);
            const auto found = options_.input_shapes.find(name);
            if (found == options_.input_shapes.end())
                return failure(error_code::invalid_argument, "the input '" + name + "' has no known shape",
                               "give it with --input-shape " + name + "=1,3,224,224");
            layer l;
            l.name = unique_layer(name);
            l.type = "Input";
            l.tops = {name};
            std::vector<param> dims;
            for (const auto d : found->second) dims.push_back(param::integer("dim", d));
            l.params.push_back(param::message("input_param", {param::message("shape", std::move(dims))}));
            shapes_[name] = found->second;
            out_.network.layers.push_back(std::move(l));
        }
        for (const auto n : main.nodes) {
            if (!model_.node_live(n)) continue;
            const auto& nd = model_.nodes[n];
            if (nd.op_type == "Constant" && nd.domain.empty()) continue;
            bool inputs_known = true;
            for (std::size_t s = 0; s < nd.inputs.size(); ++s)
                if (nd.inputs[s] != 0 && !shapes_.contains(text(nd.inputs[s])) && !known_.contains(text(nd.inputs[s])) &&
                    !constant_at(n, s))
                    inputs_known = false;
            if (!inputs_known) {
                // Downstream of a refused node, which is reported; otherwise this is the root.
                if (out_.refusals.empty())
                    out_.refusals.push_back({nd.op_type, model_.node_label(n), "an input is neither computed by an exported layer nor a constant",
                                             "run optimize first, or export with static shapes"});
                continue;
            }
            current_ = n;
            auto done = map_node(n);
            if (!done) return failure(std::move(done).error());
            if (*done) out_.refusals.push_back({nd.op_type, model_.node_label(n), (*done)->why, (*done)->hint});
        }
        for (std::size_t i = 0; i < main.outputs.size(); ++i) {
            const auto name = text(main.outputs[i]);
            out_.outputs.push_back(name);
            if (!shapes_.contains(name) && out_.refusals.empty())
                out_.refusals.push_back({"(graph output)", name, "it is not computed by any exported layer",
                                         "a constant graph output has no Caffe form; remove it from the outputs"});
        }
        out_.blob_shapes = shapes_;
        return std::move(out_);
    }

private:
    using outcome = result<std::optional<refused>>;
    static outcome ok() { return std::optional<refused>{}; }
    static outcome refuse(std::string why, std::string hint) { return std::optional<refused>{refused{std::move(why), std::move(hint)}}; }

    std::string text(name_id id) const { return std::string(model_.text(id)); }

    std::optional<passes::constant> constant_at(std::uint32_t n, std::size_t slot) const {
        if (slot >= model_.nodes[n].inputs.size()) return std::nullopt;
        return passes::find_constant(model_, index_, index_.input(n, slot));
    }
    bool has_input(std::uint32_t n, std::size_t slot) const {
        return slot < model_.nodes[n].inputs.size() && model_.nodes[n].inputs[slot] != 0;
    }
    result<std::vector<double>> values(const passes::constant& c) const {
        return passes::constant_elements(model_, reader_, c);
    }
    // The values of input `slot`: a constant, or integers known from static shapes
    // (Shape -> Gather -> Concat chains as PyTorch exports them). Empty when neither.
    result<std::optional<std::vector<double>>> static_values(std::uint32_t n, std::size_t slot) const {
        if (!has_input(n, slot)) return std::optional<std::vector<double>>{};
        if (const auto found = known_.find(in_name(n, slot)); found != known_.end()) {
            std::vector<double> v(found->second.begin(), found->second.end());
            return std::optional<std::vector<double>>(std::move(v));
        }
        const auto c = constant_at(n, slot);
        if (!c) return std::optional<std::vector<double>>{};
        ONNXSTREAM_ASSIGN(auto v, values(*c));
        return std::optional<std::vector<double>>(std::move(v));
    }
    shape static_dims(std::uint32_t n, std::size_t slot) const {
        if (const auto found = known_.find(in_name(n, slot)); found != known_.end())
            return found->second.size() == 1 && known_scalar_.contains(in_name(n, slot)) ? shape{} : shape{static_cast<std::int64_t>(found->second.size())};
        if (const auto c = constant_at(n, slot)) return c->dims;
        return {};
    }

    // Integer arithmetic on shapes, done here: it yields no layer. Empty when `n` is not
    // such a node.
    std::optional<outcome> shape_arithmetic(std::uint32_t n) {
        const auto& nd = model_.nodes[n];
        const auto& op = nd.op_type;
        static const std::set<std::string> ops{"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Mul", "Div", "Add", "Sub",
                                               "Cast", "Slice", "Identity"};
        if (!ops.contains(op)) return std::nullopt;
        const auto out = out_name(n);
        if (op == "Shape") {
            if (!computed_input(n, 0)) return std::nullopt;
            const auto& in = in_shape(n, 0);
            auto start = attr_int(n, "start", 0), end = attr_int(n, "end", static_cast<std::int64_t>(in.size()));
            const auto rank = static_cast<std::int64_t>(in.size());
            if (start < 0) start += rank;
            if (end < 0) end += rank;
            start = std::clamp<std::int64_t>(start, 0, rank);
            end = std::clamp<std::int64_t>(end, start, rank);
            known_[out] = std::vector<std::int64_t>(in.begin() + start, in.begin() + end);
            return ok();
        }
        // Everything else only when no input is a computed blob and one is a known value.
        bool any_known = false;
        for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
            if (nd.inputs[s] == 0) continue;
            if (computed_input(n, s)) return std::nullopt;
            if (known_.contains(in_name(n, s))) any_known = true;
        }
        if (!any_known) return std::nullopt;
        auto v0 = static_values(n, 0);
        if (!v0) return outcome(failure(std::move(v0).error()));
        if (!*v0) return std::nullopt;
        std::vector<std::int64_t> a;
        for (const auto x : **v0) a.push_back(static_cast<std::int64_t>(x));
        std::vector<std::int64_t> result_values;
        bool scalar = false;
        if (op == "Cast" || op == "Identity") {
            result_values = a;
            scalar = known_scalar_.contains(in_name(n, 0));
        } else if (op == "Unsqueeze" || op == "Squeeze") {
            result_values = a;
            scalar = op == "Squeeze" && a.size() == 1;
        } else if (op == "Gather") {
            auto idx = static_values(n, 1);
            if (!idx || !*idx) return refuse("its indices are not known", "export with constant indices");
            const bool idx_scalar = static_dims(n, 1).empty();
            for (const auto i : **idx) {
                auto k = static_cast<std::int64_t>(i);
                if (k < 0) k += static_cast<std::int64_t>(a.size());
                if (k < 0 || k >= static_cast<std::int64_t>(a.size())) return refuse("an index is out of range", "check the model");
                result_values.push_back(a[static_cast<std::size_t>(k)]);
            }
            scalar = idx_scalar;
        } else if (op == "Concat") {
            for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
                auto v = static_values(n, s);
                if (!v || !*v) return refuse("an input is not known", "export with static shapes");
                for (const auto x : **v) result_values.push_back(static_cast<std::int64_t>(x));
            }
        } else if (op == "Slice") {
            auto st = static_values(n, 1), en = static_values(n, 2);
            if (!st || !*st || !en || !*en || (*st)->size() != 1) return refuse("its bounds are not known", "export with static shapes");
            const auto dim = static_cast<std::int64_t>(a.size());
            auto clamp = [&](double v) {
                auto x = v >= 9.2e18 ? dim : v <= -9.2e18 ? 0 : static_cast<std::int64_t>(v);
                if (x < 0) x += dim;
                return std::clamp<std::int64_t>(x, 0, dim);
            };
            const auto b = clamp((**st)[0]), e = clamp((**en)[0]);
            for (auto i = b; i < e; ++i) result_values.push_back(a[static_cast<std::size_t>(i)]);
        } else {
            auto v1 = static_values(n, 1);
            if (!v1 || !*v1) return refuse("an input is not known", "export with static shapes");
            std::vector<std::int64_t> b;
            for (const auto x : **v1) b.push_back(static_cast<std::int64_t>(x));
            const auto count = std::max(a.size(), b.size());
            if ((a.size() != count && a.size() != 1) || (b.size() != count && b.size() != 1))
                return refuse("its inputs do not broadcast", "check the model");
            for (std::size_t i = 0; i < count; ++i) {
                const auto x = a[a.size() == 1 ? 0 : i], y = b[b.size() == 1 ? 0 : i];
                if (op == "Div" && y == 0) return refuse("it divides by zero", "check the model");
                // ONNX integer division truncates toward zero, as C++ does.
                result_values.push_back(op == "Mul" ? x * y : op == "Div" ? x / y : op == "Add" ? x + y : x - y);
            }
            scalar = known_scalar_.contains(in_name(n, 0)) && static_dims(n, 1).empty();
        }
        known_[out] = std::move(result_values);
        if (scalar) known_scalar_.insert(out);
        return ok();
    }

    // Pad of zeros: folded away when it pads nothing; else refused (a Caffe layer pads only
    // inside Convolution and Pooling).
    outcome pad(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        if (attr_text(n, "mode", "constant") != "constant") return refuse("only zero padding could be exported", "pad with zeros");
        std::vector<double> pads;
        if (model_.opset("") < 11) {
            for (const auto p : attr_ints(n, "pads").value_or(std::vector<std::int64_t>{})) pads.push_back(static_cast<double>(p));
        } else {
            ONNXSTREAM_ASSIGN(auto v, static_values(n, 1));
            if (!v) return refuse("its pads are computed", "export with constant pads");
            pads = std::move(*v);
        }
        for (const auto p : pads)
            if (p != 0) return refuse("padding outside a Convolution or Pooling has no Caffe layer", "move the padding into the next Conv or pool's pads");
        power(in_name(n, 0), out_name(n), 1.0, 0.0, "");
        decide("removed", "Pad of nothing kept as an identity Power layer");
        return ok();
    }

    std::int64_t attr_int(std::uint32_t n, std::string_view name, std::int64_t fallback) const {
        const auto a = model_.attribute(n, name);
        return a && a->i ? *a->i : fallback;
    }
    double attr_float(std::uint32_t n, std::string_view name, double fallback) const {
        const auto a = model_.attribute(n, name);
        return a && a->f ? *a->f : fallback;
    }
    std::optional<std::vector<std::int64_t>> attr_ints(std::uint32_t n, std::string_view name) const {
        const auto a = model_.attribute(n, name);
        if (!a) return std::nullopt;
        return a->ints;
    }
    std::string attr_text(std::uint32_t n, std::string_view name, std::string_view fallback) const {
        const auto a = model_.attribute(n, name);
        return a && a->s ? std::string(*a->s) : std::string(fallback);
    }

    std::string in_name(std::uint32_t n, std::size_t slot) const { return text(model_.nodes[n].inputs[slot]); }
    std::string out_name(std::uint32_t n, std::size_t slot = 0) const { return text(model_.nodes[n].outputs[slot]); }
    const shape& in_shape(std::uint32_t n, std::size_t slot) const { return shapes_.at(in_name(n, slot)); }
    bool computed_input(std::uint32_t n, std::size_t slot) const { return shapes_.contains(in_name(n, slot)); }

    std::string unique_layer(const std::string& base) {
        std::string name = base.empty() ? "layer" : base;
        if (used_layers_.insert(name).second) return name;
        for (int i = 1;; ++i) {
            auto candidate = name + "_" + std::to_string(i);
            if (used_layers_.insert(candidate).second) return candidate;
        }
    }
    std::string fresh_blob(const std::string& base) {
        for (int i = 0;; ++i) {
            auto candidate = base + (i == 0 ? "" : "_" + std::to_string(i));
            if (used_blobs_.insert(candidate).second) return candidate;
        }
    }
    std::string node_base() const {
        const auto& nd = model_.nodes[current_];
        return nd.name.empty() ? nd.op_type + "_" + out_name(current_) : nd.name;
    }

    layer& add_layer(const std::string& type, std::vector<std::string> bottoms, std::vector<std::string> tops,
                     const std::string& suffix = {}) {
        layer l;
        l.name = unique_layer(node_base() + suffix);
        l.type = type;
        l.bottoms = std::move(bottoms);
        l.tops = std::move(tops);
        l.sources = {model_.node_label(current_)};
        out_.network.layers.push_back(std::move(l));
        return out_.network.layers.back();
    }
    void decide(std::string kind, std::string detail) {
        out_.decisions.push_back({std::move(kind), out_.network.layers.empty() ? "" : out_.network.layers.back().name,
                                  std::move(detail)});
    }

    result<blob> constant_blob(const passes::constant& c, shape s) {
        blob b;
        b.shape = std::move(s);
        ONNXSTREAM_ASSIGN(b.data, weights_.constant_data(c));
        return b;
    }
    result<blob> values_blob(std::vector<float> v, shape s) {
        blob b;
        b.shape = std::move(s);
        ONNXSTREAM_ASSIGN(b.data, weights_.computed_data(std::move(v)));
        return b;
    }
    static bool is_float_type(std::int32_t t) {
        return t == static_cast<std::int32_t>(onnx::data_type::float32) ||
               t == static_cast<std::int32_t>(onnx::data_type::float16) ||
               t == static_cast<std::int32_t>(onnx::data_type::float64) ||
               t == static_cast<std::int32_t>(onnx::data_type::bfloat16);
    }

    // Keeps [begin, begin + length) of `axis` of blob `in` as `out` (a Slice; the parts
    // cut off go to a Silence layer so no top dangles).
    // Keeps [begin, begin + length) of `axis` of blob `in` as `out`. The kept part is
    // always a Slice's first top (OpenCV returns a layer's first output), so a cut at
    // both ends takes two Slices; the parts cut off go to a Silence layer so no top
    // dangles.
    void crop(const std::string& in, std::size_t axis, std::int64_t begin, std::int64_t length, const std::string& out,
              const std::string& suffix) {
        const auto s = shapes_.at(in);
        const auto full = s[axis];
        std::vector<std::string> dropped;
        auto piece = [&](std::int64_t size) {
            auto p = s;
            p[axis] = size;
            return p;
        };
        std::string current = in;
        if (begin > 0) {
            const auto front = fresh_blob(out + "/cut_front");
            const auto rest = begin + length < full ? fresh_blob(out + "/rest") : out;
            auto& l = add_layer("Slice", {current}, {front, rest}, suffix + "/front");
            l.params.push_back(param::message("slice_param", {param::integer("axis", static_cast<std::int64_t>(axis)),
                                                               param::integer("slice_point", begin)}));
            shapes_[front] = piece(begin);
            shapes_[rest] = piece(full - begin);
            dropped.push_back(front);
            current = rest;
        }
        if (begin + length < full) {
            const auto back = fresh_blob(out + "/cut_back");
            auto& l = add_layer("Slice", {current}, {out, back}, suffix);
            l.params.push_back(param::message("slice_param", {param::integer("axis", static_cast<std::int64_t>(axis)),
                                                               param::integer("slice_point", length)}));
            shapes_[back] = piece(full - begin - length);
            dropped.push_back(back);
        }
        shapes_[out] = piece(length);
        if (!dropped.empty()) add_layer("Silence", dropped, {}, suffix + "/silence");
    }

    void power(const std::string& in, const std::string& out, double scale, double shift, const std::string& suffix) {
        auto& l = add_layer("Power", {in}, {out}, suffix);
        l.params.push_back(param::message(
            "power_param", {param::real("power", 1.0), param::real("scale", scale), param::real("shift", shift)}));
        shapes_[out] = shapes_.at(in);
    }
    void relu(const std::string& in, const std::string& out, const std::string& suffix) {
        add_layer("ReLU", {in}, {out}, suffix);
        shapes_[out] = shapes_.at(in);
    }
    // min(max(x, 0), 6): ReLU6 in OpenCV; BVLC has none, so 6 - ReLU(6 - ReLU(x)).
    void relu6(const std::string& in, const std::string& out, const std::string& suffix) {
        if (options_.target == dialect::opencv) {
            add_layer("ReLU6", {in}, {out}, suffix);
            shapes_[out] = shapes_.at(in);
            return;
        }
        const auto a = fresh_blob(out + "/relu");
        const auto b = fresh_blob(out + "/six_minus");
        const auto c = fresh_blob(out + "/relu_six_minus");
        relu(in, a, suffix + "/relu");
        power(a, b, -1.0, 6.0, suffix + "/six_minus");
        relu(b, c, suffix + "/relu2");
        power(c, out, -1.0, 6.0, suffix + "/six_minus2");
        decide("composition", "ReLU6 as 6 - ReLU(6 - ReLU(x)) (BVLC Caffe has no ReLU6)");
    }
    // min(max(x, lo), hi) with either bound optional.
    void clip(const std::string& in, const std::string& out, std::optional<double> lo, std::optional<double> hi) {
        if (lo && hi && *lo == 0.0 && *hi == 6.0) return relu6(in, out, "");
        if (lo && *lo == 0.0 && !hi) return relu(in, out, "");
        if (!lo && !hi) {
            power(in, out, 1.0, 0.0, "");
            return;
        }
        std::string x = in;
        if (lo) {
            const auto shifted = fresh_blob(out + "/minus_lo");
            const auto rectified = fresh_blob(out + "/relu_lo");
            power(x, shifted, 1.0, -*lo, "/minus_lo");
            relu(shifted, rectified, "/relu_lo");
            x = hi ? fresh_blob(out + "/max_lo") : out;
            power(rectified, x, 1.0, *lo, "/plus_lo");
        }
        if (hi) {
            const auto flipped = fresh_blob(out + "/hi_minus");
            const auto rectified = fresh_blob(out + "/relu_hi");
            power(x, flipped, -1.0, *hi, "/hi_minus");
            relu(flipped, rectified, "/relu_hi");
            power(rectified, out, -1.0, *hi, "/hi_minus2");
        }
        decide("composition", "Clip as ReLU and Power layers (min " + (lo ? std::to_string(*lo) : "none") + ", max " +
                                  (hi ? std::to_string(*hi) : "none") + ")");
    }

    outcome map_node(std::uint32_t n) {
        const auto& nd = model_.nodes[n];
        const auto& op = nd.op_type;
        if (!nd.domain.empty() && nd.domain != "ai.onnx")
            return refuse("operators of domain '" + nd.domain + "' have no Caffe layer", "export a model with standard ONNX operators");
        for (std::size_t s = 0; s < nd.outputs.size(); ++s)
            if (s > 0 && nd.outputs[s] != 0 && op != "Split" && index_.at(index_.output(n, s)).uses.size() > 0)
                return refuse("its output " + std::to_string(s) + " is used, and only the first output of " + op +
                                  " has a Caffe counterpart",
                              "run optimize first, or export an inference-mode model");
        if (auto folded = shape_arithmetic(n)) return std::move(*folded);
        if (op == "Pad") return pad(n);
        if (op == "Conv") return conv(n);
        if (op == "ConvTranspose") return conv_transpose(n);
        if (op == "MaxPool" || op == "AveragePool") return pool(n);
        if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return global_pool(n, op == "GlobalMaxPool");
        if (op == "Gemm") return gemm(n);
        if (op == "MatMul") return matmul(n);
        if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "LeakyRelu" || op == "Elu") return activation(n);
        if (op == "PRelu") return prelu(n);
        if (op == "Clip") return clip_node(n);
        if (op == "HardSigmoid" || op == "HardSwish") return hard_sigmoid(n, op == "HardSwish");
        if (op == "Flatten") return flatten(n);
        if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") return reshape(n);
        if (op == "Concat") return concat(n);
        if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Sum") return binary(n);
        if (op == "Softmax") return softmax(n);
        if (op == "BatchNormalization") return batchnorm(n);
        if (op == "Transpose") return transpose(n);
        if (op == "Split") return split(n);
        if (op == "Slice") return slice(n);
        if (op == "LRN") return lrn(n);
        if (op == "ReduceMean") return reduce_mean(n);
        if (op == "Resize" || op == "Upsample") return resize(n);
        if (op == "Cast" && computed_input(n, 0) && attr_int(n, "to", 0) == 1) {  // to float: nothing to do in Caffe
            power(in_name(n, 0), out_name(n), 1.0, 0.0, "");
            return ok();
        }
        if (op == "Dropout" || op == "Identity") {
            if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
            power(in_name(n, 0), out_name(n), 1.0, 0.0, "");
            return ok();
        }
        return refuse(op + " has no exact Caffe layer in this exporter", "replace it in the source model, or run optimize first if it is dead code");
    }

    // --- convolution ---------------------------------------------------------------

    struct spatial {
        std::int64_t kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
    };

    std::optional<refused> read_spatial(std::uint32_t n, const shape& in, const shape& kernel, std::vector<spatial>& out) {
        const auto rank = kernel.size();
        const auto strides = attr_ints(n, "strides").value_or(std::vector<std::int64_t>(rank, 1));
        const auto dilations = attr_ints(n, "dilations").value_or(std::vector<std::int64_t>(rank, 1));
        auto pads = attr_ints(n, "pads").value_or(std::vector<std::int64_t>(2 * rank, 0));
        if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank)
            return refused{"its strides, dilations or pads do not match the kernel's rank", "check the model with onnx.checker"};
        const auto auto_pad = attr_text(n, "auto_pad", "NOTSET");
        out.assign(rank, {});
        for (std::size_t i = 0; i < rank; ++i) {
            auto& s = out[i];
            s.kernel = kernel[i];
            s.stride = strides[i];
            s.dilation = dilations[i];
            if (s.stride < 1 || s.dilation < 1 || s.kernel < 1) return refused{"a stride, dilation or kernel below 1", "fix the model"};
            if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
                const auto h = in[2 + i];
                const auto target = (h + s.stride - 1) / s.stride;
                const auto total = std::max<std::int64_t>(0, (target - 1) * s.stride + (s.kernel - 1) * s.dilation + 1 - h);
                s.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
                s.pad_end = total - s.pad_begin;
            } else if (auto_pad == "VALID") {
                s.pad_begin = s.pad_end = 0;
            } else {
                s.pad_begin = pads[i];
                s.pad_end = pads[rank + i];
            }
            if (s.pad_begin < 0 || s.pad_end < 0) return refused{"negative pads", "fix the model"};
        }
        return std::nullopt;
    }

    outcome conv(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto w = constant_at(n, 1);
        if (!w) return refuse("its weight is not a constant", "Caffe keeps weights in the .caffemodel; export with constant weights");
        if (!is_float_type(w->data_type)) return refuse("its weight is not a floating-point tensor", "dequantize the model first");
        const auto& in = in_shape(n, 0);
        if (in.size() != 4 || w->dims.size() != 4)
            return refuse("only 2-D convolutions (NCHW input, 4-D weight) have a Caffe layer", "reshape 1-D/3-D convolutions to 2-D in the source model");
        const auto group = attr_int(n, "group", 1);
        const shape kernel{w->dims[2], w->dims[3]};
        std::vector<spatial> sp;
        if (auto r = read_spatial(n, in, kernel, sp)) return std::optional<refused>(*r);
        const auto channels_out = w->dims[0];
        if (group < 1 || in[1] != w->dims[1] * group || channels_out % group != 0)
            return refuse("its weight shape does not match the input channels and group", "check the model with onnx.checker");
        std::optional<passes::constant> bias;
        if (has_input(n, 2)) {
            bias = constant_at(n, 2);
            if (!bias) return refuse("its bias is not a constant", "export with a constant bias");
        }
        // Padding: Caffe pads both sides alike. Pad by p = begin + m*stride so windows
        // start where ONNX's do (shifted by m rows), then slice off the first m and any
        // extra trailing outputs: exact, since padding is zeros either way.
        shape onnx_out{in[0], channels_out, 0, 0};
        std::array<std::int64_t, 2> pad{}, skip{}, caffe_size{};
        for (std::size_t i = 0; i < 2; ++i) {
            const auto& s = sp[i];
            onnx_out[2 + i] = onnx_pool_size(in[2 + i], s.kernel, s.stride, s.pad_begin, s.pad_end, s.dilation, false);
            if (onnx_out[2 + i] < 1) return refuse("its output would be empty", "check the input shape");
            for (std::int64_t m = 0;; ++m) {
                const auto p = s.pad_begin + m * s.stride;
                const auto size = onnx_pool_size(in[2 + i], s.kernel, s.stride, p, p, s.dilation, false);
                if (size - m >= onnx_out[2 + i]) {
                    pad[i] = p;
                    skip[i] = m;
                    caffe_size[i] = size;
                    break;
                }
            }
        }
        const bool exact = caffe_size[0] == onnx_out[2] && caffe_size[1] == onnx_out[3];
        const auto out = out_name(n);
        const auto conv_top = exact ? out : fresh_blob(out + "/padded");
        auto& l = add_layer("Convolution", {in_name(n, 0)}, {conv_top});
        std::vector<param> p{param::integer("num_output", channels_out), param::flag("bias_term", bias.has_value())};
        p.push_back(param::integer("pad_h", pad[0]));
        p.push_back(param::integer("pad_w", pad[1]));
        p.push_back(param::integer("kernel_h", kernel[0]));
        p.push_back(param::integer("kernel_w", kernel[1]));
        p.push_back(param::integer("stride_h", sp[0].stride));
        p.push_back(param::integer("stride_w", sp[1].stride));
        if (group != 1) p.push_back(param::integer("group", group));
        if (sp[0].dilation != 1 || sp[1].dilation != 1) {
            p.push_back(param::integer("dilation", sp[0].dilation));
            p.push_back(param::integer("dilation", sp[1].dilation));
        }
        l.params.push_back(param::message("convolution_param", std::move(p)));
        ONNXSTREAM_ASSIGN(auto wb, constant_blob(*w, w->dims));
        l.blobs.push_back(std::move(wb));
        if (bias) {
            ONNXSTREAM_ASSIGN(auto bb, constant_blob(*bias, {channels_out}));
            l.blobs.push_back(std::move(bb));
        }
        shapes_[conv_top] = {in[0], channels_out, caffe_size[0], caffe_size[1]};
        if (!exact) {
            decide("padding", "asymmetric pads " + std::to_string(sp[0].pad_begin) + "," + std::to_string(sp[1].pad_begin) +
                                  "," + std::to_string(sp[0].pad_end) + "," + std::to_string(sp[1].pad_end) +
                                  " made exact: symmetric pads " + std::to_string(pad[0]) + "," + std::to_string(pad[1]) +
                                  " and a Slice to " + join(onnx_out));
            trim(conv_top, out, skip, {onnx_out[2], onnx_out[3]}, "/trim");
        }
        return ok();
    }

    // Slices rows and columns [skip, skip + size) of `in` into `out`.
    void trim(const std::string& in, const std::string& out, std::array<std::int64_t, 2> skip, std::array<std::int64_t, 2> size,
              const std::string& suffix) {
        const auto s = shapes_.at(in);
        const bool rows = s[2] != size[0];
        const bool cols = s[3] != size[1];
        if (rows && cols) {
            const auto mid = fresh_blob(out + "/rows");
            crop(in, 2, skip[0], size[0], mid, suffix + "_h");
            crop(mid, 3, skip[1], size[1], out, suffix + "_w");
        } else if (rows) {
            crop(in, 2, skip[0], size[0], out, suffix + "_h");
        } else {
            crop(in, 3, skip[1], size[1], out, suffix + "_w");
        }
    }

    outcome conv_transpose(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto w = constant_at(n, 1);
        if (!w || !is_float_type(w->data_type)) return refuse("its weight is not a floating-point constant", "export with constant weights");
        const auto& in = in_shape(n, 0);
        if (in.size() != 4 || w->dims.size() != 4) return refuse("only 2-D transposed convolutions have a Caffe layer", "reshape to 2-D in the source model");
        const auto group = attr_int(n, "group", 1);
        if (group < 1 || w->dims[0] != in[1] || in[1] % group != 0) return refuse("its weight does not match its input channels", "check the model with onnx.checker");
        std::vector<spatial> sp;
        if (auto r = read_spatial(n, in, {w->dims[2], w->dims[3]}, sp)) return std::optional<refused>(*r);
        if (attr_text(n, "auto_pad", "NOTSET") != "NOTSET") return refuse("auto_pad on ConvTranspose is not exported", "give explicit pads");
        const auto output_padding = attr_ints(n, "output_padding").value_or(std::vector<std::int64_t>{0, 0});
        for (const auto op : output_padding)
            if (op != 0) return refuse("output_padding changes the output size and Deconvolution has none", "export without output_padding");
        for (const auto& s : sp)
            if (s.pad_begin != s.pad_end) return refuse("asymmetric pads have no Deconvolution form", "use symmetric pads");
        const auto channels_out = w->dims[1] * group;
        shape out_shape{in[0], channels_out, 0, 0};
        for (std::size_t i = 0; i < 2; ++i)
            out_shape[2 + i] = sp[i].stride * (in[2 + i] - 1) + (sp[i].kernel - 1) * sp[i].dilation + 1 - 2 * sp[i].pad_begin;
        if (const auto os = attr_ints(n, "output_shape"); os && !os->empty()) {
            if (os->size() != 2 || (*os)[0] != out_shape[2] || (*os)[1] != out_shape[3])
                return refuse("output_shape asks for a size Deconvolution cannot produce", "export without output_shape");
        }
        std::optional<passes::constant> bias;
        if (has_input(n, 2)) {
            bias = constant_at(n, 2);
            if (!bias) return refuse("its bias is not a constant", "export with a constant bias");
        }
        auto& l = add_layer("Deconvolution", {in_name(n, 0)}, {out_name(n)});
        std::vector<param> p{param::integer("num_output", channels_out), param::flag("bias_term", bias.has_value()),
                             param::integer("pad_h", sp[0].pad_begin), param::integer("pad_w", sp[1].pad_begin),
                             param::integer("kernel_h", sp[0].kernel), param::integer("kernel_w", sp[1].kernel),
                             param::integer("stride_h", sp[0].stride), param::integer("stride_w", sp[1].stride)};
        if (group != 1) p.push_back(param::integer("group", group));
        if (sp[0].dilation != 1 || sp[1].dilation != 1) {
            p.push_back(param::integer("dilation", sp[0].dilation));
            p.push_back(param::integer("dilation", sp[1].dilation));
        }
        l.params.push_back(param::message("convolution_param", std::move(p)));
        ONNXSTREAM_ASSIGN(auto wb, constant_blob(*w, w->dims));
        l.blobs.push_back(std::move(wb));
        if (bias) {
            ONNXSTREAM_ASSIGN(auto bb, constant_blob(*bias, {channels_out}));
            l.blobs.push_back(std::move(bb));
        }
        shapes_[out_name(n)] = out_shape;
        return ok();
    }

    // --- pooling -------------------------------------------------------------------

    outcome pool(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const bool is_max = model_.nodes[n].op_type == "MaxPool";
        const auto& in = in_shape(n, 0);
        if (in.size() != 4) return refuse("only 2-D pooling (NCHW input) has a Caffe layer", "reshape to NCHW in the source model");
        const auto kernel = attr_ints(n, "kernel_shape").value_or(std::vector<std::int64_t>{});
        if (kernel.size() != 2) return refuse("its kernel_shape is not 2-D", "check the model with onnx.checker");
        std::vector<spatial> sp;
        if (auto r = read_spatial(n, in, kernel, sp)) return std::optional<refused>(*r);
        for (const auto& s : sp)
            if (s.dilation != 1) return refuse("pooling with dilations has no Caffe form", "export without pooling dilations");
        if (is_max && model_.nodes[n].outputs.size() > 1 && index_.output(n, 1) != none && !index_.at(index_.output(n, 1)).uses.empty())
            return refuse("its Indices output is used", "Caffe's Pooling has no ONNX-style indices");
        const bool ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
        const bool include_pad = attr_int(n, "count_include_pad", 0) != 0;
        shape onnx_out{in[0], in[1], 0, 0};
        for (std::size_t i = 0; i < 2; ++i) {
            const auto& s = sp[i];
            onnx_out[2 + i] = onnx_pool_size(in[2 + i], s.kernel, s.stride, s.pad_begin, s.pad_end, 1, ceil_mode);
            if (onnx_out[2 + i] < 1) return refuse("its output would be empty", "check the input shape");
        }
        // Find Caffe pads and rounding whose windows start where ONNX's do and cover
        // every ONNX output; extra outputs are sliced away afterwards.
        struct choice {
            bool ceil = true;
            std::array<std::int64_t, 2> pad{}, skip{}, size{};
        };
        std::optional<choice> best;
        std::vector<bool> modes{true};
        if (options_.target == dialect::opencv) modes = {true, false};
        for (const bool c : modes) {
            choice ch;
            ch.ceil = c;
            bool found = true;
            for (std::size_t i = 0; i < 2 && found; ++i) {
                const auto& s = sp[i];
                found = false;
                for (std::int64_t m = 0; s.pad_begin + m * s.stride < s.kernel; ++m) {
                    const auto p = s.pad_begin + m * s.stride;
                    const auto size = caffe_pool_size(in[2 + i], s.kernel, s.stride, p, c);
                    if (size - m >= onnx_out[2 + i]) {
                        ch.pad[i] = p;
                        ch.skip[i] = m;
                        ch.size[i] = size;
                        found = true;
                        break;
                    }
                }
            }
            if (!found) continue;
            const bool exact = ch.size[0] == onnx_out[2] && ch.size[1] == onnx_out[3];
            const bool best_exact = best && best->size[0] == onnx_out[2] && best->size[1] == onnx_out[3];
            if (!best || (exact && !best_exact)) best = ch;
        }
        if (!best)
            return refuse("no Caffe padding reproduces its windows (padding at the end exceeds what Caffe allows)",
                          "export with ceil_mode, or with symmetric pads");
        // Average divisors: Caffe divides by the window clipped to the padded input;
        // ONNX by that (count_include_pad=1, with its own end padding) or by the valid
        // elements. Where they differ a Scale map corrects each output.
        std::vector<float> correction;
        bool corrected = false;
        if (!is_max) {
            std::array<std::vector<double>, 2> ratio;
            for (std::size_t i = 0; i < 2; ++i) {
                const auto& s = sp[i];
                const auto h = in[2 + i];
                for (std::int64_t j = 0; j < onnx_out[2 + i]; ++j) {
                    const auto cs = (j + best->skip[i]) * s.stride - best->pad[i];
                    const auto caffe_div = std::min(cs + s.kernel, h + best->pad[i]) - cs;
                    const auto os = j * s.stride - s.pad_begin;
                    const auto onnx_div = include_pad ? std::min(os + s.kernel, h + s.pad_end) - os
                                                      : std::min(os + s.kernel, h) - std::max<std::int64_t>(os, 0);
                    ratio[i].push_back(static_cast<double>(caffe_div) / static_cast<double>(onnx_div));
                }
            }
            for (const auto a : ratio[0])
                for (const auto b : ratio[1]) {
                    correction.push_back(static_cast<float>(a * b));
                    if (a * b != 1.0) corrected = true;
                }
        }
        const bool exact = best->size[0] == onnx_out[2] && best->size[1] == onnx_out[3];
        const auto out = out_name(n);
        const auto pool_top = exact && !corrected ? out : fresh_blob(out + "/caffe_pool");
        auto& l = add_layer("Pooling", {in_name(n, 0)}, {pool_top});
        std::vector<param> p{param::word("pool", is_max ? "MAX" : "AVE"),
                             param::integer("kernel_h", sp[0].kernel), param::integer("kernel_w", sp[1].kernel),
                             param::integer("stride_h", sp[0].stride), param::integer("stride_w", sp[1].stride),
                             param::integer("pad_h", best->pad[0]), param::integer("pad_w", best->pad[1])};
        if (!best->ceil) p.push_back(param::flag("ceil_mode", false));
        l.params.push_back(param::message("pooling_param", std::move(p)));
        shapes_[pool_top] = {in[0], in[1], best->size[0], best->size[1]};
        if (!best->ceil) decide("pooling", "floor rounding kept with ceil_mode: false (OpenCV's Caffe)");
        std::string current = pool_top;
        if (!exact) {
            const auto trimmed = corrected ? fresh_blob(out + "/trimmed") : out;
            decide("pooling", "Caffe output " + std::to_string(best->size[0]) + "x" + std::to_string(best->size[1]) +
                                  " sliced to ONNX's " + std::to_string(onnx_out[2]) + "x" + std::to_string(onnx_out[3]));
            trim(pool_top, trimmed, best->skip, {onnx_out[2], onnx_out[3]}, "/trim");
            current = trimmed;
        }
        if (corrected) {
            auto& s = add_layer("Scale", {current}, {out}, "/divisor");
            s.params.push_back(param::message("scale_param", {param::integer("axis", 2), param::integer("num_axes", 2),
                                                               param::flag("bias_term", false)}));
            ONNXSTREAM_ASSIGN(auto b, values_blob(std::move(correction), {onnx_out[2], onnx_out[3]}));
            s.blobs.push_back(std::move(b));
            shapes_[out] = onnx_out;
            decide("pooling", std::string("average divisors corrected with a Scale map (count_include_pad=") +
                                  (include_pad ? "1" : "0") + ")");
        }
        return ok();
    }

    outcome global_pool(std::uint32_t n, bool is_max) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& in = in_shape(n, 0);
        if (in.size() != 4) return refuse("only NCHW global pooling has a Caffe layer", "reshape to NCHW");
        auto& l = add_layer("Pooling", {in_name(n, 0)}, {out_name(n)});
        // `pool` must be explicit: OpenCV cannot tell the type from global_pooling alone.
        l.params.push_back(param::message("pooling_param", {param::word("pool", is_max ? "MAX" : "AVE"),
                                                             param::flag("global_pooling", true)}));
        shapes_[out_name(n)] = {in[0], in[1], 1, 1};
        return ok();
    }

    outcome reduce_mean(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& in = in_shape(n, 0);
        auto axes = attr_ints(n, "axes");
        if (!axes && has_input(n, 1)) {
            const auto c = constant_at(n, 1);
            if (!c) return refuse("its axes are not constant", "export with constant axes");
            ONNXSTREAM_ASSIGN(const auto v, values(*c));
            axes.emplace();
            for (const auto x : v) axes->push_back(static_cast<std::int64_t>(x));
        }
        if (!axes || in.size() != 4) return refuse("only a mean over H and W of an NCHW tensor has a Caffe layer", "use GlobalAveragePool");
        std::set<std::int64_t> set;
        for (auto a : *axes) set.insert(a < 0 ? a + 4 : a);
        if (set != std::set<std::int64_t>{2, 3}) return refuse("only a mean over H and W has a Caffe layer", "use GlobalAveragePool");
        const bool keep = attr_int(n, "keepdims", 1) != 0;
        const auto out = out_name(n);
        const auto top = keep ? out : fresh_blob(out + "/pooled");
        auto& l = add_layer("Pooling", {in_name(n, 0)}, {top});
        l.params.push_back(param::message("pooling_param", {param::word("pool", "AVE"), param::flag("global_pooling", true)}));
        shapes_[top] = {in[0], in[1], 1, 1};
        if (!keep) {
            auto& f = add_layer("Flatten", {top}, {out}, "/flatten");
            f.params.push_back(param::message("flatten_param", {param::integer("axis", 1)}));
            shapes_[out] = {in[0], in[1]};
        }
        return ok();
    }

    // --- fully connected -----------------------------------------------------------

    outcome inner_product(std::uint32_t n, const std::string& input, std::int64_t axis, std::int64_t outputs, blob weight,
                          std::optional<blob> bias, shape out_shape) {
        auto& l = add_layer("InnerProduct", {input}, {out_name(n)});
        l.params.push_back(param::message("inner_product_param", {param::integer("num_output", outputs),
                                                                   param::flag("bias_term", bias.has_value()),
                                                                   param::integer("axis", axis)}));
        l.blobs.push_back(std::move(weight));
        if (bias) l.blobs.push_back(std::move(*bias));
        shapes_[out_name(n)] = std::move(out_shape);
        return ok();
    }

    // B [K, N] -> [N, K] floats.
    result<std::vector<float>> transposed(const passes::constant& b, double scale) const {
        ONNXSTREAM_ASSIGN(const auto v, values(b));
        const auto k = static_cast<std::size_t>(b.dims[0]);
        const auto nn = static_cast<std::size_t>(b.dims[1]);
        std::vector<float> out(k * nn);
        for (std::size_t i = 0; i < k; ++i)
            for (std::size_t j = 0; j < nn; ++j) out[j * k + i] = static_cast<float>(v[i * nn + j] * scale);
        return out;
    }

    outcome gemm(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its A input is a constant", "run optimize first");
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

    outcome matmul(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its A input is a constant", "run optimize first");
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
        return inner_product(n, in_name(n, 0), static_cast<std::int64_t>(a.size()) - 1, b->dims[1], std::move(weight),
                             std::nullopt, out);
    }

    // --- element-wise --------------------------------------------------------------

    outcome activation(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& op = model_.nodes[n].op_type;
        const auto in = in_name(n, 0);
        const auto out = out_name(n);
        if (op == "Relu") {
            add_layer("ReLU", {in}, {out});
        } else if (op == "LeakyRelu") {
            auto& l = add_layer("ReLU", {in}, {out});
            l.params.push_back(param::message("relu_param", {param::real("negative_slope", attr_float(n, "alpha", 0.01))}));
        } else if (op == "Sigmoid") {
            add_layer("Sigmoid", {in}, {out});
        } else if (op == "Tanh") {
            add_layer("TanH", {in}, {out});
        } else {
            auto& l = add_layer("ELU", {in}, {out});
            l.params.push_back(param::message("elu_param", {param::real("alpha", attr_float(n, "alpha", 1.0))}));
        }
        shapes_[out] = shapes_.at(in);
        return ok();
    }

    outcome prelu(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto slope = constant_at(n, 1);
        if (!slope || !is_float_type(slope->data_type)) return refuse("its slope is not a constant", "export with a constant slope");
        const auto& in = in_shape(n, 0);
        const auto channels = in.size() >= 2 ? in[1] : 1;
        // The slope must be per channel (axis 1) or one value.
        shape padded(in.size(), 1);
        if (slope->dims.size() > in.size()) return refuse("its slope has more dimensions than its input", "check the model");
        std::copy(slope->dims.begin(), slope->dims.end(), padded.end() - static_cast<std::ptrdiff_t>(slope->dims.size()));
        for (std::size_t i = 0; i < padded.size(); ++i)
            if (padded[i] != 1 && !(i == 1 && padded[i] == channels))
                return refuse("its slope is not per channel", "PReLU has one slope per channel");
        const bool shared = slope->element_count == 1;
        auto& l = add_layer("PReLU", {in_name(n, 0)}, {out_name(n)});
        if (shared) l.params.push_back(param::message("prelu_param", {param::flag("channel_shared", true)}));
        ONNXSTREAM_ASSIGN(auto b, constant_blob(*slope, {shared ? 1 : channels}));
        l.blobs.push_back(std::move(b));
        shapes_[out_name(n)] = in;
        return ok();
    }

    result<std::optional<double>> bound(std::uint32_t n, std::size_t slot, std::string_view attribute) const {
        if (model_.opset("") < 11) {
            if (const auto a = model_.attribute(n, attribute); a && a->f) return std::optional<double>(*a->f);
            return std::optional<double>{};
        }
        if (!has_input(n, slot)) return std::optional<double>{};
        const auto c = constant_at(n, slot);
        if (!c || c->element_count != 1) return failure(error_code::unsupported, "bound not constant");
        ONNXSTREAM_ASSIGN(const auto v, values(*c));
        return std::optional<double>(v[0]);
    }

    outcome clip_node(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        auto lo = bound(n, 1, "min");
        auto hi = bound(n, 2, "max");
        if (!lo || !hi) return refuse("its min or max is not a constant scalar", "export with constant bounds");
        if (*lo && std::isinf(**lo) && **lo < 0) *lo = std::nullopt;
        if (*hi && std::isinf(**hi) && **hi > 0) *hi = std::nullopt;
        clip(in_name(n, 0), out_name(n), *lo, *hi);
        return ok();
    }

    // HardSigmoid: clip(alpha x + beta, 0, 1) = ReLU6(6 alpha x + 6 beta) / 6;
    // HardSwish: x * HardSigmoid(x) with alpha 1/6, beta 1/2.
    outcome hard_sigmoid(std::uint32_t n, bool swish) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto alpha = swish ? 1.0 / 6.0 : attr_float(n, "alpha", 0.2);
        const auto beta = swish ? 0.5 : attr_float(n, "beta", 0.5);
        const auto in = in_name(n, 0);
        const auto out = out_name(n);
        const auto scaled = fresh_blob(out + "/scaled");
        const auto clipped = fresh_blob(out + "/relu6");
        const auto gate = swish ? fresh_blob(out + "/gate") : out;
        power(in, scaled, 6.0 * alpha, 6.0 * beta, "/scale");
        relu6(scaled, clipped, "/relu6");
        power(clipped, gate, 1.0 / 6.0, 0.0, "/sixth");
        if (swish) {
            auto& l = add_layer("Eltwise", {in, gate}, {out}, "/product");
            l.params.push_back(param::message("eltwise_param", {param::word("operation", "PROD")}));
            shapes_[out] = shapes_.at(in);
        }
        decide("composition", std::string(swish ? "HardSwish" : "HardSigmoid") + " as Power, ReLU6 and Power layers");
        return ok();
    }

    // --- shapes --------------------------------------------------------------------

    void reshape_layer(const std::string& in, const std::string& out, const shape& target) {
        auto& l = add_layer("Reshape", {in}, {out});
        std::vector<param> dims;
        for (const auto d : target) dims.push_back(param::integer("dim", d));
        l.params.push_back(param::message("reshape_param", {param::message("shape", std::move(dims))}));
        shapes_[out] = target;
    }

    outcome flatten(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& in = in_shape(n, 0);
        auto axis = attr_int(n, "axis", 1);
        if (axis < 0) axis += static_cast<std::int64_t>(in.size());
        const auto a = static_cast<std::size_t>(axis);
        const shape out{product(in, 0, a), product(in, a)};
        if (axis == 1) {
            auto& l = add_layer("Flatten", {in_name(n, 0)}, {out_name(n)});
            l.params.push_back(param::message("flatten_param", {param::integer("axis", 1)}));
            shapes_[out_name(n)] = out;
        } else {
            reshape_layer(in_name(n, 0), out_name(n), out);
        }
        return ok();
    }

    outcome reshape(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& op = model_.nodes[n].op_type;
        const auto& in = in_shape(n, 0);
        shape target;
        if (op == "Reshape") {
            ONNXSTREAM_ASSIGN(const auto given, static_values(n, 1));
            if (!given) return refuse("its shape is computed", "run optimize first, or export with a static shape");
            const auto& v = *given;
            std::int64_t known = 1;
            std::optional<std::size_t> infer;
            for (std::size_t i = 0; i < v.size(); ++i) {
                auto d = static_cast<std::int64_t>(v[i]);
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
                target.push_back(d);
                known *= d;
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
                for (const auto x : v) axes.push_back(static_cast<std::int64_t>(x));
            }
            if (op == "Squeeze") {
                std::set<std::int64_t> drop;
                for (auto a : axes) drop.insert(a < 0 ? a + static_cast<std::int64_t>(in.size()) : a);
                for (std::size_t i = 0; i < in.size(); ++i) {
                    const bool dropped = axes.empty() ? in[i] == 1 : drop.contains(static_cast<std::int64_t>(i));
                    if (dropped && in[i] != 1) return refuse("it squeezes a dimension that is not 1", "check the model");
                    if (!dropped) target.push_back(in[i]);
                }
            } else {
                const auto rank = static_cast<std::int64_t>(in.size() + axes.size());
                std::set<std::int64_t> add;
                for (auto a : axes) add.insert(a < 0 ? a + rank : a);
                std::size_t next = 0;
                for (std::int64_t i = 0; i < rank; ++i) target.push_back(add.contains(i) ? 1 : in[next++]);
            }
        }
        if (product(target) != product(in)) return refuse("its output has a different element count", "check the model");
        reshape_layer(in_name(n, 0), out_name(n), target);
        return ok();
    }

    outcome concat(std::uint32_t n) {
        const auto& nd = model_.nodes[n];
        std::vector<std::string> bottoms;
        for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
            if (!computed_input(n, s)) return refuse("one of its inputs is a constant", "Caffe's Concat joins computed blobs only");
            bottoms.push_back(in_name(n, s));
        }
        auto out = in_shape(n, 0);
        auto axis = attr_int(n, "axis", 1);
        if (axis < 0) axis += static_cast<std::int64_t>(out.size());
        const auto a = static_cast<std::size_t>(axis);
        out[a] = 0;
        for (std::size_t s = 0; s < nd.inputs.size(); ++s) out[a] += in_shape(n, s)[a];
        auto& l = add_layer("Concat", bottoms, {out_name(n)});
        l.params.push_back(param::message("concat_param", {param::integer("axis", axis)}));
        shapes_[out_name(n)] = out;
        return ok();
    }

    outcome binary(std::uint32_t n) {
        const auto& nd = model_.nodes[n];
        const auto& op = nd.op_type;
        const auto out = out_name(n);
        std::vector<std::size_t> computed_slots, constant_slots;
        for (std::size_t s = 0; s < nd.inputs.size(); ++s) (computed_input(n, s) ? computed_slots : constant_slots).push_back(s);
        if (constant_slots.empty()) {
            // All inputs computed: Eltwise when shapes agree; SE-style (N,C,1,1) gates for Mul.
            const auto& s0 = in_shape(n, 0);
            bool same = true;
            for (std::size_t s = 1; s < nd.inputs.size(); ++s) same = same && in_shape(n, s) == s0;
            if (same) {
                if (op == "Div") return refuse("dividing two computed tensors has no Caffe layer", "rewrite as a multiplication by a constant");
                std::vector<std::string> bottoms;
                for (std::size_t s = 0; s < nd.inputs.size(); ++s) bottoms.push_back(in_name(n, s));
                auto& l = add_layer("Eltwise", bottoms, {out});
                std::vector<param> p{param::word("operation", op == "Mul" ? "PROD" : op == "Max" ? "MAX" : "SUM")};
                if (op == "Sub") {
                    p.push_back(param::real("coeff", 1.0));
                    p.push_back(param::real("coeff", -1.0));
                }
                l.params.push_back(param::message("eltwise_param", std::move(p)));
                shapes_[out] = s0;
                return ok();
            }
            if (op == "Mul" && nd.inputs.size() == 2) {
                for (std::size_t big = 0; big < 2; ++big) {
                    const auto& x = in_shape(n, big);
                    const auto& g = in_shape(n, 1 - big);
                    if (x.size() == 4 && g.size() == 4 && g[0] == x[0] && g[1] == x[1] && g[2] == 1 && g[3] == 1) {
                        const auto flat = fresh_blob(out + "/gate_flat");
                        auto& f = add_layer("Flatten", {in_name(n, 1 - big)}, {flat}, "/flatten");
                        f.params.push_back(param::message("flatten_param", {param::integer("axis", 1)}));
                        shapes_[flat] = {g[0], g[1]};
                        auto& l = add_layer("Scale", {in_name(n, big), flat}, {out});
                        l.params.push_back(param::message("scale_param", {param::integer("axis", 0), param::flag("bias_term", false)}));
                        shapes_[out] = x;
                        decide("broadcast", "per-channel gate as Flatten + two-bottom Scale");
                        return ok();
                    }
                }
            }
            return refuse("its inputs broadcast (" + join(in_shape(n, 0)) + " and " + join(in_shape(n, 1)) +
                              ") and Caffe's Eltwise needs equal shapes",
                          "make the shapes equal in the source model");
        }
        if (computed_slots.size() != 1 || nd.inputs.size() != 2 || op == "Max" || op == "Sum")
            return refuse("only one computed input with one constant is exported", "fold constant arithmetic first (run optimize)");
        const auto xs = computed_slots[0];
        const auto c = constant_at(n, constant_slots[0]);
        const auto& x = in_shape(n, xs);
        ONNXSTREAM_ASSIGN(const auto v, values(*c));
        const bool constant_first = constant_slots[0] == 0;
        if (op == "Div" && constant_first) return refuse("dividing a constant by a computed tensor has no Caffe layer", "rewrite the model");
        if (c->element_count == 1) {
            const auto k = v[0];
            double scale = 1.0, shift = 0.0;
            if (op == "Add") shift = k;
            else if (op == "Mul") scale = k;
            else if (op == "Div") scale = 1.0 / k;
            else if (constant_first) scale = -1.0, shift = k;  // k - x
            else shift = -k;
            power(in_name(n, xs), out, scale, shift, "");
            return ok();
        }
        // Per-channel constant: [C], [C,1,1], [1,C,1,1] against axis 1.
        shape padded(x.size(), 1);
        if (c->dims.size() > x.size()) return refuse("its constant has more dimensions than its input", "check the model");
        std::copy(c->dims.begin(), c->dims.end(), padded.end() - static_cast<std::ptrdiff_t>(c->dims.size()));
        bool per_channel = x.size() >= 2;
        for (std::size_t i = 0; i < padded.size() && per_channel; ++i)
            per_channel = padded[i] == 1 || (i == 1 && padded[i] == x[1]);
        if (!per_channel)
            return refuse("its constant (" + join(c->dims) + ") is not one value or one per channel", "Caffe's Scale works per channel");
        const auto channels = x[1];
        std::vector<float> gamma(static_cast<std::size_t>(channels), 1.0F), beta(static_cast<std::size_t>(channels), 0.0F);
        for (std::size_t i = 0; i < gamma.size(); ++i) {
            const auto k = v[i];
            if (op == "Add") beta[i] = static_cast<float>(k);
            else if (op == "Mul") gamma[i] = static_cast<float>(k);
            else if (op == "Div") gamma[i] = static_cast<float>(1.0 / k);
            else if (constant_first) gamma[i] = -1.0F, beta[i] = static_cast<float>(k);
            else beta[i] = static_cast<float>(-k);
        }
        const bool bias = op == "Add" || op == "Sub";
        auto& l = add_layer("Scale", {in_name(n, xs)}, {out});
        l.params.push_back(param::message("scale_param", {param::integer("axis", 1), param::integer("num_axes", 1),
                                                           param::flag("bias_term", bias)}));
        ONNXSTREAM_ASSIGN(auto g, values_blob(std::move(gamma), {channels}));
        l.blobs.push_back(std::move(g));
        if (bias) {
            ONNXSTREAM_ASSIGN(auto b, values_blob(std::move(beta), {channels}));
            l.blobs.push_back(std::move(b));
        }
        shapes_[out] = x;
        return ok();
    }

    outcome softmax(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& in = in_shape(n, 0);
        const auto rank = static_cast<std::int64_t>(in.size());
        const bool coerced = model_.opset("") < 13;
        auto axis = attr_int(n, "axis", coerced ? 1 : -1);
        if (axis < 0) axis += rank;
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

    outcome batchnorm(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        if (attr_int(n, "training_mode", 0) != 0) return refuse("it is in training mode", "export an inference-mode model");
        const auto& in = in_shape(n, 0);
        std::array<std::optional<passes::constant>, 4> p;
        for (std::size_t i = 0; i < 4; ++i) {
            p[i] = constant_at(n, i + 1);
            if (!p[i]) return refuse("its scale, bias, mean or variance is not a constant", "export an inference-mode model");
        }
        const auto channels = in.size() >= 2 ? in[1] : 1;
        for (const auto& c : p)
            if (static_cast<std::int64_t>(c->element_count) != channels) return refuse("its parameters are not per channel", "check the model");
        const auto eps = attr_float(n, "epsilon", 1e-5);
        const auto out = out_name(n);
        const auto normalized = fresh_blob(out + "/normalized");
        auto& bn = add_layer("BatchNorm", {in_name(n, 0)}, {normalized});
        bn.params.push_back(param::message("batch_norm_param", {param::flag("use_global_stats", true), param::real("eps", eps)}));
        ONNXSTREAM_ASSIGN(auto mean, constant_blob(*p[2], {channels}));
        ONNXSTREAM_ASSIGN(auto var, constant_blob(*p[3], {channels}));
        bn.blobs.push_back(std::move(mean));
        bn.blobs.push_back(std::move(var));
        ONNXSTREAM_ASSIGN(auto factor, values_blob({1.0F}, {1}));  // 0 would zero the statistics
        bn.blobs.push_back(std::move(factor));
        shapes_[normalized] = in;
        decide("batchnorm", "kept as BatchNorm + Scale (eps " + std::to_string(eps) + ")");
        auto& sc = add_layer("Scale", {normalized}, {out}, "/scale");
        sc.params.push_back(param::message("scale_param", {param::flag("bias_term", true)}));
        ONNXSTREAM_ASSIGN(auto gamma, constant_blob(*p[0], {channels}));
        ONNXSTREAM_ASSIGN(auto beta, constant_blob(*p[1], {channels}));
        sc.blobs.push_back(std::move(gamma));
        sc.blobs.push_back(std::move(beta));
        shapes_[out] = in;
        return ok();
    }

    outcome transpose(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        if (options_.target == dialect::bvlc) return refuse("BVLC Caffe has no Permute layer", "export with --dialect opencv");
        const auto& in = in_shape(n, 0);
        auto perm = attr_ints(n, "perm");
        if (!perm) {
            perm.emplace();
            for (std::size_t i = in.size(); i-- > 0;) perm->push_back(static_cast<std::int64_t>(i));
        }
        if (perm->size() != in.size()) return refuse("its perm does not match the rank", "check the model");
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

    outcome split(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& nd = model_.nodes[n];
        const auto& in = in_shape(n, 0);
        auto axis = attr_int(n, "axis", 0);
        if (axis < 0) axis += static_cast<std::int64_t>(in.size());
        const auto a = static_cast<std::size_t>(axis);
        std::vector<std::int64_t> sizes;
        if (const auto s = attr_ints(n, "split")) {
            sizes = *s;
        } else if (has_input(n, 1)) {
            ONNXSTREAM_ASSIGN(const auto v, static_values(n, 1));
            if (!v) return refuse("its split sizes are computed", "export with constant split sizes");
            for (const auto x : *v) sizes.push_back(static_cast<std::int64_t>(x));
        } else {
            const auto parts = static_cast<std::int64_t>(nd.outputs.size());
            if (in[a] % parts != 0) return refuse("its axis does not split evenly", "give split sizes");
            sizes.assign(nd.outputs.size(), in[a] / parts);
        }
        if (sizes.size() != nd.outputs.size()) return refuse("its split sizes do not match its outputs", "check the model");
        std::vector<param> p{param::integer("axis", axis)};
        std::vector<std::string> tops;
        std::int64_t at = 0;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            if (i > 0) p.push_back(param::integer("slice_point", at));
            auto name = nd.outputs[i] == 0 ? fresh_blob(node_base() + "/unused") : out_name(n, i);
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

    outcome slice(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
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
            for (const auto x : *v) into.push_back(x >= 9.2e18 ? std::numeric_limits<std::int64_t>::max()
                                                  : x <= -9.2e18 ? std::numeric_limits<std::int64_t>::min()
                                                                 : static_cast<std::int64_t>(x));
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
            auto axis = axes[i] < 0 ? axes[i] + static_cast<std::int64_t>(in.size()) : axes[i];
            const auto dim = in[static_cast<std::size_t>(axis)];
            auto clamp = [&](std::int64_t v) {
                if (v < 0) v = v < -dim ? 0 : v + dim;
                return std::min(v, dim);
            };
            const auto b = clamp(starts[i]);
            const auto e = std::max(b, clamp(ends[i]));
            if (e - b == 0) return refuse("it yields an empty tensor", "check the model");
            if (b != 0 || e != dim) cuts.emplace_back(static_cast<std::size_t>(axis), b, e - b);
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

    outcome lrn(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto size = attr_int(n, "size", 1);
        if (size % 2 == 0) return refuse("an even LRN size has no Caffe form (Caffe centres its window)", "use an odd size");
        // OpenCV 4.6 does not read Caffe's `k`, so k = 1 is written and any other bias is
        // divided out: x / (b + a/n s)^beta = b^-beta * x / (1 + (a/b)/n s)^beta.
        const auto bias = attr_float(n, "bias", 1.0);
        const auto alpha = attr_float(n, "alpha", 1e-4);
        const auto beta = attr_float(n, "beta", 0.75);
        if (!(bias > 0)) return refuse("a bias that is not positive has no Caffe LRN form", "use a positive bias");
        const auto out = out_name(n);
        const auto top = bias == 1.0 ? out : fresh_blob(out + "/unit_bias");
        auto& l = add_layer("LRN", {in_name(n, 0)}, {top});
        l.params.push_back(param::message("lrn_param", {param::integer("local_size", size), param::real("alpha", alpha / bias),
                                                         param::real("beta", beta), param::real("k", 1.0)}));
        shapes_[top] = in_shape(n, 0);
        if (bias != 1.0) {
            power(top, out, std::pow(bias, -beta), 0.0, "/bias");
            decide("composition", "LRN bias " + std::to_string(bias) + " folded into alpha and a Power scale (OpenCV ignores k)");
        }
        return ok();
    }

    outcome resize(std::uint32_t n) {
        if (!computed_input(n, 0)) return refuse("its input is a constant", "run optimize first");
        const auto& nd = model_.nodes[n];
        const auto& in = in_shape(n, 0);
        const auto mode = attr_text(n, "mode", "nearest");
        if (mode != "nearest")
            return refuse("Resize " + mode + " has no exact Caffe layer (Caffe's bilinear Deconvolution differs at the borders)",
                          "use nearest with an integer scale, or resize outside the network");
        if (in.size() != 4) return refuse("only NCHW resizing is exported", "reshape to NCHW");
        std::vector<double> scales;
        const auto opset = model_.opset("");
        if (nd.op_type == "Upsample" && opset < 9) {
            if (const auto a = model_.attribute(n, "scales")) scales = a->floats;
        } else {
            const std::size_t scales_slot = nd.op_type == "Upsample" || opset < 11 ? 1 : 2;
            if (has_input(n, scales_slot)) {
                const auto c = constant_at(n, scales_slot);
                if (!c) return refuse("its scales are computed", "export with constant scales");
                ONNXSTREAM_ASSIGN(scales, values(*c));
            }
            if (scales.empty() && nd.op_type == "Resize" && has_input(n, 3)) {
                const auto c = constant_at(n, 3);
                if (!c) return refuse("its sizes are computed", "export with constant sizes");
                ONNXSTREAM_ASSIGN(const auto sizes, values(*c));
                if (sizes.size() != 4) return refuse("its sizes are not 4-D", "check the model");
                for (std::size_t i = 0; i < 4; ++i) scales.push_back(sizes[i] / static_cast<double>(in[i]));
            }
        }
        if (scales.size() != 4 || scales[0] != 1.0 || scales[1] != 1.0)
            return refuse("it does not scale H and W only", "resize H and W only");
        std::array<std::int64_t, 2> factor{};
        for (std::size_t i = 0; i < 2; ++i) {
            const auto s = scales[2 + i];
            if (s < 1.0 || std::floor(s) != s) return refuse("a scale that is not a whole number has no exact Caffe form", "use integer scales");
            factor[i] = static_cast<std::int64_t>(s);
        }
        if (nd.op_type == "Resize" && opset >= 11) {
            const auto transform = attr_text(n, "coordinate_transformation_mode", "half_pixel");
            const auto nearest = attr_text(n, "nearest_mode", "round_prefer_floor");
            const bool repeats = (transform == "asymmetric" && nearest == "floor") ||
                                 ((transform == "half_pixel" || transform == "pytorch_half_pixel") &&
                                  (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil"));
            if (!repeats)
                return refuse("coordinate_transformation_mode " + transform + " with nearest_mode " + nearest +
                                  " does not repeat each pixel",
                              "use asymmetric + floor, or half_pixel + round_prefer_floor");
        }
        // Nearest upsampling by whole factors = a depthwise Deconvolution of ones with
        // kernel = stride = factor: every output pixel gets exactly one input pixel.
        const auto channels = in[1];
        auto& l = add_layer("Deconvolution", {in_name(n, 0)}, {out_name(n)});
        l.params.push_back(param::message(
            "convolution_param",
            {param::integer("num_output", channels), param::flag("bias_term", false), param::integer("kernel_h", factor[0]),
             param::integer("kernel_w", factor[1]), param::integer("stride_h", factor[0]),
             param::integer("stride_w", factor[1]), param::integer("group", channels)}));
        ONNXSTREAM_ASSIGN(auto ones, values_blob(std::vector<float>(static_cast<std::size_t>(channels * factor[0] * factor[1]), 1.0F),
                                                 {channels, 1, factor[0], factor[1]}));
        l.blobs.push_back(std::move(ones));
        shapes_[out_name(n)] = {in[0], in[1], in[2] * factor[0], in[3] * factor[1]};
        decide("resize", "nearest x" + std::to_string(factor[0]) + "," + std::to_string(factor[1]) +
                             " as a depthwise Deconvolution of ones");
        return ok();
    }

    const passes::graph_model& model_;
    const passes::graph_index index_;
    const passes::tensor_reader& reader_;
    weight_store& weights_;
    const mapping_options& options_;
    mapping out_;
    std::map<std::string, shape> shapes_;
    std::set<std::string> used_layers_;
    std::set<std::string> used_blobs_;
    std::uint32_t current_ = none;
    std::map<std::string, std::vector<std::int64_t>> known_;  // integer values known from static shapes
    std::set<std::string> known_scalar_;
};

}  // namespace

result<mapping> map_graph(const passes::graph_model& model, const passes::tensor_reader& reader, weight_store& weights,
                          const mapping_options& options) {
    return mapper(model, reader, weights, options).run();
}

}  // namespace onnxstream::caffe
