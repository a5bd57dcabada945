#include <onnxstream/passes/dead_code.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace onnxstream::passes {

liveness compute_liveness(const graph_model& model, const graph_index& index) {
    liveness live;
    live.node.assign(model.nodes.size(), false);
    live.function.assign(model.functions.size(), false);
    indexed_vector<value_id, bool> seen(index.size(), false);
    std::vector<value_id> pending;
    auto need = [&](value_id v) {
        if (v != none && !seen[v]) {
            seen[v] = true;
            pending.push_back(v);
        }
    };
    auto need_outputs_of = [&](scope_id s) {
        for (std::size_t k = 0; k < model.scopes[s].outputs.size(); ++k) need(index.graph_output(s, k));
    };
    need_outputs_of(main_scope);
    for (const auto v : index.value_ids())
        if (index.at(v).pinned) need(v);
    while (!pending.empty()) {
        const auto v = pending.back();
        pending.pop_back();
        const auto n = index.producer(v);
        if (n == none || live.node[n]) continue;
        live.node[n] = true;
        const auto& nd = model.nodes[n];
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) need(index.input(n, k));
        for (const auto s : nd.subgraphs()) need_outputs_of(s);
        for (const auto f : model.functions.ids()) {
            const auto& fn = model.functions[f];
            if (live.function[f] || fn.removed || fn.name != nd.op_type() || fn.domain != nd.domain() ||
                fn.overload != nd.overload())
                continue;
            live.function[f] = true;
            need_outputs_of(fn.scope);
        }
    }
    return live;
}

std::vector<component> isolated_components(const graph_model& model, const graph_index& index, const liveness& live) {
    indexed_vector<node_id, node_id> parent(model.nodes.size());
    for (const auto n : model.nodes.ids()) parent[n] = n;
    auto find = [&](node_id x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    };
    indexed_vector<node_id, bool> touches_interface(model.nodes.size(), false);
    auto is_dead = [&](node_id n) { return model.node_live(n) && !live.node[n]; };
    for (const auto n : model.nodes.ids()) {
        if (!is_dead(n)) continue;
        for (std::size_t k = 0; k < model.nodes[n].inputs.size(); ++k) {
            const auto v = index.input(n, k);
            if (v == none) continue;
            const auto& val = index.at(v);
            if (val.kind == value_kind::graph_input || val.overridable) touches_interface[n] = true;
            const auto p = index.producer(v);
            if (p == none) continue;
            if (live.node[p]) touches_interface[n] = true;
            else parent[find(n)] = find(p);
        }
    }
    std::map<node_id, component> groups;
    std::map<node_id, bool> connected;
    for (const auto n : model.nodes.ids()) {
        if (!is_dead(n)) continue;
        const auto root = find(n);
        auto& c = groups[root];
        c.scope = model.nodes[n].scope;
        c.nodes.push_back(n);
        connected[root] = connected[root] || touches_interface[n];
    }
    std::vector<component> out;
    for (auto& [root, c] : groups)
        if (!connected[root]) out.push_back(std::move(c));
    return out;
}

std::uint64_t drop_stale_value_info(graph_model& model) {
    // Some exporters describe a subgraph's values in the main graph: a value_info goes only
    // when its name is defined nowhere any more. A bit per name for the names a graph_index
    // would define (without building one: this runs after every dce).
    std::vector<bool> defined(model.names.size(), false);
    const auto define = [&defined](name_id name) { defined[static_cast<std::uint32_t>(name)] = true; };
    for (const auto s : model.scopes.ids()) {
        const auto& sc = model.scopes[s];
        if (sc.removed) continue;
        for (const auto name : sc.inputs)
            if (name != empty_name) define(name);
        for (const auto t : sc.initializers)
            if (!model.tensors[t].removed) define(model.tensors[t].name);
        for (const auto name : sc.sparse_initializers) define(name);
    }
    for (const auto n : model.nodes.ids()) {
        if (!model.node_live(n)) continue;
        for (const auto name : model.nodes[n].outputs)
            if (name != empty_name) define(name);
    }
    std::uint64_t dropped = 0;
    for (const auto i : model.value_infos.ids()) {
        const auto& v = model.value_infos[i];
        if (v.removed || model.scopes[v.scope].removed || defined[static_cast<std::uint32_t>(v.name)] ||
            model.pinned.contains(v.name))
            continue;
        model.remove_value_info(i);
        ++dropped;
    }
    return dropped;
}

