// Hashing byte ranges of open files on a few threads, each with one fixed buffer: what
// verify (SHA-1 of checksummed tensors) and diff (XXH3 of every tensor) share. Ranges are
// taken in the order given, so sorting them by file and offset reads each file forward.
// Private to the ops layer.
#pragma once

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace onnxstream::ops {

enum class range_hash : std::uint8_t { sha1, xxh3 };

struct hashed_range {
    const io::source_file* file = nullptr;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::string_view label;  // the tensor these bytes are (the progress event's `tensor`)
    // Filled in by hash_ranges:
    std::optional<io::sha1_digest> sha1;
    std::optional<std::uint64_t> xxh3;
    std::shared_ptr<const error> failed;  // the range could not be read (a pointer: diff holds millions of ranges)
};

struct range_hash_options {
    unsigned threads = 1;
    std::size_t buffer_size = 1U << 20;
    const std::atomic<bool>* cancel = nullptr;
    // Called under a lock, from any worker: bytes just hashed, and the label of their range.
    std::function<void(std::uint64_t bytes, std::string_view label)> on_bytes;
};

/// Hashes every range. A read failure is recorded in its range; the call fails only
/// with `interrupted`. Returns the number of bytes read.
[[nodiscard]] result<std::uint64_t> hash_ranges(std::span<hashed_range> ranges, range_hash kind,
                                                const range_hash_options& options);

/// range_hash_options from `Options` (`threads`, 0: the number of cores; `buffer_size`,
/// `cancel` and `on_progress`), reporting progress into `event`: its `done` grows, its
/// tensor is the label of the range hashed last. `event` must outlive the hashing.
template <class Options>
[[nodiscard]] range_hash_options hashing_options(const Options& options, progress_event& event) {
    range_hash_options hashing;
    hashing.threads = effective_threads(options.threads);
    hashing.buffer_size = options.buffer_size;
    hashing.cancel = options.cancel;
    if (options.on_progress) {
        options.on_progress(event);
        hashing.on_bytes = [&options, &event](std::uint64_t bytes, std::string_view label) {
            event.done += bytes;
            if (label != event.tensor) event.tensor = label;
            options.on_progress(event);
        };
    }
    return hashing;
}

/// hash_ranges as one progress stage named `stage`, from 0 to the ranges' total length;
/// each event names the label of the range whose bytes were hashed last.
template <class Options>
[[nodiscard]] result<std::uint64_t> hash_ranges(std::span<hashed_range> ranges, range_hash kind, const Options& options,
                                                std::string stage) {
    std::uint64_t total = 0;
    for (const auto& range : ranges) total += range.length;
    progress_event event{std::move(stage), 0, total, {}, {}};
    return hash_ranges(ranges, kind, hashing_options(options, event));
}

}  // namespace onnxstream::ops
