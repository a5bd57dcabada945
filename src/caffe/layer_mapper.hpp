// The mapper behind map_graph (see include/onnxstream/caffe/layer_mapping.hpp): one class
// over the graph, its definitions split by family (layer_mapping.cpp: the walk, element-wise
// and shape arithmetic; layer_mapping_spatial.cpp: convolution, pooling, resizing;
// layer_mapping_shapes.cpp: fully connected, reshaping, slicing). Private to src/caffe.
#pragma once

#include <onnxstream/caffe/blob_limits.hpp>
#include <onnxstream/caffe/layer_mapping.hpp>
#include <onnxstream/onnx/data_type.hpp>

#include "node_attributes.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace onnxstream::caffe::detail {

using graph::empty_name;
using graph::name_id;
using graph::none;

// Caffe's pooling output size (pooling_layer.cpp): ceil, then a window starting in the
// padding is dropped; OpenCV's `ceil_mode: false` floors instead.
inline std::int64_t caffe_pool_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad, bool ceil_mode) {
    const auto span = in + 2 * pad - kernel;
    if (span < 0) return 0;
    auto out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    if (pad > 0 && (out - 1) * stride >= in + pad) --out;
    return out;
}

// A number from a model as an int64: saturated at the ends (casting an out-of-range
// double is undefined behaviour), NaN as 0.
inline std::int64_t saturated_int64(double v) {
    if (std::isnan(v)) return 0;
    if (v >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
    if (v <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(v);
}

// `axis` (negative counts from the end) as an index below `rank`, or below or equal to it
// when `end_allowed` (Flatten's axis); nullopt when it is out of range.
inline std::optional<std::size_t> axis_index(std::int64_t axis, std::size_t rank, bool end_allowed = false) {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis > (end_allowed ? r : r - 1)) return std::nullopt;
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

inline std::string join(const shape& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
    return out.empty() ? "scalar" : out;
}

inline std::int64_t product(const shape& s, std::size_t from = 0, std::size_t to = std::string::npos) {
    std::int64_t p = 1;
    for (std::size_t i = from; i < std::min(to, s.size()); ++i) p *= s[i];
    return p;
}

// Why a node is refused, with what to try.
struct refused {
    std::string why;
    std::string hint;
};

class mapper : node_attributes {
public:
    mapper(const graph::graph_model& model, const graph::tensor_reader& reader, weight_store& weights,
           const mapping_options& options)
        : node_attributes(model), model_(model), index_(model), reader_(reader), weights_(weights), options_(options) {}

    result<mapping> run();

private:
    using outcome = result<std::optional<refused>>;
    static outcome ok() { return std::optional<refused>{}; }
    static outcome refuse(std::string why, std::string hint) {
        return std::optional<refused>{refused{std::move(why), std::move(hint)}};
    }

    std::string text(name_id id) const { return std::string(model_.text(id)); }

    std::optional<graph::constant> constant_at(graph::node_id n, std::size_t slot) const {
        if (slot >= model_.nodes[n].inputs.size()) return std::nullopt;
        return graph::find_constant(model_, index_, index_.input(n, slot));
    }
    bool has_input(graph::node_id n, std::size_t slot) const {
        return slot < model_.nodes[n].inputs.size() && model_.nodes[n].inputs[slot] != empty_name;
    }
    result<std::vector<double>> values(const graph::constant& c) const { return graph::constant_elements(model_, reader_, c); }
    // The values of input `slot`: a constant, or integers known from static shapes
    // (Shape -> Gather -> Concat chains as PyTorch exports them). Empty when neither.
    result<std::optional<std::vector<double>>> static_values(graph::node_id n, std::size_t slot) const;
    shape static_dims(graph::node_id n, std::size_t slot) const {
        if (const auto found = known_.find(in_name(n, slot)); found != known_.end())
            return found->second.size() == 1 && known_scalar_.contains(in_name(n, slot))
                       ? shape{}
                       : shape{static_cast<std::int64_t>(found->second.size())};
        if (const auto c = constant_at(n, slot)) return c->dims;
        return {};
    }

    // Whether input `slot` is an integer constant of at most one axis and a few elements
    // (a constant in shape arithmetic, such as Paddle2ONNX's Cast of a fill_constant).
    bool small_integer_constant(graph::node_id n, std::size_t slot) const;
    // Integer arithmetic on shapes, done here: it yields no layer. Empty when `n` is not
    // such a node.
    std::optional<outcome> shape_arithmetic(graph::node_id n);
    // Shape of a computed blob: its known dims as values.
    std::optional<outcome> known_shape(graph::node_id n);
    // The values of a shape-arithmetic node whose first input's values are `a`; `scalar`
    // says whether the result is a scalar.
    outcome known_values(graph::node_id n, const std::vector<std::int64_t>& a, std::vector<std::int64_t>& result_values,
                         bool& scalar);

    // Pad of zeros: folded away when it pads nothing; else refused (a Caffe layer pads only
    // inside Convolution and Pooling).
    outcome pad(graph::node_id n);

    std::string in_name(graph::node_id n, std::size_t slot) const { return text(model_.nodes[n].inputs[slot]); }
    std::string out_name(graph::node_id n, std::size_t slot = 0) const { return text(model_.nodes[n].outputs[slot]); }
    const shape& in_shape(graph::node_id n, std::size_t slot) const { return shapes_.at(in_name(n, slot)); }
    bool computed_input(graph::node_id n, std::size_t slot) const { return shapes_.contains(in_name(n, slot)); }

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
        const auto name = model_.node_name(current_);
        return name.empty() ? std::string(model_.nodes[current_].op_type()) + "_" + out_name(current_) : std::string(name);
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
        out_.decisions.push_back(
            {std::move(kind), out_.network.layers.empty() ? "" : out_.network.layers.back().name, std::move(detail)});
    }

    result<blob> constant_blob(const graph::constant& c, shape s) {
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
              const std::string& suffix);

    void power(const std::string& in, const std::string& out, double scale, double shift, const std::string& suffix);
    void relu(const std::string& in, const std::string& out, const std::string& suffix);
    // min(max(x, 0), 6): ReLU6 in OpenCV; BVLC has none, so 6 - ReLU(6 - ReLU(x)).
    void relu6(const std::string& in, const std::string& out, const std::string& suffix);
    // min(max(x, lo), hi) with either bound optional.
    void clip(const std::string& in, const std::string& out, std::optional<double> lo, std::optional<double> hi);

    outcome map_node(graph::node_id n);
    // Why node `n` has no Caffe form whatever its inputs' shapes (its domain, a quantized
    // operator, a change of precision, control flow, an operator with no mapping).
    std::optional<refused> unsupported(graph::node_id n) const;
    // Why node `n` is refused for its attributes alone (a ReduceMean over channels, a
    // linear Resize): what can be said of a node whose input shapes are not known.
    std::optional<refused> attribute_refusal(graph::node_id n) const;
    // Why a layer made since `first_layer` would not load (layer_rules.hpp), or one of its
    // tops cannot be a Caffe blob.
    std::optional<refused> check_layers(std::size_t first_layer) const;
    // Takes back the layers made since `first_layer` (a node refused after it made some).
    void drop_layers(std::size_t first_layer);
    // Node `n`'s outputs are not computed: what reads them is blocked, not refused again.
    void mark_refused(graph::node_id n);

    // --- convolution ---------------------------------------------------------------

    struct spatial {
        std::int64_t kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
    };

    std::optional<refused> read_spatial(graph::node_id n, const shape& in, const shape& kernel, std::vector<spatial>& out);

    outcome conv(graph::node_id n);

    // Slices rows and columns [skip, skip + size) of `in` into `out`.
    void trim(const std::string& in, const std::string& out, std::array<std::int64_t, 2> skip, std::array<std::int64_t, 2> size,
              const std::string& suffix);

    outcome conv_transpose(graph::node_id n);

    // What a Convolution or Deconvolution layer's convolution_param says, per axis.
    struct conv_params {
        std::int64_t channels_out = 0, group = 1;
        std::array<std::int64_t, 2> pad{}, kernel{}, stride{}, dilation{};
    };
    // Adds a Convolution or Deconvolution layer: its convolution_param (group and dilation
    // only when not 1), the weight blob and the bias blob when there is a bias.
    result<void> convolution_layer(const std::string& type, const std::string& bottom, const std::string& top,
                                   const conv_params& c, const graph::constant& w, const std::optional<graph::constant>& bias);

    // --- pooling -------------------------------------------------------------------

    outcome pool(graph::node_id n);

    // Caffe pads and rounding whose windows start where ONNX's do and cover every ONNX
    // output (extra outputs are sliced away afterwards): exact sizes first, ceil first.
    struct pool_choice {
        bool ceil = true;
        std::array<std::int64_t, 2> pad{}, skip{}, size{};
    };
    std::optional<pool_choice> pool_padding(const shape& in, const std::vector<spatial>& sp, const shape& onnx_out) const;
    // Average divisors: Caffe divides by the window clipped to the padded input; ONNX by
    // that (count_include_pad=1, with its own end padding) or by the valid elements. Fills
    // the per-output ratio map (rows x columns) and says whether any output needs it.
    static bool average_correction(const shape& in, const std::vector<spatial>& sp, const shape& onnx_out,
                                   const pool_choice& best, bool include_pad, std::vector<float>& correction);

    outcome global_pool(graph::node_id n, bool is_max);

    outcome reduce_mean(graph::node_id n);

    // --- fully connected -----------------------------------------------------------

    outcome inner_product(graph::node_id n, const std::string& input, std::int64_t axis, std::int64_t outputs, blob weight,
                          std::optional<blob> bias, shape out_shape);

    // B [K, N] -> [N, K] floats.
    result<std::vector<float>> transposed(const graph::constant& b, double scale) const;

    outcome gemm(graph::node_id n);

    outcome matmul(graph::node_id n);

    // --- element-wise --------------------------------------------------------------

    outcome activation(graph::node_id n);

    outcome prelu(graph::node_id n);

    result<std::optional<double>> bound(graph::node_id n, std::size_t slot, std::string_view attribute) const;

    outcome clip_node(graph::node_id n);

    // HardSigmoid: clip(alpha x + beta, 0, 1) = ReLU6(6 alpha x + 6 beta) / 6;
    // HardSwish: x * HardSigmoid(x) with alpha 1/6, beta 1/2.
    outcome hard_sigmoid(graph::node_id n, bool swish);

    // --- shapes --------------------------------------------------------------------

    void reshape_layer(const std::string& in, const std::string& out, const shape& target);

    outcome flatten(graph::node_id n);

    outcome reshape(graph::node_id n);

    outcome concat(graph::node_id n);

    outcome binary(graph::node_id n);
    // Every input computed: Eltwise when the shapes agree, a per-channel gate for Mul.
    outcome computed_binary(graph::node_id n);
    // Input `xs` computed, `constant_slot` a constant: Power for one value, Scale per channel.
    outcome constant_binary(graph::node_id n, std::size_t xs, std::size_t constant_slot);

    outcome softmax(graph::node_id n);

    outcome batchnorm(graph::node_id n);

    outcome transpose(graph::node_id n);

    outcome split(graph::node_id n);

    outcome slice(graph::node_id n);

    outcome lrn(graph::node_id n);

    outcome resize(graph::node_id n);

    const graph::graph_model& model_;
    const graph::graph_index index_;
    const graph::tensor_reader& reader_;
    weight_store& weights_;
    const mapping_options& options_;
    mapping out_;
    std::map<std::string, shape> shapes_;
    std::set<std::string> used_layers_;
    std::set<std::string> used_blobs_;
    graph::node_id current_ = none;
    std::map<std::string, std::vector<std::int64_t>> known_;  // integer values known from static shapes
    std::set<std::string> known_scalar_;
    std::set<std::string> refused_values_;  // outputs of refused or blocked nodes
};

}  // namespace onnxstream::caffe::detail
