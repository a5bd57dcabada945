#include <onnxstream/passes/constant_if.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <onnxstream/graph/constant_values.hpp>

#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace onnxstream::passes {
namespace {

struct decision {
    bool loop = false;
    scope_id taken = none;    // If: the branch scope that always runs
    scope_id skipped = none;  // If: the other branch; Loop: the body
    std::string detail;
};

scope_id branch_named(const graph_model& model, node_id n, std::string_view attribute) {
    for (const auto s : model.nodes[n].subgraphs())
        if (model.scopes[s].attribute == attribute) return s;
    return none;
}

std::optional<decision> decide(const graph_model& model, const graph_index& index, const tensor_reader& reader, node_id n) {
    const auto& nd = model.nodes[n];
    if (!nd.domain().empty()) return std::nullopt;
    if (nd.op_type() == "If" && !nd.inputs.empty()) {
        const auto condition = constant_condition(model, index, reader, index.input(n, 0));
        if (!condition) return std::nullopt;
        decision d;
        d.taken = branch_named(model, n, *condition ? "then_branch" : "else_branch");
        d.skipped = branch_named(model, n, *condition ? "else_branch" : "then_branch");
        if (d.taken == none) return std::nullopt;
        d.detail = std::string("condition is always ") +
                   (*condition ? "true: else_branch never runs" : "false: then_branch never runs");
        return d;
    }
    if (nd.op_type() == "Loop") {
        bool never = false;
        std::string why;
        if (!nd.inputs.empty() && nd.inputs[0] != empty_name) {
            const auto trips = constant_scalar(model, index, reader, index.input(n, 0));
            if (trips && *trips <= 0) {
                never = true;
                why = "trip count is always 0";
            }
        }
        if (!never && nd.inputs.size() > 1 && nd.inputs[1] != empty_name) {
            const auto condition = constant_condition(model, index, reader, index.input(n, 1));
            if (condition && !*condition) {
                never = true;
                why = "condition is always false";
            }
        }
        if (!never) return std::nullopt;
        decision d;
        d.loop = true;
        d.skipped = branch_named(model, n, "body");
        d.detail = why + ": the body never runs";
        return d;
    }
    return std::nullopt;
}

std::uint64_t scope_nodes(const graph_model& model, scope_id s) {
    std::uint64_t count = 0;
    for (const auto n : model.scopes[s].nodes)
        if (!model.nodes[n].removed) count += nodes_within(model, n);
    return count;
}

std::uint64_t scope_bytes(const graph_model& model, scope_id s) {
    std::uint64_t bytes = 0;
    file_walk walk(model);
    for (const auto t : model.scopes[s].initializers) {
        if (model.tensors[t].removed) continue;
        walk.reached(t);
        bytes += model.tensor_bytes(t);
    }
    for (const auto n : model.scopes[s].nodes)
        if (!model.nodes[n].removed) bytes += bytes_within(model, n);
    return bytes;
}

finding describe(const graph_model& model, node_id n, const decision& d) {
    finding f;
    f.kind = finding_kind::dead_branch;
    f.scope = model.scope_path(model.nodes[n].scope);
    f.op_type = model.nodes[n].op_type();
    f.names.push_back(model.node_label(n));
    f.detail = d.detail;
    if (d.skipped != none) {
        f.nodes = scope_nodes(model, d.skipped);
        f.bytes = scope_bytes(model, d.skipped);
    }
    return f;
}

class inliner {
public:
    explicit inliner(pass_context& context)
        : context_(context), model_(context.model), held_index_(context.index()), index_(*held_index_) {}

