#include <onnxstream/passes/batchnorm_folding.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/passes/constant_values.hpp>

#include <cmath>
#include <unordered_set>

namespace onnxstream::passes {
namespace {

struct fold_plan {
    std::uint32_t producer = none;
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

class folder {
public:
    explicit folder(pass_context& context) : context_(context), model_(context.model), index_(context.model) {}

    std::uint64_t run() {
        std::uint64_t folded = 0;
        for (std::uint32_t n = 0; n < model_.nodes.size(); ++n) {
            if (!model_.node_live(n)) continue;
            const auto& nd = model_.nodes[n];
            if (nd.op_type != "BatchNormalization" || !nd.domain.empty()) continue;
            fold_plan plan;
            const auto folds = check(n, plan);
            if (!folds) {
                finding f;
                f.kind = finding_kind::skipped;
                f.scope = model_.scope_path(nd.scope);
                f.op_type = nd.op_type;
                f.names.push_back(model_.node_label(n));
                f.detail = folds.error().message;
                context_.findings.push_back(std::move(f));
                continue;
            }
            if (!*folds) continue;  // next run
            apply(n, plan);
            ++folded;
        }
        model_.compact();
        return folded;
    }

private:
    result<std::vector<double>> elements(std::uint32_t v, std::uint64_t count, const char* what) const {
        const auto c = find_constant(model_, index_, v);
        if (!c) return failure(error_code::unsupported, std::string(what) + " is not a constant");
        if (c->element_count != count)
            return failure(error_code::unsupported, std::string(what) + " has " + std::to_string(c->element_count) +
                                                        " values for " + std::to_string(count) + " channels");
        auto values = constant_elements(model_, context_.reader, *c);
        if (!values) return failure(error_code::unsupported, std::string(what) + ": " + values.error().message);
        return values;
    }

    // A reason the BatchNormalization cannot fold, reported as a skip.
    static failure cannot_fold(std::string why) { return failure(error_code::unsupported, std::move(why)); }

