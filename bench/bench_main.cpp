#include "bench_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace bench_support {

void reset_peak_rss() {
    if (std::FILE* refs = std::fopen("/proc/self/clear_refs", "w")) {
        std::fputs("5", refs);
        std::fclose(refs);
    }
}

void report_peak_rss(benchmark::State& state) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            const double kib = std::strtod(line.c_str() + 6, nullptr);
            state.counters["peak_rss_MiB"] = kib / 1024.0;
            return;
        }
    }
}

std::vector<std::byte> synthetic_model(std::uint64_t nodes, std::uint64_t tensors, std::uint64_t tensor_bytes) {
    encoder graph;
    graph.text_field(2, "synthetic");
    std::string previous = "x";
    static constexpr std::string_view ops[] = {"Relu", "Neg", "Identity", "Abs"};
    for (std::uint64_t i = 0; i < nodes; ++i) {
        const auto block = "/block_" + std::to_string(i / 16) + "/layer_" + std::to_string(i % 16) + "/";
        const std::string op(ops[i % 4]);
        const auto output = block + op + "_output_0";
        encoder node;
        node.text_field(1, previous).text_field(2, output).text_field(3, block + op).text_field(4, op);
        graph.message_field(1, node);
        previous = output;
    }
    const std::vector<std::byte> payload(tensor_bytes, std::byte{0x3f});
    for (std::uint64_t t = 0; t < tensors; ++t) {
        encoder tensor;
        tensor.varint_field(1, tensor_bytes / 4).varint_field(2, 1).text_field(8, "w" + std::to_string(t)).bytes_field(9, payload);
        graph.message_field(5, tensor);
    }
    encoder opset;
    opset.text_field(1, "").varint_field(2, 13);
    encoder model;
    model.varint_field(1, 7).text_field(2, "onnxstream-bench").message_field(8, opset).message_field(7, graph);
    return model.take();
}

const std::vector<std::byte>& metadata_heavy_model() {
    static const std::vector<std::byte> model = [] {
        if (const char* path = std::getenv("ONNXSTREAM_BENCH_MODEL")) {
            std::ifstream in(path, std::ios::binary);
            std::vector<char> text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            std::vector<std::byte> bytes(text.size());
            std::memcpy(bytes.data(), text.data(), text.size());
            if (!bytes.empty()) return bytes;
            std::fprintf(stderr, "ONNXSTREAM_BENCH_MODEL=%s cannot be read; using the synthetic graph\n", path);
        }
        return synthetic_model(200'000, 16, 4096);
    }();
    return model;
}

}  // namespace bench_support

BENCHMARK_MAIN();
