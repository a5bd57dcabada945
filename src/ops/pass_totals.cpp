// What each optimize pass changed, summed (ops/optimize.hpp): the numbers a front end
// shows per pass, whatever it renders them as.
#include <onnxstream/ops/optimize.hpp>

namespace onnxstream::ops {

using passes::finding_kind;

namespace {

// Adds `findings` findings of `kind` with these totals.
void add(pass_totals& s, finding_kind kind, std::uint64_t findings, const finding_totals& t) {
    switch (kind) {
        case finding_kind::unused_initializer:
        case finding_kind::duplicate_initializer:
            s.initializers += findings;
            s.bytes += t.bytes;
            break;
        case finding_kind::removed_value_info: s.value_info += t.count; break;
        case finding_kind::removed_function:
            s.functions += findings;
            s.nodes += t.nodes;
            break;
        case finding_kind::folded_batchnorm:
            s.folded += findings;
            s.nodes += t.nodes;
            break;
        case finding_kind::dead_branch:
            s.branches += findings;
            s.nodes += t.nodes;
            s.bytes += t.bytes;
            break;
        case finding_kind::skipped: s.skipped += findings; break;
        default: s.nodes += t.nodes; break;
    }
}

}  // namespace

pass_totals totals(const pass_result& pass) {
    pass_totals s;
    pass.findings.for_each([&s](const finding_list::view& f) { add(s, f.kind, 1, {f.count, f.nodes, f.bytes}); });
    for (std::size_t k = 0; k <= static_cast<std::size_t>(finding_kind::skipped); ++k) {
        const auto kind = static_cast<finding_kind>(k);
        const auto counted = pass.findings.counted(kind);
        if (counted.findings > 0) add(s, kind, counted.findings, counted.totals);
    }
    return s;
}

}  // namespace onnxstream::ops