    // Whether `bn` folds now (its plan filled in), or not in this run (false, silently:
    // a neighbour changed under the index); an error says why it cannot fold at all.
    result<bool> check(std::uint32_t bn, fold_plan& plan) {
        const auto& nd = model_.nodes[bn];
        const auto opset = model_.opset("");
        if (const auto a = model_.attribute(bn, "training_mode"); a && a->i && *a->i != 0)
            return cannot_fold("training_mode is 1");
        if (opset < 7) {
            const auto is_test = model_.attribute(bn, "is_test");
            if (!is_test || !is_test->i || *is_test->i != 1) return cannot_fold("is_test is not 1 (training mode before opset 7)");
        }
        if (opset < 9)
            if (const auto a = model_.attribute(bn, "spatial"); a && a->i && *a->i == 0)
                return cannot_fold("spatial is 0 (parameters per activation)");
        if (nd.inputs.size() < 5) return cannot_fold("it has fewer than 5 inputs");
        for (std::size_t k = 1; k < nd.outputs.size(); ++k) {
            const auto v = index_.output(bn, k);
            if (v != none && !index_.at(v).uses.empty()) return cannot_fold("its running mean or variance outputs are used");
        }
        const auto x = index_.input(bn, 0);
        const auto p = index_.producer(x);
        const std::string op = p == none ? std::string() : model_.nodes[p].op_type;
        if (p == none || !model_.nodes[p].domain.empty() || (op != "Conv" && op != "ConvTranspose" && op != "Gemm"))
            return cannot_fold("its input is not computed by a Conv, ConvTranspose or Gemm" +
                               (op.empty() ? std::string() : " (it comes from " + op + ")"));
        const auto out = index_.output(bn, 0);
        if (touched_.contains(x) || (out != none && touched_.contains(out))) return false;  // next run
        if (index_.at(x).scope != nd.scope) return cannot_fold("the " + op + " is in another graph");
        if (index_.at(x).uses.size() != 1) return cannot_fold("the " + op + "'s output is also used elsewhere (or is a graph output)");
        if (index_.at(x).pinned || (out != none && index_.at(out).pinned)) return cannot_fold("a training graph uses its values");
        plan.producer = p;
        plan.op = op;

        const auto& producer = model_.nodes[p];
        if (producer.inputs.size() < 2) return cannot_fold("the " + op + " has no weight");
        const auto weight = find_constant(model_, index_, index_.input(p, 1));
        if (!weight || weight->inline_values || (weight->site == none && weight->tensor == none))
            return cannot_fold("the " + op + "'s weight is not a constant");
        if (!is_encodable_float(weight->data_type))
            return cannot_fold("the weight's type " + onnx::data_type_name(weight->data_type) + " is not FLOAT, FLOAT16 or DOUBLE");
        const auto& dims = weight->dims;
        std::uint64_t channels = 0;
        channel_layout layout = channel_layout::axis0;
        std::uint64_t group = 1;
        if (op == "Conv") {
            if (dims.size() < 3) return cannot_fold("the Conv weight has fewer than 3 dimensions");
            channels = static_cast<std::uint64_t>(dims[0]);
        } else if (op == "ConvTranspose") {
            if (dims.size() < 3) return cannot_fold("the ConvTranspose weight has fewer than 3 dimensions");
            const auto g = model_.attribute(p, "group");
            group = g && g->i ? static_cast<std::uint64_t>(*g->i) : 1;
            if (group == 0 || static_cast<std::uint64_t>(dims[0]) % group != 0)
                return cannot_fold("the ConvTranspose group does not divide its input channels");
            channels = static_cast<std::uint64_t>(dims[1]) * group;
            layout = channel_layout::conv_transpose;
        } else {
            if (dims.size() != 2) return cannot_fold("the Gemm weight is not 2-D");
            const auto trans_b = model_.attribute(p, "transB");
            const bool transposed = trans_b && trans_b->i && *trans_b->i != 0;
            channels = static_cast<std::uint64_t>(transposed ? dims[0] : dims[1]);
            layout = transposed ? channel_layout::axis0 : channel_layout::last_axis_2d;
        }
        const auto base_site = weight->tensor != none ? model_.tensors[weight->tensor].site : weight->site;
        if (base_site != none && !context_.reader.readable(base_site))
            return cannot_fold("the weight's bytes cannot be read (missing external data?)");

        auto scale = elements(index_.input(bn, 1), channels, "scale");
        auto bias_bn = elements(index_.input(bn, 2), channels, "B");
        auto mean = elements(index_.input(bn, 3), channels, "mean");
        auto var = elements(index_.input(bn, 4), channels, "var");
        for (const auto* r : {&scale, &bias_bn, &mean, &var})
            if (!*r) return cannot_fold(r->error().message);
        const auto eps_attribute = model_.attribute(bn, "epsilon");
        const double epsilon = eps_attribute && eps_attribute->f ? *eps_attribute->f : 1e-5;

        std::vector<double> factors(static_cast<std::size_t>(channels));
        for (std::size_t c = 0; c < factors.size(); ++c) {
            double denominator = (*var)[c] + epsilon;
            if (!(denominator > 0)) {
                if (!(epsilon > 0)) return cannot_fold("var + epsilon <= 0 with epsilon <= 0 (channel " + std::to_string(c) + ")");
                plan.warnings.emplace_back(
                    error_code::invalid_tensor,
                    "BatchNormalization '" + model_.node_label(bn) + "' channel " + std::to_string(c) + ": var + epsilon = " +
                        std::to_string(denominator) + " <= 0 (the model yields NaN or Inf there); variance taken as 0",
                    "the model's running variance is negative; check how it was trained or exported");
                denominator = epsilon;
            }
            factors[c] = (*scale)[c] / std::sqrt(denominator);
        }

        // The bias: Conv/ConvTranspose input 2, Gemm's C.
        const bool has_bias = producer.inputs.size() > 2 && producer.inputs[2] != 0;
        if (op != "Gemm") {
            std::vector<double> b(static_cast<std::size_t>(channels), 0.0);
            if (has_bias) {
                auto old = elements(index_.input(p, 2), channels, "the bias");
                if (!old) return cannot_fold(old.error().message);
                b = std::move(*old);
            }
            plan.bias.resize(b.size());
            for (std::size_t c = 0; c < b.size(); ++c) plan.bias[c] = (b[c] - (*mean)[c]) * factors[c] + (*bias_bn)[c];
            plan.bias_dims = {static_cast<std::int64_t>(channels)};
        } else {
            const auto beta_attribute = model_.attribute(p, "beta");
            const double beta = beta_attribute && beta_attribute->f ? *beta_attribute->f : 1.0;
            plan.drop_beta = beta_attribute.has_value();
            std::vector<double> c_values{0.0};
            std::vector<std::int64_t> c_dims;
            if (has_bias) {
                const auto c = find_constant(model_, index_, index_.input(p, 2));
                if (!c) return cannot_fold("the Gemm's C is not a constant");
                auto values = constant_elements(model_, context_.reader, *c);
                if (!values) return cannot_fold("the Gemm's C: " + values.error().message);
                c_values = std::move(*values);
                c_dims = c->dims;
            }
            // C broadcasts to [M, N]: keep [N] unless it varies along M.
            std::uint64_t rows = 1;
            std::uint64_t c_columns = c_values.size();
            if (c_dims.size() == 2) {
                rows = static_cast<std::uint64_t>(c_dims[0]);
                c_columns = static_cast<std::uint64_t>(c_dims[1]);
            } else if (c_dims.size() > 2) {
                return cannot_fold("the Gemm's C has more than 2 dimensions");
            }
            if (c_columns != 1 && c_columns != channels) return cannot_fold("the Gemm's C does not broadcast over the channels");
            if (rows * c_columns != c_values.size()) return cannot_fold("the Gemm's C has the wrong number of values");
            plan.bias.resize(static_cast<std::size_t>(rows * channels));
            for (std::uint64_t m = 0; m < rows; ++m)
                for (std::uint64_t c = 0; c < channels; ++c) {
                    const double old = c_values[static_cast<std::size_t>(m * c_columns + (c_columns == 1 ? 0 : c))];
                    plan.bias[static_cast<std::size_t>(m * channels + c)] =
                        factors[static_cast<std::size_t>(c)] * (beta * old - (*mean)[static_cast<std::size_t>(c)]) +
                        (*bias_bn)[static_cast<std::size_t>(c)];
                }
            plan.bias_dims = rows > 1 ? std::vector<std::int64_t>{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(channels)}
                                      : std::vector<std::int64_t>{static_cast<std::int64_t>(channels)};
        }

        // The weight: from the model's tensor, or on top of an earlier fold of the same weight.
        plan.weight_type = weight->data_type;
        plan.weight_dims = dims;
        plan.weight.scaled = true;
        plan.weight.layout = layout;
        plan.weight.group = group;
        plan.weight.factors = std::move(factors);
        if (weight->tensor != none && model_.tensors[weight->tensor].site == none) {
            const auto& earlier = model_.tensors[weight->tensor].computed;
            if (!earlier.scaled || earlier.layout != layout || earlier.group != group || earlier.factors.size() != channels)
                return cannot_fold("the weight was computed in a way that cannot be folded again");
            plan.weight.base_site = earlier.base_site;
            for (std::size_t c = 0; c < plan.weight.factors.size(); ++c) plan.weight.factors[c] *= earlier.factors[c];
        } else {
            plan.weight.base_site = base_site;
        }
        plan.weight_name = std::string(model_.text(index_.at(index_.input(p, 1)).name));
        return true;
    }

