#include <onnxstream/caffe/layer_mapping.hpp>

#include "layer_mapper.hpp"

#include <onnxstream/caffe/blob_limits.hpp>
#include <onnxstream/caffe/layer_rules.hpp>

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

namespace detail {

result<mapping> mapper::run() {
    out_.network.name = "onnxstream";
    const auto& main = model_.scopes[graph::main_scope];
    for (const auto t : main.initializers) used_blobs_.insert(std::string(model_.text(model_.tensors[t].name)));
    for (const auto n : model_.nodes.ids())
        if (model_.node_live(n))
            for (const auto o : model_.nodes[n].outputs) used_blobs_.insert(std::string(model_.text(o)));
    for (std::size_t i = 0; i < main.inputs.size(); ++i) {
        const auto v = index_.resolve(graph::main_scope, main.inputs[i]);
        if (v == none || index_.at(v).kind != graph::value_kind::graph_input) continue;
        const auto name = std::string(model_.text(main.inputs[i]));
        used_blobs_.insert(name);
        const auto found = options_.input_shapes.find(name);
        if (found == options_.input_shapes.end())
            return failure(error_code::invalid_argument, "the input '" + name + "' has no known shape", "give it with {0}",
                           {{remedy::give_input_shape, name + "=1,3,224,224"}});
        // The one size every other size is computed from: bounded here, so that shape
        // arithmetic on it stays far from 64 bits.
        if (const auto bad = blob_shape_problem(found->second))
            return failure(error_code::unsupported, "the input '" + name + "' cannot be a Caffe blob: " + *bad,
                           "give a smaller shape with {0}", {{remedy::give_input_shape, name + "=1,3,224,224"}});
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
    // Every node is checked, so that one run lists every node Caffe cannot express. A node
    // whose input comes from a refused node cannot be sized; it is refused on its own
    // account when its operator has no Caffe form at all, else counted as blocked.
    for (const auto n : main.nodes) {
        if (!model_.node_live(n)) continue;
        const auto& nd = model_.nodes[n];
        if (nd.op_type() == "Constant" && nd.domain().empty()) continue;
        current_ = n;
        bool inputs_known = true, after_refusal = false;
        for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
            if (nd.inputs[s] == empty_name || shapes_.contains(text(nd.inputs[s])) || known_.contains(text(nd.inputs[s])) ||
                constant_at(n, s))
                continue;
            inputs_known = false;
            if (refused_values_.contains(text(nd.inputs[s]))) after_refusal = true;
        }
        std::optional<refused> why;
        if (!inputs_known) {
            if (auto own = unsupported(n)) why = std::move(own);
            else if (auto attributes = attribute_refusal(n)) why = std::move(attributes);
            else if (after_refusal) {
                out_.blocked.push_back(model_.node_label(n));
                mark_refused(n);
                continue;
            } else
                why = refused{"an input is neither computed by an exported layer nor a constant",
                              "export with static shapes (--input-shape)"};
        } else {
            const auto first_layer = out_.network.layers.size();
            auto done = map_node(n);
            if (!done) return failure(std::move(done).error());
            if (*done) why = std::move(**done);
            else why = check_layers(first_layer);
            if (why) drop_layers(first_layer);
        }
        if (!why) continue;
        out_.refusals.push_back({std::string(nd.op_type()), model_.node_label(n), why->why, why->hint});
        mark_refused(n);
    }
    for (std::size_t i = 0; i < main.outputs.size(); ++i) {
        const auto name = text(main.outputs[i]);
        out_.outputs.push_back(name);
        if (!shapes_.contains(name) && !refused_values_.contains(name))
            out_.refusals.push_back({"(graph output)", name, "it is not computed by any exported layer",
                                     "a constant graph output has no Caffe form; remove it from the outputs"});
    }
    out_.blob_shapes = shapes_;
    return std::move(out_);
}

std::optional<refused> mapper::check_layers(std::size_t first_layer) const {
    for (auto i = first_layer; i < out_.network.layers.size(); ++i) {
        const auto& l = out_.network.layers[i];
        if (auto bad = layer_problem(l))
            return refused{"its Caffe layer " + l.name + " would not load: " + *bad, "check the node's attributes and shapes"};
        for (const auto& top : l.tops)
            if (const auto s = shapes_.find(top); s != shapes_.end())
                if (auto bad = blob_shape_problem(s->second))
                    return refused{"its output " + top + " cannot be a Caffe blob: " + *bad, "export with smaller input shapes"};
    }
    return std::nullopt;
}

void mapper::drop_layers(std::size_t first_layer) {
    for (auto i = first_layer; i < out_.network.layers.size(); ++i)
        for (const auto& top : out_.network.layers[i].tops) shapes_.erase(top);
    out_.network.layers.resize(first_layer);
}

void mapper::mark_refused(graph::node_id n) {
    for (const auto o : model_.nodes[n].outputs) {
        if (o == empty_name) continue;
        const auto name = text(o);
        shapes_.erase(name);
        known_.erase(name);
        refused_values_.insert(name);
    }
}

result<std::optional<std::vector<double>>> mapper::static_values(graph::node_id n, std::size_t slot) const {
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

std::optional<mapper::outcome> mapper::known_shape(graph::node_id n) {
    if (!computed_input(n, 0)) return std::nullopt;
    const auto& in = in_shape(n, 0);
    auto start = attr_int(n, "start", 0), end = attr_int(n, "end", static_cast<std::int64_t>(in.size()));
    const auto rank = static_cast<std::int64_t>(in.size());
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<std::int64_t>(start, 0, rank);
    end = std::clamp<std::int64_t>(end, start, rank);
    known_[out_name(n)] = std::vector<std::int64_t>(in.begin() + start, in.begin() + end);
    return ok();
}

mapper::outcome mapper::known_values(graph::node_id n, const std::vector<std::int64_t>& a,
                                     std::vector<std::int64_t>& result_values, bool& scalar) {
    const auto& nd = model_.nodes[n];
    const auto& op = nd.op_type();
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
            auto k = saturated_int64(i);
            if (k < 0) k += static_cast<std::int64_t>(a.size());
            if (k < 0 || k >= static_cast<std::int64_t>(a.size())) return refuse("an index is out of range", "check the model");
            result_values.push_back(a[static_cast<std::size_t>(k)]);
        }
        scalar = idx_scalar;
    } else if (op == "Concat") {
        for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
            auto v = static_values(n, s);
            if (!v || !*v) return refuse("an input is not known", "export with static shapes");
            for (const auto x : **v) result_values.push_back(saturated_int64(x));
        }
    } else if (op == "Slice") {
        // Opset 1-9 Slice takes its bounds as attributes (Paddle2ONNX's flatten chain),
        // later ones as inputs. Shape values are one axis: axes may only name it.
        std::vector<double> starts, ends, axes, steps;
        if (model_.opset("") < 10) {
            auto as_doubles = [&](std::string_view name) {
                std::vector<double> v;
                for (const auto x : attr_ints(n, name).value_or(std::vector<std::int64_t>{})) v.push_back(static_cast<double>(x));
                return v;
            };
            starts = as_doubles("starts");
            ends = as_doubles("ends");
            axes = as_doubles("axes");
        } else {
            for (auto [slot, into] : {std::pair{std::size_t{1}, &starts}, std::pair{std::size_t{2}, &ends},
                                      std::pair{std::size_t{3}, &axes}, std::pair{std::size_t{4}, &steps}}) {
                if (!has_input(n, slot)) continue;
                auto v = static_values(n, slot);
                if (!v) return failure(std::move(v).error());
                if (!*v) return refuse("its bounds are computed from values that are not known", "export with static shapes");
                *into = std::move(**v);
            }
        }
        if (starts.size() != 1 || ends.size() != 1 || axes.size() > 1 || (axes.size() == 1 && axes[0] != 0 && axes[0] != -1) ||
            steps.size() > 1 || (steps.size() == 1 && steps[0] != 1))
            return refuse("it slices shape values other than along their one axis with step 1", "check the model");
        const auto dim = static_cast<std::int64_t>(a.size());
        auto clamp = [&](double v) {
            auto x = saturated_int64(v);
            if (x < 0) x += dim;
            return std::clamp<std::int64_t>(x, 0, dim);
        };
        const auto b = clamp(starts[0]), e = clamp(ends[0]);
        for (auto i = b; i < e; ++i) result_values.push_back(a[static_cast<std::size_t>(i)]);
    } else {
        auto v1 = static_values(n, 1);
        if (!v1 || !*v1) return refuse("an input is not known", "export with static shapes");
        std::vector<std::int64_t> b;
        for (const auto x : **v1) b.push_back(saturated_int64(x));
        const auto count = std::max(a.size(), b.size());
        if ((a.size() != count && a.size() != 1) || (b.size() != count && b.size() != 1))
            return refuse("its inputs do not broadcast", "check the model");
        for (std::size_t i = 0; i < count; ++i) {
            const auto x = a[a.size() == 1 ? 0 : i], y = b[b.size() == 1 ? 0 : i];
            if (op == "Div" && (y == 0 || (y == -1 && x == std::numeric_limits<std::int64_t>::min())))
                return refuse("it divides by zero (or overflows)", "check the model");
            // ONNX integer division truncates toward zero, as C++ does.
            const auto value = op == "Mul"                                     ? checked_multiply(x, y)
                               : op == "Div"                                   ? std::optional<std::int64_t>(x / y)
                               : op == "Add"                                   ? checked_add(x, y)
                               : y == std::numeric_limits<std::int64_t>::min() ? std::nullopt
                                                                               : checked_add(x, -y);
            if (!value) return refuse("its shape arithmetic overflows 64 bits", "check the model");
            result_values.push_back(*value);
        }
        scalar = known_scalar_.contains(in_name(n, 0)) && static_dims(n, 1).empty();
    }
    return ok();
}