    std::uint64_t run() {
        std::uint64_t replaced = 0;
        for (const auto n : model_.nodes.ids()) {  // the nodes the index knows, not those added meanwhile
            if (!model_.node_live(n)) continue;
            const auto d = decide(model_, index_, context_.reader, n);
            if (!d) continue;
            const auto s = model_.nodes[n].scope;
            // Inside what an earlier inlining moved, names changed under the index: next run.
            bool stale = false;
            for (auto x = s; x != none; x = model_.scopes[x].parent) stale = stale || busy_.contains(x);
            if (stale) continue;
            auto f = describe(model_, n, *d);
            const auto done = d->loop ? replace_loop(n) : inline_if(n, d->taken);
            if (!done) {
                f.kind = finding_kind::skipped;
                f.nodes = 0;
                f.bytes = 0;
                f.detail += "; not replaced: " + done.error().message;
                context_.findings.add(std::move(f));
                continue;
            }
            f.nodes += 1;  // the If / Loop itself
            context_.findings.add(std::move(f));
            ++replaced;
        }
        model_.compact();
        return replaced;
    }

private:
    // Why an If or Loop that is decided cannot be replaced after all, reported as a skip.
    static failure cannot_replace(std::string why) { return failure(error_code::unsupported, std::move(why)); }

    result<void> replace_loop(node_id n) {
        const auto& nd = model_.nodes[n];
        if (nd.inputs.size() < 2) return cannot_replace("it has no loop-carried values");
        const auto carried = nd.inputs.size() - 2;
        if (nd.outputs.size() < carried) return cannot_replace("its outputs do not match its inputs");
        for (std::size_t k = carried; k < nd.outputs.size(); ++k) {
            const auto v = index_.output(n, k);
            if (v != none && !index_.uses(v).empty()) return cannot_replace("a scan output is used");
        }
        for (std::size_t k = 0; k < carried; ++k) {
            if (nd.outputs[k] != empty_name && nd.inputs[2 + k] == empty_name)
                return cannot_replace("an initial value is missing");
            const auto v = index_.output(n, k);
            if (v != none && index_.at(v).pinned) return cannot_replace("a training graph uses its outputs");
        }
        const auto scope = nd.scope;
        const auto inputs = nd.inputs;
        const auto outputs = nd.outputs;
        auto after = n;
        for (std::size_t k = 0; k < carried; ++k) {
            if (outputs[k] == empty_name) continue;
            after = model_.add_node(scope, after, "Identity", {inputs[2 + k]}, {outputs[k]}, {});
        }
        model_.remove_node(n);
        return {};
    }

    // Names used or defined anywhere outside the subtree of scope `b`.
    std::unordered_set<name_id> names_outside(scope_id b) const {
        std::unordered_set<name_id> names(model_.pinned.begin(), model_.pinned.end());
        for (const auto s : model_.scopes.ids()) {
            const auto& sc = model_.scopes[s];
            if (sc.removed || index_.within(s, b)) continue;
            names.insert(sc.inputs.begin(), sc.inputs.end());
            names.insert(sc.outputs.begin(), sc.outputs.end());
            names.insert(sc.sparse_initializers.begin(), sc.sparse_initializers.end());
            for (const auto t : sc.initializers) names.insert(model_.tensors[t].name);
            for (const auto n : sc.nodes) {
                if (model_.nodes[n].removed) continue;
                names.insert(model_.nodes[n].inputs.begin(), model_.nodes[n].inputs.end());
                names.insert(model_.nodes[n].outputs.begin(), model_.nodes[n].outputs.end());
            }
        }
        return names;
    }

    void rename_value(value_id v, name_id name) {
        const auto& val = index_.at(v);
        const auto it = current_.find(v);
        const auto old_name = it != current_.end() ? it->second : val.name;
        current_[v] = name;
        replace_uses(model_, index_, v, name);
        if (val.kind == value_kind::node_output) {
            model_.set_output(val.node, val.slot, name);
        } else if (val.kind == value_kind::initializer) {
            model_.rename_tensor(val.tensor, name);
        }
        model_.rename_value_infos(val.scope, old_name, name);
    }

