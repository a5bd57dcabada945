#include <onnxstream/passes/pass_driver.hpp>

#include <optional>

namespace onnxstream::passes {

fixed_point_result run_to_fixed_point(graph_model& model, const tensor_reader& reader, std::span<const pass_entry* const> entries,
                                      const std::function<finding_sink(std::size_t)>& sink_of, std::vector<error>& warnings,
                                      const fixed_point_options& options) {
    fixed_point_result result;
    result.changes.assign(entries.size(), 0);
    // One index for every pass that finds the model as the last one left it.
    std::optional<index_cache> own;
    auto* indexes = options.indexes != nullptr ? options.indexes : &own.emplace(model);
    for (std::uint32_t round = 0; round < options.max_rounds; ++round) {
        std::uint64_t changes = 0;
        for (std::size_t p = 0; p < entries.size(); ++p) {
            if (options.cancel != nullptr && options.cancel->load()) {
                result.cancelled = true;
                return result;
            }
            if (options.on_pass) options.on_pass(round, p);
            pass_context context{model, reader, sink_of(p), warnings, options.limits, options.record, indexes};
            const auto done = entries[p]->run(context);
            result.changes[p] += done;
            changes += done;
        }
        if (changes == 0) break;
        result.rounds = round + 1;
    }
    return result;
}

}  // namespace onnxstream::passes
