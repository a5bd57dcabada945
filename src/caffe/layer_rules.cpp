#include <onnxstream/caffe/layer_rules.hpp>

#include <onnxstream/caffe/blob_limits.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <string_view>

namespace onnxstream::caffe {
namespace {

enum class field_type : std::uint8_t { uint32, int32, int64, real, boolean, word, message };

struct field_rule {
    field_type type;
    std::int64_t min = std::numeric_limits<std::int64_t>::min();  // integers only
    std::set<std::string_view> words{};                           // enums only
};

constexpr std::int64_t int32_min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t uint32_max = std::numeric_limits<std::uint32_t>::max();

// caffe.proto (BVLC 1.0, and OpenCV's opencv-caffe.proto for permute_param and
// pooling ceil_mode): the type of every field the mapper writes, with the lower bound the
// layer needs. Keys are "message.field".
const std::map<std::string_view, field_rule>& rules() {
    static const std::map<std::string_view, field_rule> table{
        {"input_param.shape", {field_type::message}},
        {"reshape_param.shape", {field_type::message}},
        {"shape.dim", {field_type::int64, 1}},
        {"convolution_param.num_output", {field_type::uint32, 1}},
        {"convolution_param.bias_term", {field_type::boolean}},
        {"convolution_param.pad_h", {field_type::uint32, 0}},
        {"convolution_param.pad_w", {field_type::uint32, 0}},
        {"convolution_param.kernel_h", {field_type::uint32, 1}},
        {"convolution_param.kernel_w", {field_type::uint32, 1}},
        {"convolution_param.stride_h", {field_type::uint32, 1}},
        {"convolution_param.stride_w", {field_type::uint32, 1}},
        {"convolution_param.group", {field_type::uint32, 1}},
        {"convolution_param.dilation", {field_type::uint32, 1}},
        {"pooling_param.pool", {field_type::word, 0, {"MAX", "AVE"}}},
        {"pooling_param.kernel_h", {field_type::uint32, 1}},
        {"pooling_param.kernel_w", {field_type::uint32, 1}},
        {"pooling_param.stride_h", {field_type::uint32, 1}},
        {"pooling_param.stride_w", {field_type::uint32, 1}},
        {"pooling_param.pad_h", {field_type::uint32, 0}},
        {"pooling_param.pad_w", {field_type::uint32, 0}},
        {"pooling_param.global_pooling", {field_type::boolean}},
        {"pooling_param.ceil_mode", {field_type::boolean}},
        {"inner_product_param.num_output", {field_type::uint32, 1}},
        {"inner_product_param.bias_term", {field_type::boolean}},
        {"inner_product_param.axis", {field_type::int32, 0}},
        {"slice_param.axis", {field_type::int32, 0}},
        {"slice_param.slice_point", {field_type::uint32, 1}},
        {"concat_param.axis", {field_type::int32, 0}},
        {"flatten_param.axis", {field_type::int32, 0}},
        {"softmax_param.axis", {field_type::int32, 0}},
        {"scale_param.axis", {field_type::int32, 0}},
        {"scale_param.num_axes", {field_type::int32, 0}},
        {"scale_param.bias_term", {field_type::boolean}},
        {"eltwise_param.operation", {field_type::word, 0, {"PROD", "SUM", "MAX"}}},
        {"eltwise_param.coeff", {field_type::real}},
        {"power_param.power", {field_type::real}},
        {"power_param.scale", {field_type::real}},
        {"power_param.shift", {field_type::real}},
        {"relu_param.negative_slope", {field_type::real}},
        {"elu_param.alpha", {field_type::real}},
        {"prelu_param.channel_shared", {field_type::boolean}},
        {"batch_norm_param.use_global_stats", {field_type::boolean}},
        {"batch_norm_param.eps", {field_type::real}},
        {"lrn_param.local_size", {field_type::uint32, 1}},
        {"lrn_param.alpha", {field_type::real}},
        {"lrn_param.beta", {field_type::real}},
        {"lrn_param.k", {field_type::real}},
        {"permute_param.order", {field_type::uint32, 0}},
    };
    return table;
}

std::optional<std::string> value_problem(const std::string& where, const field_rule& rule, const param& p) {
    const auto& v = p.value;
    switch (rule.type) {
        case field_type::message: return std::nullopt;
        case field_type::boolean:
            if (v == "true" || v == "false") return std::nullopt;
            return where + " is not true or false";
        case field_type::word:
            if (rule.words.contains(v)) return std::nullopt;
            return where + " is not one of its enum's values";
        case field_type::real: {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            if (end == v.c_str() || *end != '\0' || !std::isfinite(x) ||
                std::abs(x) > static_cast<double>(std::numeric_limits<float>::max()))
                return where + " " + v + " is not a finite float";
            return std::nullopt;
        }
        case field_type::uint32:
        case field_type::int32:
        case field_type::int64: {
            std::int64_t x = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            if (ec != std::errc{} || end != v.data() + v.size()) return where + " " + v + " is not a whole number";
            const auto max = rule.type == field_type::uint32  ? uint32_max
                             : rule.type == field_type::int32 ? int32_max
                                                              : std::numeric_limits<std::int64_t>::max();
            const auto type_min = rule.type == field_type::uint32  ? std::int64_t{0}
                                  : rule.type == field_type::int32 ? int32_min
                                                                   : std::numeric_limits<std::int64_t>::min();
            const auto min = std::max(rule.min, type_min);
            if (x < min) return where + " " + v + " is below " + std::to_string(min);
            if (x > max)
                return where + " " + v + " does not fit its field (" + (rule.type == field_type::uint32 ? "uint32" : "int32") +
                       ")";
            return std::nullopt;
        }
    }
    return std::nullopt;
}

std::optional<std::string> params_problem(const std::string& parent, const std::vector<param>& params) {
    for (const auto& p : params) {
        if (parent.empty()) {
            // A layer's parameter message: its fields are checked against "message.field".
            if (p.children.empty()) return "the layer parameter " + p.key + " is not a message";
            if (auto bad = params_problem(p.key, p.children)) return bad;
            continue;
        }
        // Nested messages are keyed by their own name ("shape.dim").
        const auto key = parent + "." + p.key;
        const auto found = rules().find(key);
        if (found == rules().end()) return "the parameter " + key + " has no caffe.proto rule";
        if (found->second.type == field_type::message) {
            if (auto bad = params_problem(p.key, p.children)) return bad;
            continue;
        }
        if (!p.children.empty()) return "the parameter " + key + " is a message where a value belongs";
        if (auto bad = value_problem(key, found->second, p)) return bad;
    }
    return std::nullopt;
}

std::optional<std::int64_t> integer_of(const std::vector<param>& params, std::string_view key) {
    for (const auto& p : params)
        if (p.key == key) {
            std::int64_t x = 0;
            const auto [end, ec] = std::from_chars(p.value.data(), p.value.data() + p.value.size(), x);
            if (ec == std::errc{}) return x;
        }
    return std::nullopt;
}

// Rules between fields of one layer.
std::optional<std::string> layer_rules(const layer& l) {
    for (const auto& p : l.params) {
        if (p.key == "pooling_param") {
            for (const auto axis : {"h", "w"}) {
                const auto pad = integer_of(p.children, std::string("pad_") + axis);
                const auto kernel = integer_of(p.children, std::string("kernel_") + axis);
                if (pad && kernel && *pad >= *kernel)
                    return std::string("pooling_param pad_") + axis + " " + std::to_string(*pad) + " is not below kernel_" +
                           axis + " " + std::to_string(*kernel) + " (Caffe's Pooling requires it)";
            }
        }
        if (p.key == "lrn_param")
            if (const auto size = integer_of(p.children, "local_size"); size && *size % 2 == 0)
                return "lrn_param local_size " + std::to_string(*size) + " is even (Caffe's LRN needs an odd size)";
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> layer_problem(const layer& l) {
    if (auto bad = params_problem({}, l.params)) return bad;
    if (auto bad = layer_rules(l)) return bad;
    for (std::size_t i = 0; i < l.blobs.size(); ++i) {
        const auto& b = l.blobs[i];
        if (auto bad = blob_shape_problem(b.shape)) return "weight blob " + std::to_string(i) + ": " + *bad;
        if (b.data.source == blob_data::inline_values && b.data.values.size() != b.count())
            return "weight blob " + std::to_string(i) + " holds " + std::to_string(b.data.values.size()) + " values for " +
                   std::to_string(b.count()) + " elements";
    }
    return std::nullopt;
}

}  // namespace onnxstream::caffe
