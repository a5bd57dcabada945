// The varint codec: encoding and decoding values of every length, as in tags (1 byte),
// lengths (1-4 bytes) and 64-bit ints (up to 10).
#include "bench_support.hpp"

#include <onnxstream/proto/varint.hpp>

#include <random>

namespace {

std::vector<std::uint64_t> values(std::size_t count) {
    std::mt19937_64 random(42);
    std::vector<std::uint64_t> out(count);
    for (auto& v : out) v = random() >> (random() % 64);  // lengths spread over 1..10 bytes
    return out;
}

void varint_encode(benchmark::State& state) {
    bench_support::reset_peak_rss();
    const auto input = values(4096);
    std::uint64_t bytes = 0;
    for (auto _ : state) {
        for (const auto v : input) {
            const auto encoded = onnxstream::proto::encode_varint(v);
            benchmark::DoNotOptimize(encoded);
            bytes += encoded.size;
        }
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 4096);
    bench_support::report_peak_rss(state);
}
BENCHMARK(varint_encode);

void varint_decode(benchmark::State& state) {
    bench_support::reset_peak_rss();
    std::vector<std::byte> buffer;
    for (const auto v : values(4096)) {
        const auto encoded = onnxstream::proto::encode_varint(v);
        buffer.insert(buffer.end(), encoded.view().begin(), encoded.view().end());
    }
    for (auto _ : state) {
        std::span<const std::byte> rest(buffer);
        std::uint64_t sum = 0;
        while (!rest.empty()) {
            const auto decoded = onnxstream::proto::decode_varint(rest);
            sum += decoded->value;
            rest = rest.subspan(decoded->size);
        }
        benchmark::DoNotOptimize(sum);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(buffer.size()));
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 4096);
    bench_support::report_peak_rss(state);
}
BENCHMARK(varint_decode);

}  // namespace