namespace {

// dce; an initializer `quiet` says is removed without a finding (analyze reports the ones
// nothing read before dce itself). Findings are made only when the context records them.
std::uint64_t run_dead_code(pass_context& context, const std::function<bool(tensor_id)>& quiet) {
    auto& model = context.model;
    const bool record = context.record;
    std::uint64_t changes = 0;
    {
        // The index goes before the findings are made (there may be a million): the first
        // removal lets go of the shared one, which that removal makes stale anyway.
        const auto live = [&context, &model] {
            const auto index = context.index();
            return compute_liveness(model, *index);
        }();
        // Functions first: the nodes of a function nothing calls go with it, not one by one.
        for (const auto i : model.functions.ids()) {
            const auto& fn = model.functions[i];
            if (fn.removed || live.function[i]) continue;
            if (changes == 0) context.release_index();
            if (record) {
                finding f;
                f.kind = finding_kind::removed_function;
                f.scope = model.scope_path(fn.scope);
                f.names.push_back((fn.domain.empty() ? std::string() : fn.domain + ".") + fn.name);
                for (const auto n : model.scopes[fn.scope].nodes)
                    if (!model.nodes[n].removed) f.nodes += nodes_within(model, n);
                context.findings.add(std::move(f));
            }
            model.remove_function(i);
            ++changes;
        }
        for (const auto n : model.nodes.ids()) {
            if (!model.node_live(n) || live.node[n]) continue;
            if (changes == 0) context.release_index();
            if (record) {
                finding f;
                f.kind = finding_kind::dead_node;
                f.scope = model.scope_path(model.nodes[n].scope);
                f.op_type = model.nodes[n].op_type();
                f.names.push_back(model.node_label(n));
                f.nodes = nodes_within(model, n);
                context.findings.add(std::move(f));
            }
            model.remove_node(n);
            ++changes;
        }
    }
    {
        // Initializers, judged on what is left. The index goes before the findings are made
        // (a million unused initializers make a million), and the list of findings is told
        // their size first.
        std::vector<tensor_id> unused;
        {
            const auto held = context.index();
            const graph_index& index = *held;
            for (const auto t : model.tensors.ids()) {
                if (!model.tensor_live(t)) continue;
                const auto v = index.resolve(model.tensors[t].scope, model.tensors[t].name);
                if (v != none) {
                    const auto& val = index.at(v);
                    // A second initializer of the same name is left alone: it is not ours to judge.
                    if (val.tensor != t || !index.uses(v).empty() || val.pinned || val.overridable) continue;
                }
                unused.push_back(t);
            }
        }
        if (!unused.empty()) context.release_index();
        const auto reported = [&](tensor_id t) { return record && !(quiet && quiet(t)); };
        std::uint64_t count = 0;
        std::uint64_t bytes = 0;
        for (const auto t : unused) {
            if (!reported(t)) continue;
            ++count;
            bytes += model.text(model.tensors[t].name).size() + 16;
        }
        if (count > 0) context.findings.reserve(count, bytes / count + 1);
        file_walk walk(model);
        for (const auto t : unused) {
            walk.reached(t);
            if (reported(t)) {
                finding f;
                f.kind = finding_kind::unused_initializer;
                f.scope = model.scope_path(model.tensors[t].scope);
                f.names.emplace_back(model.text(model.tensors[t].name));
                f.bytes = model.tensor_bytes(t);
                context.findings.add(std::move(f));
            }
            model.remove_tensor(t);
            ++changes;
        }
    }
    model.compact();
    if (changes == 0) return 0;
    if (const auto dropped = drop_stale_value_info(model); dropped > 0) {
        if (record) {
            finding f;
            f.kind = finding_kind::removed_value_info;
            f.scope = "graph";
            f.count = dropped;
            context.findings.add(std::move(f));
        }
        changes += dropped;
    }
    model.compact();
    return changes;
}

}  // namespace

std::uint64_t eliminate_dead_code(pass_context& context) { return run_dead_code(context, {}); }

// analyze: dead nodes, unused functions, and the initializers only dead nodes read (an
// initializer nothing reads at all is a finding of analyze itself, not of this pass).
void analyze_dead_code(pass_context& context) {
    const auto& model = context.model;
    // An initializer is told apart by its scope's path and its name, as the findings name
    // it: (path number << 32 | name), sorted. Scopes are few; initializers may be millions.
    std::map<std::string, std::uint32_t> path_numbers;
    indexed_vector<scope_id, std::uint32_t> path_of(model.scopes.size(), 0);
    for (const auto s : model.scopes.ids())
        path_of[s] = path_numbers.emplace(model.scope_path(s), static_cast<std::uint32_t>(path_numbers.size())).first->second;
    const auto key = [&](scope_id s, name_id name) {
        return (static_cast<std::uint64_t>(path_of[s]) << 32) | static_cast<std::uint32_t>(name);
    };
    std::vector<std::uint64_t> unused_before;
    {
        const auto held = context.index();
        const graph_index& index = *held;
        for (const auto v : index.value_ids()) {
            const auto& val = index.at(v);
            if (val.kind == value_kind::initializer && index.uses(v).empty() && !val.pinned && !val.overridable)
                unused_before.push_back(key(val.scope, val.name));
        }
    }
    std::sort(unused_before.begin(), unused_before.end());
    const auto quiet = [&](tensor_id t) {
        return std::binary_search(unused_before.begin(), unused_before.end(), key(model.tensors[t].scope, model.tensors[t].name));
    };
    std::vector<finding> removed;
    pass_context inner{context.model, context.reader, removed, context.warnings, context.limits, context.record, context.indexes};
    (void)run_dead_code(inner, quiet);
    for (auto& f : removed) {
        if (f.kind == finding_kind::unused_initializer) f.detail = "only dead nodes read it";
        if (f.kind != finding_kind::removed_value_info) context.findings.add(std::move(f));
    }
}

pass_entry dead_code_pass() {
    return {.name = "dce",
            .summary = "dead nodes, unused initializers, value_info and local functions",
            .run = eliminate_dead_code,
            .analyze = analyze_dead_code};
}

}  // namespace onnxstream::passes