    void apply(std::uint32_t bn, fold_plan& plan) {
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
        if (plan.drop_beta) {
            model_.nodes[p].dropped_attributes.emplace_back("beta");
            model_.nodes[p].changed = true;
        }
        for (auto& w : plan.warnings) context_.warnings.push_back(std::move(w));

        finding f;
        f.kind = finding_kind::folded_batchnorm;
        f.scope = model_.scope_path(scope);
        f.op_type = "BatchNormalization";
        f.names = {model_.node_label(bn), model_.node_label(p)};
        f.nodes = 1;
        f.detail = "into " + plan.op + " " + model_.node_label(p);
        context_.findings.push_back(std::move(f));
        touched_.insert(index_.input(bn, 0));
        touched_.insert(index_.output(bn, 0));
        model_.remove_node(bn);
    }

    pass_context& context_;
    graph_model& model_;
    const graph_index index_;
    std::unordered_set<std::uint32_t> touched_;
};

}  // namespace

std::uint64_t fold_batchnorms(pass_context& context) { return folder(context).run(); }

pass_entry batchnorm_folding_pass() {
    return {"fold-bn", "BatchNormalization folded into Conv, ConvTranspose, Gemm", fold_batchnorms, nullptr,
            {finding_kind::folded_batchnorm, "folded", "would fold", "BatchNormalization"}, false};
}

}  // namespace onnxstream::passes
