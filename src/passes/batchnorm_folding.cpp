#include <onnxstream/passes/batchnorm_folding.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <onnxstream/graph/constant_values.hpp>
#include <onnxstream/onnx/data_type.hpp>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

namespace onnxstream::passes {
namespace {

struct fold_plan {
    node_id producer = none;
    std::string op;
    std::int32_t weight_type = 0;
    std::vector<std::int64_t> weight_dims;
    std::string weight_name;
    computed_values weight;
    std::vector<std::int64_t> bias_dims;
    std::vector<double> bias;
    bool drop_beta = false;
    std::vector<error> warnings;
};

// Why a BatchNormalization is not folded: a reason reported as a skipped finding, or a
// value this run already changed, judged again on the next run without a finding.
enum class refusal_kind : std::uint8_t { reported, next_run };
struct refusal {
    refusal_kind kind = refusal_kind::reported;
    std::string why;
};
// Each step of the check: empty when the step passes.
using verdict = std::optional<refusal>;

verdict refuse(std::string why) { return refusal{.kind = refusal_kind::reported, .why = std::move(why)}; }

// The producer's weight, and how its elements map to the BatchNormalization's channels.
struct weight_shape {
    constant weight;
    std::uint64_t channels = 0;
    channel_layout layout = channel_layout::axis0;
    std::uint64_t group = 1;
    site_id base_site = none;  // where the weight's original bytes are
};

// The BatchNormalization's parameters, one per channel, folded into factors.
struct channel_terms {
    std::vector<double> factors;  // scale / sqrt(var + epsilon)
    std::vector<double> mean;
    std::vector<double> bias;  // B
};

class folder {
public:
    explicit folder(pass_context& context)
        : context_(context), model_(context.model), held_index_(context.index()), index_(*held_index_) {}

    std::uint64_t run() {
        std::uint64_t folded = 0;
        for (const auto n : model_.nodes.ids()) {
            if (!model_.node_live(n)) continue;
            const auto& nd = model_.nodes[n];
            if (nd.op_type() != "BatchNormalization" || !nd.domain().empty()) continue;
            fold_plan plan;
            if (const auto refused = check(n, plan)) {
                if (refused->kind == refusal_kind::reported) context_.findings.add(skipped_finding(n, refused->why));
                continue;
            }
            apply(n, plan);
            ++folded;
        }
        model_.compact();
        return folded;
    }

private:
    finding skipped_finding(node_id n, std::string why) const {
        auto f = node_finding(model_, n, finding_kind::skipped, std::move(why));
        f.nodes = 0;
        return f;
    }

    result<std::vector<double>> elements(value_id v, std::uint64_t count, const char* what) const {
        const auto c = find_constant(model_, index_, v);
        if (!c) return failure(error_code::unsupported, std::string(what) + " is not a constant");
        if (c->element_count != count)
            return failure(error_code::unsupported, std::string(what) + " has " + std::to_string(c->element_count) +
                                                        " values for " + std::to_string(count) + " channels");
        auto values = constant_elements(model_, context_.reader, *c);
        if (!values) return failure(error_code::unsupported, std::string(what) + ": " + values.error().message);
        return values;
    }

    verdict check(node_id bn, fold_plan& plan) {
        if (auto refused = check_inference_mode(bn)) return refused;
        if (auto refused = check_producer(bn, plan)) return refused;
        weight_shape shape;
        if (auto refused = check_weight(plan, shape)) return refused;
        channel_terms terms;
        if (auto refused = fold_parameters(bn, shape.channels, plan, terms)) return refused;
        auto refused = plan.op == "Gemm" ? fold_gemm_bias(plan, shape.channels, terms)
                                         : fold_conv_bias(plan, shape.channels, terms);
        if (refused) return refused;
        return plan_weight(plan, shape, std::move(terms.factors));
    }

    // Inference mode, per-channel parameters, running statistics unused.
    verdict check_inference_mode(node_id bn) const {
        const auto& nd = model_.nodes[bn];
        const auto opset = model_.opset("");
        if (const auto a = model_.attribute(bn, "training_mode"); a && a->i && *a->i != 0) return refuse("training_mode is 1");
        if (opset < 7) {
            const auto is_test = model_.attribute(bn, "is_test");
            if (!is_test || !is_test->i || *is_test->i != 1) return refuse("is_test is not 1 (training mode before opset 7)");
        }
        if (opset < 9)
            if (const auto a = model_.attribute(bn, "spatial"); a && a->i && *a->i == 0)
                return refuse("spatial is 0 (parameters per activation)");
        if (nd.inputs.size() < 5) return refuse("it has fewer than 5 inputs");
        for (std::size_t k = 1; k < nd.outputs.size(); ++k) {
            const auto v = index_.output(bn, k);
            if (v != none && !index_.uses(v).empty()) return refuse("its running mean or variance outputs are used");
        }
        return std::nullopt;
    }

