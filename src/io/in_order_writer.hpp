// What the portable and the overlapped writer share (private to src/io): one thread
// executing a plan's operations in order. The state of a run, the loop over the
// operations (cancellation checked between them), and what every operation starts with:
// an emit is staged, a large or hashed convert runs inline once the writes before it are
// out, a copy finds its source and claims its check, and a small unhashed copy or convert
// is staged from the source's mapping (or a read). How bytes are staged and how larger
// copies travel is each writer's.
#pragma once

#include <onnxstream/io/plan_writer.hpp>

#include "convert_support.hpp"
#include "writer_support.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace onnxstream::io::detail {

class in_order_writer : public plan_writer {
protected:
    /// Resets the state of a run for `job`.
    void start_run(const write_job& job, const writer_options& options) {
        job_ = &job;
        options_ = &options;
        report_ = {};
        report_.backend = name();
        report_.checks.resize(job.checks.size());
        sizes_ = current_sizes(job);
        checks_seen_.assign(job.checks.size(), false);
        released_ = mapped_release(job.sources.size());
    }

    /// Executes every operation of the job in order (window after window).
    [[nodiscard]] result<void> execute_operations() {
        operation_cursor cursor(*job_);
        cursor_ = &cursor;
        for (;;) {
            if (cancelled()) return interrupted();
            ONNXSTREAM_ASSIGN(const write_operation* op, cursor.next());
            if (op == nullptr) break;
            ONNXSTREAM_TRY(execute(*op));
        }
        cursor_ = nullptr;
        return {};
    }

    [[nodiscard]] bool cancelled() const { return detail::cancelled(*options_); }

    /// Appends bytes to the output at `offset` (gathered with their neighbours).
    [[nodiscard]] virtual result<void> stage(std::span<const std::byte> bytes, std::uint64_t offset) = 0;
    /// Everything staged or in flight reaches the output (before a convert writes itself).
    [[nodiscard]] virtual result<void> finish_pending_writes() = 0;
    /// A copy that is hashed or larger than `small_copy`.
    [[nodiscard]] virtual result<void> copy(const write_operation& op, const source_file& source) = 0;
    /// `bytes` more reached the output.
    virtual void progress(std::uint64_t bytes) = 0;

    const write_job* job_ = nullptr;
    const operation_cursor* cursor_ = nullptr;  // during execute_operations()
    const writer_options* options_ = nullptr;
    write_report report_;
    std::vector<std::uint64_t> sizes_;
    std::vector<bool> checks_seen_;
    slice_converter converter_{1U << 20};
    mapped_release released_{0};
    read_ahead_window small_reads_;  // small copies and converts from sources that are not mapped

private:
    [[nodiscard]] result<void> execute(const write_operation& op) {
        if (op.kind == operation_kind::emit) {
            ONNXSTREAM_TRY(check_emit(cursor_->pool(), op));
            return stage(cursor_->pool().subspan(op.input_offset, op.length), op.output_offset);
        }
        if (op.kind == operation_kind::convert) {
            if (slice_converter::small(op)) {
                ONNXSTREAM_ASSIGN(const auto converted,
                                  converter_.convert_small(*job_, sizes_, op, small_reads_, released_, report_, checks_seen_));
                return stage(converted, op.output_offset);
            }
            ONNXSTREAM_TRY(finish_pending_writes());
            return converter_.run(
                *job_, sizes_, op, *options_, [this](std::uint64_t bytes) { progress(bytes); }, report_, checks_seen_);
        }
        ONNXSTREAM_ASSIGN(const source_file* found, copy_source(*job_, sizes_, op));
        const source_file& source = *found;
        ONNXSTREAM_TRY(claim_check(*job_, op, checks_seen_));
        if (op.check != no_check || op.length > small_copy) return copy(op, source);
        if (!source.bytes().empty()) {
            ONNXSTREAM_TRY(stage(source.bytes().subspan(op.input_offset, op.length), op.output_offset));
            released_.copied(source, op.source, op.input_offset, op.length);
            return {};
        }
        ONNXSTREAM_ASSIGN(const auto piece, small_reads_.read(source, op.source, op.input_offset, op.length));
        return stage(piece, op.output_offset);
    }
};

}  // namespace onnxstream::io::detail
