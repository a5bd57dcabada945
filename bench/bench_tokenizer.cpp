// The tokenizer and the message tree over a metadata-heavy model (a 200k-node graph, or
// ONNXSTREAM_BENCH_MODEL): bytes per second is the figure that matters, since weights
// are never looked at.
#include "bench_support.hpp"

#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/proto/tokenizer.hpp>

namespace {

// The tokenizer alone over every byte of the metadata: the model, its graph, and each
// node and initializer of the graph (their fields are not descended into further).
void tokenize_graph(benchmark::State& state) {
    bench_support::reset_peak_rss();
    const auto& model = bench_support::metadata_heavy_model();
    using onnxstream::proto::field_token;
    std::vector<field_token> top;
    std::vector<field_token> graph;
    std::vector<field_token> inner;
    std::uint64_t tokens = 0;
    auto tokenize = [&](std::uint64_t begin, std::uint64_t end, std::vector<field_token>& out) {
        out.clear();
        auto done = onnxstream::proto::tokenize(model, begin, end, out);
        if (!done) state.SkipWithError(done.error().message.c_str());
        tokens += out.size();
        return static_cast<bool>(done);
    };
    for (auto _ : state) {
        tokens = 0;
        if (!tokenize(0, model.size(), top)) break;
        for (const auto& g : top) {
            if (g.number != 7) continue;  // ModelProto.graph
            if (!tokenize(g.payload_offset, g.end_offset(), graph)) break;
            for (const auto& field : graph)
                if (field.number == 1 || field.number == 5) tokenize(field.payload_offset, field.end_offset(), inner);
        }
        benchmark::DoNotOptimize(tokens);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(model.size()));
    state.counters["tokens"] = static_cast<double>(tokens);
    bench_support::report_peak_rss(state);
}
BENCHMARK(tokenize_graph)->Unit(benchmark::kMillisecond);

// Every message onnxstream descends into: what inspect, merge and split do first.
void message_tree_parse(benchmark::State& state) {
    bench_support::reset_peak_rss();
    const auto& model = bench_support::metadata_heavy_model();
    std::uint64_t fields = 0;
    for (auto _ : state) {
        auto tree = onnxstream::onnx::message_tree::parse(model);
        if (!tree) {
            state.SkipWithError(tree.error().message.c_str());
            break;
        }
        fields = tree->all_fields().size();
        benchmark::DoNotOptimize(fields);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(model.size()));
    state.counters["fields"] = static_cast<double>(fields);
    state.counters["model_MB"] = static_cast<double>(model.size()) / 1e6;
    bench_support::report_peak_rss(state);
}
BENCHMARK(message_tree_parse)->Unit(benchmark::kMillisecond);

}  // namespace