    // A Conv, ConvTranspose or Gemm in the same graph whose only reader is the BatchNormalization.
    verdict check_producer(node_id bn, fold_plan& plan) const {
        const auto x = index_.input(bn, 0);
        const auto p = index_.producer(x);
        const std::string op = p == none ? std::string() : std::string(model_.nodes[p].op_type());
        if (p == none || !model_.nodes[p].domain().empty() || (op != "Conv" && op != "ConvTranspose" && op != "Gemm"))
            return refuse("its input is not computed by a Conv, ConvTranspose or Gemm" +
                          (op.empty() ? std::string() : " (it comes from " + op + ")"));
        const auto out = index_.output(bn, 0);
        if (touched_.contains(x) || (out != none && touched_.contains(out)))
            return refusal{.kind = refusal_kind::next_run, .why = {}};
        if (index_.at(x).scope != model_.nodes[bn].scope) return refuse("the " + op + " is in another graph");
        if (index_.uses(x).size() != 1) return refuse("the " + op + "'s output is also used elsewhere (or is a graph output)");
        if (index_.at(x).pinned || (out != none && index_.at(out).pinned)) return refuse("a training graph uses its values");
        plan.producer = p;
        plan.op = op;
        return std::nullopt;
    }

    // A constant float weight whose bytes can be read, and its channel layout.
    verdict check_weight(const fold_plan& plan, weight_shape& shape) const {
        const auto p = plan.producer;
        const auto& op = plan.op;
        if (model_.nodes[p].inputs.size() < 2) return refuse("the " + op + " has no weight");
        const auto weight = find_constant(model_, index_, index_.input(p, 1));
        if (!weight || weight->inline_values || (weight->site == none && weight->tensor == none))
            return refuse("the " + op + "'s weight is not a constant");
        if (!is_encodable_float(weight->data_type))
            return refuse("the weight's type " + onnx::data_type_name(weight->data_type) + " is not FLOAT, FLOAT16 or DOUBLE");
        shape.weight = *weight;
        if (auto refused = channel_layout_of(plan, shape)) return refused;
        shape.base_site = weight->tensor != none ? model_.tensors[weight->tensor].site : weight->site;
        if (shape.base_site != none && !context_.reader.readable(shape.base_site))
            return refuse("the weight's bytes cannot be read (missing external data?)");
        return std::nullopt;
    }

    verdict channel_layout_of(const fold_plan& plan, weight_shape& shape) const {
        const auto& dims = shape.weight.dims;
        if (plan.op == "Conv") {
            if (dims.size() < 3) return refuse("the Conv weight has fewer than 3 dimensions");
            shape.channels = static_cast<std::uint64_t>(dims[0]);
        } else if (plan.op == "ConvTranspose") {
            if (dims.size() < 3) return refuse("the ConvTranspose weight has fewer than 3 dimensions");
            const auto g = model_.attribute(plan.producer, "group");
            shape.group = g && g->i ? static_cast<std::uint64_t>(*g->i) : 1;
            if (shape.group == 0 || static_cast<std::uint64_t>(dims[0]) % shape.group != 0)
                return refuse("the ConvTranspose group does not divide its input channels");
            shape.channels = static_cast<std::uint64_t>(dims[1]) * shape.group;
            shape.layout = channel_layout::conv_transpose;
        } else {
            if (dims.size() != 2) return refuse("the Gemm weight is not 2-D");
            const auto trans_b = model_.attribute(plan.producer, "transB");
            const bool transposed = trans_b && trans_b->i && *trans_b->i != 0;
            shape.channels = static_cast<std::uint64_t>(transposed ? dims[0] : dims[1]);
            shape.layout = transposed ? channel_layout::axis0 : channel_layout::last_axis_2d;
        }
        return std::nullopt;
    }