bool mapper::small_integer_constant(graph::node_id n, std::size_t slot) const {
    const auto c = constant_at(n, slot);
    if (!c || c->dims.size() > 1 || c->element_count > 64) return false;
    using onnx::data_type;
    for (const auto t : {data_type::int8, data_type::uint8, data_type::int16, data_type::uint16, data_type::int32,
                         data_type::int64, data_type::uint32, data_type::uint64})
        if (c->data_type == static_cast<std::int32_t>(t)) return true;
    return false;
}

std::optional<mapper::outcome> mapper::shape_arithmetic(graph::node_id n) {
    const auto& nd = model_.nodes[n];
    const std::string op(nd.op_type());
    static const std::set<std::string> ops{"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Mul",
                                           "Div",   "Add",    "Sub",       "Cast",    "Slice",  "Identity"};
    if (!ops.contains(op)) return std::nullopt;
    if (op == "Shape") return known_shape(n);
    const auto out = out_name(n);
    // Everything else only when no input is a computed blob and one is a known value.
    bool any_known = false;
    for (std::size_t s = 0; s < nd.inputs.size(); ++s) {
        if (nd.inputs[s] == empty_name) continue;
        if (computed_input(n, s)) return std::nullopt;
        if (known_.contains(in_name(n, s)) || small_integer_constant(n, s)) any_known = true;
    }
    if (!any_known) return std::nullopt;
    auto v0 = static_values(n, 0);
    if (!v0) return outcome(failure(std::move(v0).error()));
    if (!*v0) return std::nullopt;
    std::vector<std::int64_t> a;
    for (const auto x : **v0) a.push_back(saturated_int64(x));
    std::vector<std::int64_t> result_values;
    bool scalar = false;
    auto computed = known_values(n, a, result_values, scalar);
    if (!computed || computed->has_value()) return std::optional<outcome>(std::move(computed));  // an error, or a refusal
    known_[out] = std::move(result_values);
    if (scalar) known_scalar_.insert(out);
    return ok();
}

