// The two entry points of a pass written as a node rewriter: a class built from the
// pass_context with `run()`, a `changes` count and a `report_only` switch (analyze finds
// what it would change and changes nothing). Internal to src/passes.
#pragma once

#include <onnxstream/passes/pass_context.hpp>

#include <cstdint>

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

}  // namespace onnxstream::passes