    // scale, B, mean and var, one per channel; a variance that makes var + epsilon <= 0 is
    // taken as 0 (with a warning) when epsilon > 0.
    verdict fold_parameters(node_id bn, std::uint64_t channels, fold_plan& plan, channel_terms& terms) const {
        auto scale = elements(index_.input(bn, 1), channels, "scale");
        auto bias_bn = elements(index_.input(bn, 2), channels, "B");
        auto mean = elements(index_.input(bn, 3), channels, "mean");
        auto var = elements(index_.input(bn, 4), channels, "var");
        for (const auto* r : {&scale, &bias_bn, &mean, &var})
            if (!*r) return refuse(r->error().message);
        const auto eps_attribute = model_.attribute(bn, "epsilon");
        const double epsilon = eps_attribute && eps_attribute->f ? *eps_attribute->f : 1e-5;
        terms.factors.resize(static_cast<std::size_t>(channels));
        for (std::size_t c = 0; c < terms.factors.size(); ++c) {
            double denominator = (*var)[c] + epsilon;
            if (!(denominator > 0)) {
                if (!(epsilon > 0)) return refuse("var + epsilon <= 0 with epsilon <= 0 (channel " + std::to_string(c) + ")");
                plan.warnings.emplace_back(error_code::invalid_tensor,
                                           "BatchNormalization '" + model_.node_label(bn) + "' channel " + std::to_string(c) +
                                               ": var + epsilon = " + std::to_string(denominator) +
                                               " <= 0 (the model yields NaN or Inf there); variance taken as 0",
                                           "the model's running variance is negative; check how it was trained or exported");
                denominator = epsilon;
            }
            terms.factors[c] = (*scale)[c] / std::sqrt(denominator);
        }
        terms.mean = std::move(*mean);
        terms.bias = std::move(*bias_bn);
        return std::nullopt;
    }

    // Conv/ConvTranspose: bias input 2 (zeros when absent), one per channel.
    verdict fold_conv_bias(fold_plan& plan, std::uint64_t channels, const channel_terms& terms) const {
        const auto& producer = model_.nodes[plan.producer];
        std::vector<double> b(static_cast<std::size_t>(channels), 0.0);
        if (producer.inputs.size() > 2 && producer.inputs[2] != empty_name) {
            auto old = elements(index_.input(plan.producer, 2), channels, "the bias");
            if (!old) return refuse(old.error().message);
            b = std::move(*old);
        }
        plan.bias.resize(b.size());
        for (std::size_t c = 0; c < b.size(); ++c) plan.bias[c] = (b[c] - terms.mean[c]) * terms.factors[c] + terms.bias[c];
        plan.bias_dims = {static_cast<std::int64_t>(channels)};
        return std::nullopt;
    }

    // Gemm: C (times beta, which the fold takes in) broadcast to [M, N]; kept [N] unless it
    // varies along M.
    verdict fold_gemm_bias(fold_plan& plan, std::uint64_t channels, const channel_terms& terms) const {
        const auto& producer = model_.nodes[plan.producer];
        const auto beta_attribute = model_.attribute(plan.producer, "beta");
        const double beta = beta_attribute && beta_attribute->f ? *beta_attribute->f : 1.0;
        plan.drop_beta = beta_attribute.has_value();
        std::vector<double> c_values{0.0};
        std::vector<std::int64_t> c_dims;
        if (producer.inputs.size() > 2 && producer.inputs[2] != empty_name) {
            const auto c = find_constant(model_, index_, index_.input(plan.producer, 2));
            if (!c) return refuse("the Gemm's C is not a constant");
            auto values = constant_elements(model_, context_.reader, *c);
            if (!values) return refuse("the Gemm's C: " + values.error().message);
            c_values = std::move(*values);
            c_dims = c->dims;
        }
        std::uint64_t rows = 1;
        std::uint64_t c_columns = c_values.size();
        if (c_dims.size() == 2) {
            rows = static_cast<std::uint64_t>(c_dims[0]);
            c_columns = static_cast<std::uint64_t>(c_dims[1]);
        } else if (c_dims.size() > 2) {
            return refuse("the Gemm's C has more than 2 dimensions");
        }
        if (c_columns != 1 && c_columns != channels) return refuse("the Gemm's C does not broadcast over the channels");
        if (rows * c_columns != c_values.size()) return refuse("the Gemm's C has the wrong number of values");
        plan.bias.resize(static_cast<std::size_t>(rows * channels));
        for (std::uint64_t m = 0; m < rows; ++m)
            for (std::uint64_t c = 0; c < channels; ++c) {
                const auto k = static_cast<std::size_t>(c);
                const double old = c_values[static_cast<std::size_t>(m * c_columns + (c_columns == 1 ? 0 : c))];
                plan.bias[static_cast<std::size_t>(m * channels + c)] = terms.factors[k] * (beta * old - terms.mean[k]) +
                                                                        terms.bias[k];
            }
        plan.bias_dims = rows > 1
                             ? std::vector<std::int64_t>{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(channels)}
                             : std::vector<std::int64_t>{static_cast<std::int64_t>(channels)};
        return std::nullopt;
    }

