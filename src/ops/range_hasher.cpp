#include "range_hasher.hpp"

#include <onnxstream/io/chunked_read.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace onnxstream::ops {

result<std::uint64_t> hash_ranges(std::span<hashed_range> ranges, range_hash kind, const range_hash_options& options) {
    if (ranges.empty()) return std::uint64_t{0};
    const auto workers = static_cast<unsigned>(std::min<std::size_t>(std::max(options.threads, 1U), ranges.size()));
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stopped{false};
    std::mutex lock;
    std::uint64_t total = 0;

    auto cancelled = [&] {
        if (stopped.load(std::memory_order_relaxed)) return true;
        if (options.cancel == nullptr || !options.cancel->load(std::memory_order_relaxed)) return false;
        stopped.store(true);
        return true;
    };
    auto work = [&] {
        std::vector<std::byte> buffer(std::max<std::size_t>(options.buffer_size, 4096));
        for (std::size_t r = next.fetch_add(1); r < ranges.size(); r = next.fetch_add(1)) {
            auto& range = ranges[r];
            std::optional<io::sha1_hasher> sha1;
            std::optional<io::xxh3_hasher> xxh3;
            if (kind == range_hash::sha1) sha1.emplace();
            else xxh3.emplace();
            auto read = io::for_each_chunk(
                *range.file, range.offset, range.length,
                [&](std::span<const std::byte> view) {
                    if (cancelled()) return false;
                    if (sha1) sha1->update(view);
                    else xxh3->update(view);
                    const std::lock_guard guard(lock);
                    total += view.size();
                    if (options.on_bytes) options.on_bytes(view.size(), range.label);
                    return true;
                },
                std::span(buffer));
            if (!read) {
                range.failed = std::make_shared<const error>(std::move(read).error());
                continue;
            }
            if (cancelled()) return;
            if (sha1) range.sha1 = sha1->finish();
            else range.xxh3 = xxh3->digest();
        }
    };
    // No exception may leave a thread: one (out of memory) stops every worker and
    // becomes an error value.
    std::atomic<bool> threw{false};
    auto guarded = [&]() noexcept {
        try {
            work();
        } catch (...) {
            threw.store(true);
            stopped.store(true);
        }
    };
    std::vector<std::thread> threads;
    try {
        threads.reserve(workers - 1);
        for (unsigned w = 1; w < workers; ++w) threads.emplace_back(guarded);
    } catch (const std::exception&) {
        // Fewer threads than asked for: those there are share the work.
    }
    guarded();
    for (auto& t : threads) t.join();
    if (threw.load())
        return failure(error_code::io, "out of memory while hashing", "free memory or use fewer {0}",
                       {{remedy::fewer_threads, {}}});
    if (stopped.load()) return failure(error_code::interrupted, "interrupted; nothing was changed");
    return total;
}

}  // namespace onnxstream::ops