mapper::outcome mapper::pad(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
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
        if (p != 0)
            return refuse("padding outside a Convolution or Pooling has no Caffe layer",
                          "move the padding into the next Conv or pool's pads");
    power(in_name(n, 0), out_name(n), 1.0, 0.0, "");
    decide("removed", "Pad of nothing kept as an identity Power layer");
    return ok();
}

void mapper::crop(const std::string& in, std::size_t axis, std::int64_t begin, std::int64_t length, const std::string& out,
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
        l.params.push_back(param::message(
            "slice_param", {param::integer("axis", static_cast<std::int64_t>(axis)), param::integer("slice_point", begin)}));
        shapes_[front] = piece(begin);
        shapes_[rest] = piece(full - begin);
        dropped.push_back(front);
        current = rest;
    }
    if (begin + length < full) {
        const auto back = fresh_blob(out + "/cut_back");
        auto& l = add_layer("Slice", {current}, {out, back}, suffix);
        l.params.push_back(param::message(
            "slice_param", {param::integer("axis", static_cast<std::int64_t>(axis)), param::integer("slice_point", length)}));
        shapes_[back] = piece(full - begin - length);
        dropped.push_back(back);
    }
    shapes_[out] = piece(length);
    if (!dropped.empty()) add_layer("Silence", dropped, {}, suffix + "/silence");
}