    // The weight: from the model's tensor, or on top of an earlier fold of the same weight.
    verdict plan_weight(fold_plan& plan, const weight_shape& shape, std::vector<double> factors) const {
        plan.weight_type = shape.weight.data_type;
        plan.weight_dims = shape.weight.dims;
        plan.weight.scaled = true;
        plan.weight.layout = shape.layout;
        plan.weight.group = shape.group;
        plan.weight.factors = std::move(factors);
        const auto t = shape.weight.tensor;
        if (t != none && model_.tensors[t].site == none) {
            if (model_.computed(t) == nullptr) return refuse("the weight was computed in a way that cannot be folded again");
            const auto& earlier = model_.computed(t)->values;
            if (!earlier.scaled) {
                // Bytes computed earlier in this run (a Constant node that became an
                // initializer, a folded Transpose): they are the base, as a site's are,
                // so that one run folds what a second run over the written model would.
                if (!earlier.has_bytes) return refuse("the weight was computed in a way that cannot be folded again");
                plan.weight.has_bytes = true;
                plan.weight.bytes = earlier.bytes;
                return weight_named(plan);
            }
            if (earlier.layout != shape.layout || earlier.group != shape.group || earlier.factors.size() != shape.channels)
                return refuse("the weight was computed in a way that cannot be folded again");
            plan.weight.base_site = earlier.base_site;
            plan.weight.has_bytes = earlier.has_bytes;
            plan.weight.bytes = earlier.bytes;
            for (std::size_t c = 0; c < plan.weight.factors.size(); ++c) plan.weight.factors[c] *= earlier.factors[c];
        } else {
            plan.weight.base_site = shape.base_site;
        }
        return weight_named(plan);
    }

    verdict weight_named(fold_plan& plan) const {
        plan.weight_name = std::string(model_.text(index_.at(index_.input(plan.producer, 1)).name));
        return std::nullopt;
    }

    void apply(node_id bn, fold_plan& plan) {
        const auto scope = model_.nodes[bn].scope;
        const auto bn_output = model_.nodes[bn].outputs[0];
        const auto p = plan.producer;
        const auto weight_name = model_.names.fresh(plan.weight_name + "_bn");
        const auto bias_name = model_.names.fresh(plan.weight_name + "_bn_bias");
        model_.add_tensor(scope, weight_name, plan.weight_type, plan.weight_dims, std::move(plan.weight));
        computed_values bias;
        bias.values = std::move(plan.bias);
        model_.add_tensor(scope, bias_name, plan.weight_type, plan.bias_dims, std::move(bias));
        model_.set_input(p, 1, weight_name);
        model_.set_input(p, 2, bias_name);
        model_.set_output(p, 0, bn_output);
        if (plan.drop_beta) model_.drop_attribute(p, "beta");
        for (auto& w : plan.warnings) context_.warnings.push_back(std::move(w));

        finding f;
        f.kind = finding_kind::folded_batchnorm;
        f.scope = model_.scope_path(scope);
        f.op_type = "BatchNormalization";
        f.names = {model_.node_label(bn), model_.node_label(p)};
        f.nodes = 1;
        f.detail = "into " + plan.op + " " + model_.node_label(p);
        context_.findings.add(std::move(f));
        touched_.insert(index_.input(bn, 0));
        touched_.insert(index_.output(bn, 0));
        model_.remove_node(bn);
    }

    pass_context& context_;
    graph_model& model_;
    // The run's snapshot of the index (pass_context::index), held while the run edits.
    const std::shared_ptr<const graph_index> held_index_;
    const graph_index& index_;
    std::unordered_set<value_id> touched_;
};

}  // namespace

std::uint64_t fold_batchnorms(pass_context& context) { return folder(context).run(); }

namespace {
// analyze shows what folding would do, as optimize does it (on analyze's own copy).
void analyze_batchnorms(pass_context& context) { static_cast<void>(fold_batchnorms(context)); }
}  // namespace

pass_entry batchnorm_folding_pass() {
    return {.name = "fold-bn",
            .summary = "BatchNormalization folded into Conv, ConvTranspose, Gemm",
            .run = fold_batchnorms,
            .analyze = analyze_batchnorms,
            .headline = {.kind = finding_kind::folded_batchnorm,
                         .done = "folded",
                         .would = "would fold",
                         .noun = "BatchNormalization"},
            .always_count_nodes = false};
}

}  // namespace onnxstream::passes
