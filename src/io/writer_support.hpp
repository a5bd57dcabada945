// What the writers share (private to src/io): whole writes, kernel copies, early
// writeback, range checks and the incremental hashes of one stream check. The calls to
// the operating system (pwrite, copy_file_range, sync_file_range; WriteFile on Windows)
// sit in writer_os_posix.hpp and writer_os_win.hpp.
#pragma once

#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/plan_writer.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace onnxstream::io::detail {

/// Copies up to this size travel with the metadata around them (staged in a buffer);
/// larger ones are copied on their own.
inline constexpr std::uint64_t small_copy = 64 * 1024;
/// One copy_file_range task: large enough to amortize the call, small enough that
/// cancellation and progress stay responsive and several lanes share a tensor.
inline constexpr std::uint64_t kernel_copy_chunk = 16ULL << 20;
/// After this many bytes written, writeback of the output is started (see start_writeback).
inline constexpr std::uint64_t writeback_interval = 32ULL << 20;

// Small copies from a source that is not mapped are served from one window read ahead.
using io::read_ahead_window;
static_assert(read_ahead_window::window_bytes >= small_copy);

[[nodiscard]] inline failure interrupted() { return failure(error_code::interrupted, "interrupted; no output was written"); }

[[nodiscard]] inline failure source_shrank(const source_file& source, std::uint64_t offset) {
    return failure(error_code::truncated_data,
                   source.path().string() + " ended at byte " + std::to_string(offset) + " while being copied",
                   "the file changed while onnxstream was reading it; do not modify inputs during a run");
}

[[nodiscard]] inline failure write_failed(int os_error) {
    return failure(os_failure("cannot write the output", {os_error, std::generic_category()}));
}

[[nodiscard]] inline failure read_failed(const source_file& source, int os_error) {
    return failure(os_failure("cannot read " + source.path().string(), {os_error, std::generic_category()}));
}

[[nodiscard]] inline bool cancelled(const writer_options& options) noexcept {
    return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

struct kernel_copy_result {
    std::uint64_t copied = 0;
    int os_error = 0;            // errno of the failure that stopped it, 0 if none
    bool end_of_source = false;  // the source ended before `length` bytes
    bool cancelled = false;
};

}  // namespace onnxstream::io::detail

#if defined(_WIN32)
#include "writer_os_win.hpp"
#else
#include "writer_os_posix.hpp"
#endif

namespace onnxstream::io::detail {

/// The size of each source now, or the size it had when opened if that is smaller. A
/// file truncated since it was opened then fails with `truncated_data` before a copy
/// reads its mapping past the end (which would be a SIGBUS). A file that shrinks during
/// the run is caught by the read or kernel copy that meets its end; only its mapping,
/// used for pieces up to `small_copy`, is then unprotected.
[[nodiscard]] inline std::vector<std::uint64_t> current_sizes(const write_job& job) {
    std::vector<std::uint64_t> sizes;
    sizes.reserve(job.sources.size());
    for (const source_file* source : job.sources) {
        std::uint64_t size = source != nullptr ? source->size() : 0;
        if (source != nullptr)
            if (const auto now = size_now(source->descriptor())) size = std::min(size, *now);
        sizes.push_back(size);
    }
    return sizes;
}

/// The source of a copy, after checking that the copy lies inside it (`sizes` from
/// current_sizes).
[[nodiscard]] inline result<const source_file*> copy_source(const write_job& job, std::span<const std::uint64_t> sizes,
                                                            const write_operation& op) {
    if (op.source >= job.sources.size() || job.sources[op.source] == nullptr)
        return failure(error_code::io, "a copy names an unknown source");
    const source_file* source = job.sources[op.source];
    const std::uint64_t size = sizes[op.source];
    if (op.length > size || op.input_offset > size - op.length) return source_shrank(*source, size);
    return source;
}

/// Validates a copy's check: it exists and no other copy carries it (the planner gives
/// each check to one copy; `used`, sized like job.checks, remembers which were seen).
[[nodiscard]] inline result<void> claim_check(const write_job& job, const write_operation& op, std::vector<bool>& used) {
    if (op.check == no_check) return {};
    if (op.check >= job.checks.size()) return failure(error_code::io, "a copy names an unknown check");
    if (used[op.check]) return failure(error_code::io, "the plan attaches one check to two copies");
    used[op.check] = true;
    return {};
}

[[nodiscard]] inline result<void> check_emit(std::span<const std::byte> pool, const write_operation& op) {
    if (op.length > pool.size() || op.input_offset > pool.size() - op.length)
        return failure(error_code::io, "an emit lies outside the plan's byte pool");
    return {};
}

/// The operations of a job in order, window after window (write_job::more). An emit's
/// bytes are in pool() until the next call of next().
class operation_cursor {
public:
    explicit operation_cursor(const write_job& job) : job_(job), operations_(job.operations), pool_(job.pool) {}

    /// The next operation, or null at the end of the plan.
    [[nodiscard]] result<const write_operation*> next() {
        while (index_ == operations_.size()) {
            if (!job_.more) return nullptr;
            index_ = 0;
            operations_ = {};
            ONNXSTREAM_ASSIGN(const bool more, job_.more(operations_, pool_));
            if (!more) {
                operations_ = {};
                return nullptr;
            }
        }
        return &operations_[index_++];
    }
    [[nodiscard]] std::span<const std::byte> pool() const noexcept { return pool_; }

private:
    const write_job& job_;
    std::span<const write_operation> operations_;
    std::span<const std::byte> pool_;
    std::size_t index_ = 0;
};

/// The hashes one stream check asks for, fed in order.
class check_hashes {
public:
    explicit check_hashes(const stream_check& check) {
        if (check.expected_sha1.has_value() || check.compute_sha1) sha1_.emplace();
        if (check.compute_xxh3) xxh3_.emplace();
    }
    void update(std::span<const std::byte> bytes) {
        if (sha1_) sha1_->update(bytes);
        if (xxh3_) xxh3_->update(bytes);
    }
    /// The outcome; the hashes must not be fed afterwards.
    [[nodiscard]] check_outcome finish(const stream_check& check) {
        check_outcome outcome;
        if (sha1_) {
            outcome.sha1 = sha1_->finish();
            if (check.expected_sha1) outcome.sha1_matches = *outcome.sha1 == *check.expected_sha1;
        }
        if (xxh3_) outcome.xxh3 = xxh3_->digest();
        return outcome;
    }

private:
    std::optional<sha1_hasher> sha1_;
    std::optional<xxh3_hasher> xxh3_;
};

/// Drops the page-table entries of the pieces of mapped sources a writer copied, so the
/// process does not keep file pages resident (peak RSS must not grow with weight bytes,
/// nor with a model's size). A piece of two pages or more goes at once; smaller ones
/// share their pages with their neighbours, so each source's pages go behind its copies,
/// which mostly come in file order (a model's unchanged messages, a million of them).
class mapped_release {
public:
    explicit mapped_release(std::size_t sources) : behind_(sources) {}

    void copied(const source_file& source, std::uint32_t index, std::uint64_t offset, std::uint64_t length) noexcept {
        if (length >= 2 * 4096) {
            source.mapping().release(offset, length);
            return;
        }
        if (index >= behind_.size()) return;
        auto& behind = behind_[index];
        if (!behind) behind.emplace(source.mapping());
        behind->reached(offset);
    }

private:
    std::vector<std::optional<release_behind>> behind_;
};

}  // namespace onnxstream::io::detail
