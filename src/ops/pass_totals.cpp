// What each optimize pass changed, summed (ops/optimize.hpp): the numbers a front end
// shows per pass, whatever it renders them as.
#include <onnxstream/ops/optimize.hpp>

namespace onnxstream::ops {

using passes::finding_kind;

pass_totals totals(const pass_result& pass) {
    pass_totals s;
    pass.findings.for_each([&s](const finding_list::view& f) {
        switch (f.kind) {
            case finding_kind::unused_initializer:
            case finding_kind::duplicate_initializer:
                ++s.initializers;
                s.bytes += f.bytes;
                break;
            case finding_kind::removed_value_info: s.value_info += f.count; break;
            case finding_kind::removed_function:
                ++s.functions;
                s.nodes += f.nodes;
                break;
            case finding_kind::folded_batchnorm:
                ++s.folded;
                s.nodes += f.nodes;
                break;
            case finding_kind::dead_branch:
                ++s.branches;
                s.nodes += f.nodes;
                s.bytes += f.bytes;
                break;
            case finding_kind::skipped: ++s.skipped; break;
            default: s.nodes += f.nodes; break;
        }
    });
    return s;
}

}  // namespace onnxstream::ops
