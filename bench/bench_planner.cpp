// The planner: sizes bottom-up and the operation list, for a rewrite that replaces the
// raw_data of every one of N initializers by a slice of a data file (what merge plans,
// the other way round), in a graph of 200k nodes.
#include "bench_support.hpp"

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/plan/planner.hpp>

namespace {

using onnxstream::onnx::message_kind;

void plan_rewrite(benchmark::State& state) {
    bench_support::reset_peak_rss();
    const auto tensors = static_cast<std::uint64_t>(state.range(0));
    const auto model = bench_support::synthetic_model(200'000, tensors, 64);
    auto tree = onnxstream::onnx::message_tree::parse(model);
    if (!tree) {
        state.SkipWithError(tree.error().message.c_str());
        return;
    }
    onnxstream::onnx::tree_edits edits;
    const auto raw_data = onnxstream::onnx::number(onnxstream::onnx::tensor_field::raw_data);
    std::uint64_t offset = 0;
    for (std::uint32_t m = 0; m < tree->messages().size(); ++m) {
        if (tree->at(m).kind != message_kind::tensor) continue;
        const auto& message = tree->at(m);
        for (std::uint32_t f = 0; f < message.field_count; ++f) {
            if (tree->field(message.first_field + f).number() != raw_data) continue;
            edits.drop(message.first_field + f);
            edits.insert(m, f, edits.slice(raw_data, 1, offset, 1U << 20));
            offset += 1U << 20;
        }
    }
    std::uint64_t operations = 0;
    for (auto _ : state) {
        auto plan = onnxstream::plan::plan_rewrite(*tree, edits, {0, ~0ULL});
        if (!plan) {
            state.SkipWithError(plan.error().message.c_str());
            break;
        }
        operations = plan->operations().size();
        benchmark::DoNotOptimize(operations);
    }
    state.counters["operations"] = static_cast<double>(operations);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(tensors));
    bench_support::report_peak_rss(state);
}
BENCHMARK(plan_rewrite)->Arg(1000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