void mapper::power(const std::string& in, const std::string& out, double scale, double shift, const std::string& suffix) {
    auto& l = add_layer("Power", {in}, {out}, suffix);
    l.params.push_back(
        param::message("power_param", {param::real("power", 1.0), param::real("scale", scale), param::real("shift", shift)}));
    shapes_[out] = shapes_.at(in);
}

void mapper::relu(const std::string& in, const std::string& out, const std::string& suffix) {
    add_layer("ReLU", {in}, {out}, suffix);
    shapes_[out] = shapes_.at(in);
}

void mapper::relu6(const std::string& in, const std::string& out, const std::string& suffix) {
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

void mapper::clip(const std::string& in, const std::string& out, std::optional<double> lo, std::optional<double> hi) {
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

std::optional<refused> mapper::unsupported(graph::node_id n) const {
    const auto& nd = model_.nodes[n];
    const std::string op(nd.op_type());
    if (!nd.domain().empty() && nd.domain() != "ai.onnx")
        return refused{"operators of domain '" + std::string(nd.domain()) + "' have no Caffe layer",
                       "export a model with standard ONNX operators"};
    static const std::set<std::string> quantized{"DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear", "ConvInteger",
                                                 "MatMulInteger",         "QLinearConv",    "QLinearMatMul"};
    if (quantized.contains(op))
        return refused{"Caffe has no quantized arithmetic: its layers compute in float32 only",
                       "export the float model from before quantization"};
    if (op == "Cast") {
        const auto to = attr_int(n, "to", 0);
        if (to == static_cast<std::int64_t>(onnx::data_type::float16) ||
            to == static_cast<std::int64_t>(onnx::data_type::bfloat16) ||
            to == static_cast<std::int64_t>(onnx::data_type::float64))
            return refused{"Caffe computes in float32 only, and this Cast changes the precision the model computes in",
                           "export the float32 model (from before its float16 conversion)"};
        return std::nullopt;  // to float32: an identity; to an integer type: shape arithmetic
    }
    if (op == "If" || op == "Loop" || op == "Scan")
        return refused{"a Caffe net is one fixed sequence of layers, with no branches or loops",
                       "export the model with the branch taken (or the loop unrolled)"};
    static const std::set<std::string> mapped{"Pad",
                                              "Conv",
                                              "ConvTranspose",
                                              "MaxPool",
                                              "AveragePool",
                                              "GlobalAveragePool",
                                              "GlobalMaxPool",
                                              "Gemm",
                                              "MatMul",
                                              "Relu",
                                              "Sigmoid",
                                              "Tanh",
                                              "LeakyRelu",
                                              "Elu",
                                              "PRelu",
                                              "Clip",
                                              "HardSigmoid",
                                              "HardSwish",
                                              "Flatten",
                                              "Reshape",
                                              "Squeeze",
                                              "Unsqueeze",
                                              "Concat",
                                              "Add",
                                              "Sub",
                                              "Mul",
                                              "Div",
                                              "Max",
                                              "Sum",
                                              "Softmax",
                                              "BatchNormalization",
                                              "Transpose",
                                              "Split",
                                              "Slice",
                                              "LRN",
                                              "ReduceMean",
                                              "Resize",
                                              "Upsample",
                                              "Dropout",
                                              "Identity",
                                              "Shape",
                                              "Gather"};
    if (!mapped.contains(op)) return refused{op + " has no exact Caffe layer in this exporter", "replace it in the source model"};
    return std::nullopt;
}

std::optional<refused> mapper::attribute_refusal(graph::node_id n) const {
    const std::string op(model_.nodes[n].op_type());
    if (op == "ReduceMean") {
        // Whatever the rank, H and W are two axes, and a non-negative one is 2 or 3.
        auto axes = attr_ints(n, "axes");
        if (!axes && has_input(n, 1))
            if (const auto c = constant_at(n, 1); c && c->element_count <= 8)
                if (auto v = values(*c)) {
                    axes.emplace();
                    for (const auto x : *v) axes->push_back(saturated_int64(x));
                }
        if (!axes) return std::nullopt;
        std::set<std::int64_t> named(axes->begin(), axes->end());
        if (named.size() != 2 ||
            std::any_of(named.begin(), named.end(), [](std::int64_t a) { return a == 0 || a == 1 || a > 3; }))
            return refused{"only a mean over H and W of an NCHW tensor has a Caffe layer", "use GlobalAveragePool"};
    }
    if ((op == "Resize" || op == "Upsample") && attr_text(n, "mode", "nearest") != "nearest")
        return refused{"Resize " + attr_text(n, "mode", "nearest") +
                           " has no exact Caffe layer (Caffe's bilinear Deconvolution differs at the borders)",
                       "use nearest with an integer scale, or resize outside the network"};
    return std::nullopt;
}

mapper::outcome mapper::map_node(graph::node_id n) {
    const auto& nd = model_.nodes[n];
    const std::string op(nd.op_type());
    if (auto own = unsupported(n)) return std::optional<refused>(std::move(*own));
    for (std::size_t s = 0; s < nd.outputs.size(); ++s)
        if (s > 0 && nd.outputs[s] != empty_name && op != "Split" && index_.uses(index_.output(n, s)).size() > 0)
            return refuse(
                "its output " + std::to_string(s) + " is used, and only the first output of " + op + " has a Caffe counterpart",
                "export an inference-mode model");
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
        if (!computed_input(n, 0))
            return refuse("its input is a constant",
                          "the export folds constants itself and could not fold this one: compute it in the source model");
        power(in_name(n, 0), out_name(n), 1.0, 0.0, "");
        return ok();
    }
    if (op == "Cast") return refuse("Caffe has no integer tensors, and this Cast computes one", "export a float model");
    return refuse(op + " has no exact Caffe layer in this exporter", "replace it in the source model");
}

mapper::outcome mapper::activation(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& op = model_.nodes[n].op_type();
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

mapper::outcome mapper::prelu(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
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

result<std::optional<double>> mapper::bound(graph::node_id n, std::size_t slot, std::string_view attribute) const {
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

mapper::outcome mapper::clip_node(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    auto lo = bound(n, 1, "min");
    auto hi = bound(n, 2, "max");
    if (!lo || !hi) return refuse("its min or max is not a constant scalar", "export with constant bounds");
    if (*lo && std::isinf(**lo) && **lo < 0) *lo = std::nullopt;
    if (*hi && std::isinf(**hi) && **hi > 0) *hi = std::nullopt;
    clip(in_name(n, 0), out_name(n), *lo, *hi);
    return ok();
}

mapper::outcome mapper::hard_sigmoid(graph::node_id n, bool swish) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
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

mapper::outcome mapper::binary(graph::node_id n) {
    const auto& nd = model_.nodes[n];
    const auto& op = nd.op_type();
    const auto out = out_name(n);
    if (op == "Sum" && nd.inputs.size() == 1 && computed_input(n, 0)) {
        power(in_name(n, 0), out, 1.0, 0.0, "");
        return ok();
    }
    std::vector<std::size_t> computed_slots, constant_slots;
    for (std::size_t s = 0; s < nd.inputs.size(); ++s) (computed_input(n, s) ? computed_slots : constant_slots).push_back(s);
    if (constant_slots.empty()) return computed_binary(n);
    if (computed_slots.size() != 1 || nd.inputs.size() != 2 || op == "Max" || op == "Sum")
        return refuse("only one computed input with one constant is exported",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    return constant_binary(n, computed_slots[0], constant_slots[0]);
}

mapper::outcome mapper::computed_binary(graph::node_id n) {
    const auto& nd = model_.nodes[n];
    const auto& op = nd.op_type();
    const auto out = out_name(n);
    // All inputs computed: Eltwise when shapes agree; SE-style (N,C,1,1) gates for Mul.
    const auto& s0 = in_shape(n, 0);
    bool same = true;
    for (std::size_t s = 1; s < nd.inputs.size(); ++s) same = same && in_shape(n, s) == s0;
    if (same) {
        if (op == "Div")
            return refuse("dividing two computed tensors has no Caffe layer", "rewrite as a multiplication by a constant");
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

mapper::outcome mapper::constant_binary(graph::node_id n, std::size_t xs, std::size_t constant_slot) {
    const auto& op = model_.nodes[n].op_type();
    const auto out = out_name(n);
    const auto c = constant_at(n, constant_slot);
    const auto& x = in_shape(n, xs);
    ONNXSTREAM_ASSIGN(const auto v, values(*c));
    const bool constant_first = constant_slot == 0;
    if (op == "Div" && constant_first)
        return refuse("dividing a constant by a computed tensor has no Caffe layer", "rewrite the model");
    if (v.size() != c->element_count)
        return refuse("its constant holds a different number of values than its shape", "check the model");
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
    for (std::size_t i = 0; i < padded.size() && per_channel; ++i) per_channel = padded[i] == 1 || (i == 1 && padded[i] == x[1]);
    if (!per_channel)
        return refuse("its constant (" + join(c->dims) + ") is not one value or one per channel",
                      "Caffe's Scale works per channel");
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
    l.params.push_back(param::message(
        "scale_param", {param::integer("axis", 1), param::integer("num_axes", 1), param::flag("bias_term", bias)}));
    ONNXSTREAM_ASSIGN(auto g, values_blob(std::move(gamma), {channels}));
    l.blobs.push_back(std::move(g));
    if (bias) {
        ONNXSTREAM_ASSIGN(auto b, values_blob(std::move(beta), {channels}));
        l.blobs.push_back(std::move(b));
    }
    shapes_[out] = x;
    return ok();
}

mapper::outcome mapper::batchnorm(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    if (attr_int(n, "training_mode", 0) != 0) return refuse("it is in training mode", "export an inference-mode model");
    const auto& in = in_shape(n, 0);
    std::array<std::optional<graph::constant>, 4> p;
    for (std::size_t i = 0; i < 4; ++i) {
        p[i] = constant_at(n, i + 1);
        if (!p[i]) return refuse("its scale, bias, mean or variance is not a constant", "export an inference-mode model");
    }
    const auto channels = in.size() >= 2 ? in[1] : 1;
    for (const auto& c : p)
        if (static_cast<std::int64_t>(c->element_count) != channels)
            return refuse("its parameters are not per channel", "check the model");
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

mapper::outcome mapper::lrn(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
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

}  // namespace detail

result<mapping> map_graph(const graph::graph_model& model, const graph::tensor_reader& reader, weight_store& weights,
                          const mapping_options& options) {
    return detail::mapper(model, reader, weights, options).run();
}

}  // namespace onnxstream::caffe
