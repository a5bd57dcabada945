// The two entry points of a pass written as a node rewriter: a class built from the
// pass_context with `run()`, a `changes` count and a `report_only` switch (analyze finds
// what it would change and changes nothing), and what such rewriters share. Internal to
// src/passes.
#pragma once

#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/value_shapes.hpp>
#include <onnxstream/passes/pass_context.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace onnxstream::passes {

/// optimize: rewrites, then drops what the rewrite removed; returns the changes made.
template <class Rewriter>
std::uint64_t run_rewriter(pass_context& context) {
    Rewriter rewriter(context);
    rewriter.run();
    context.model.compact();
    return rewriter.changes;
}

/// analyze: the same search on the graph given, reporting only.
template <class Rewriter>
void analyze_rewriter(pass_context& context) {
    Rewriter rewriter(context);
    rewriter.report_only = true;
    rewriter.run();
}

/// What a rewriter that reads static shapes starts from: the model, its index and the
/// shapes of its values as they are when the run begins.
struct shape_rewriter {
    pass_context& context;
    graph_model& model;
    const std::shared_ptr<const graph_index> held_index;  // the run's snapshot (pass_context::index)
    const graph_index& index;
    const std::shared_ptr<const shape_table> held_shapes;  // the run's, of that index (pass_context::shapes)
    const shape_table& shapes;
    bool report_only = false;
    std::uint64_t changes = 0;

    explicit shape_rewriter(pass_context& c)
        : context(c),
          model(c.model),
          held_index(c.index()),
          index(*held_index),
          held_shapes(c.shapes(index)),
          shapes(*held_shapes) {}
};

/// `rewriter.visit(n)` for every live node (graph_model::for_each_live_node), for a pass
/// that turns nodes into new initializers: nothing when the model cannot take them.
template <class Rewriter>
void visit_live_nodes_if_initializers_allowed(Rewriter& rewriter) {
    if (!can_add_initializers(rewriter.model)) return;
    rewriter.model.for_each_live_node([&rewriter](node_id n) { rewriter.visit(n); });
}

}  // namespace onnxstream::passes