    result<void> inline_if(node_id n, scope_id b) {
        const auto& branch = model_.scopes[b];
        const auto& nd = model_.nodes[n];
        if (!branch.sparse_initializers.empty()) return cannot_replace("the branch holds sparse initializers");
        if (!branch.inputs.empty()) return cannot_replace("the branch declares inputs");
        if (branch.outputs.size() != nd.outputs.size()) return cannot_replace("the branch's outputs do not match the If's");
        for (std::size_t k = 0; k < nd.outputs.size(); ++k) {
            const auto v = index_.output(n, k);
            if (v != none && index_.at(v).pinned) return cannot_replace("a training graph uses its outputs");
        }
        const auto s = nd.scope;

        // Values the branch defines, renamed where their names are taken elsewhere.
        const auto outside = names_outside(b);
        std::vector<value_id> defined;
        for (const auto t : branch.initializers)
            if (!model_.tensors[t].removed) defined.push_back(index_.resolve(b, model_.tensors[t].name));
        for (const auto m : branch.nodes) {
            if (model_.nodes[m].removed) continue;
            for (std::size_t k = 0; k < model_.nodes[m].outputs.size(); ++k)
                if (const auto v = index_.output(m, k); v != none) defined.push_back(v);
        }
        for (const auto v : defined)
            if (v != none && index_.at(v).scope == b && outside.contains(index_.at(v).name))
                rename_value(v, model_.names.fresh(model_.text(index_.at(v).name)));

        // The branch's outputs become the If's outputs.
        const auto if_outputs = nd.outputs;
        std::vector<std::pair<name_id, name_id>> identities;  // (from, to)
        std::unordered_map<value_id, int> output_count;
        for (std::size_t k = 0; k < branch.outputs.size(); ++k) ++output_count[index_.graph_output(b, k)];
        for (std::size_t k = 0; k < if_outputs.size(); ++k) {
            if (if_outputs[k] == empty_name) continue;
            const auto v = index_.graph_output(b, k);
            const auto current = model_.scopes[b].outputs[k];
            if (v != none && index_.at(v).kind == value_kind::node_output && index_.at(v).scope == b && output_count[v] == 1) {
                rename_value(v, if_outputs[k]);
            } else {
                identities.emplace_back(current, if_outputs[k]);
            }
        }

        // Move everything up into the If's scope, where the If was.
        const auto moving = model_.move_contents(b, s, n);
        for (const auto m : moving) busy_.insert(model_.nodes[m].subgraphs().begin(), model_.nodes[m].subgraphs().end());
        auto after = moving.empty() ? n : moving.back();
        for (const auto& [from, to] : identities) after = model_.add_node(s, after, "Identity", {from}, {to}, {});
        model_.remove_node(n);
        return {};
    }

    pass_context& context_;
    graph_model& model_;
    // The run's snapshot of the index (pass_context::index), held while the run edits.
    const std::shared_ptr<const graph_index> held_index_;
    const graph_index& index_;
    std::unordered_map<value_id, name_id> current_;  // values renamed by this run
    std::unordered_set<scope_id> busy_;              // scopes moved by this run
};

}  // namespace

std::uint64_t inline_constant_branches(pass_context& context) { return inliner(context).run(); }

void find_dead_branches(pass_context& context) {
    const auto held = context.index();
    const graph_index& index = *held;
    for (const auto n : context.model.nodes.ids()) {
        if (!context.model.node_live(n)) continue;
        if (const auto d = decide(context.model, index, context.reader, n)) {
            auto f = describe(context.model, n, *d);
            f.nodes += 1;
            context.findings.add(std::move(f));
        }
    }
}

pass_entry constant_if_pass() {
    return {.name = "const-if",
            .summary = "If with a constant condition -> the branch taken; Loop that never runs",
            .run = inline_constant_branches,
            .analyze = find_dead_branches,
            .headline = {.kind = finding_kind::dead_branch, .done = "replaced", .would = "would replace", .noun = "If/Loop"}};
}

}  // namespace onnxstream::passes
