// The portable writer: one thread, sequential, a staging buffer for small pieces and
// copy_file_range for large ones. Small copies (metadata between weights) are gathered
// into the staging buffer so that a graph of 200k nodes costs a few large writes rather
// than 200k tiny ones; large unhashed copies never enter user space. It is the fallback
// when io_uring is unavailable and the reference the io_uring writer is tested against,
// so it stays simple: no threads, one buffer of each kind.
#include <onnxstream/io/plan_writer.hpp>

#include "in_order_writer.hpp"
#include "writer_support.hpp"

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace onnxstream::io {
namespace {

using detail::source_shrank;
using detail::write_all;

class portable_writer final : public detail::in_order_writer {
public:
    const char* name() const noexcept override { return "portable"; }

    result<write_report> run(const write_job& job, const writer_options& options) override {
        start_run(job, options);
        staging_.clear();
        // A zero-sized buffer would never make progress.
        buffer_size_ = std::max<std::size_t>(options.buffer_size, 4096);
        staging_.reserve(buffer_size_);
        staging_offset_ = 0;
        bounce_.resize(buffer_size_);
        written_since_writeback_ = 0;
        ONNXSTREAM_TRY(execute_operations());
        ONNXSTREAM_TRY(flush());
        return std::move(report_);
    }

private:
    result<void> copy(const write_operation& op, const source_file& source) override {
        if (op.check != no_check) return copy_hashed(op, source);
        ONNXSTREAM_TRY(flush());
        return copy_large(op, source);
    }

    result<void> finish_pending_writes() override { return flush(); }

    // Appends to the staging buffer, flushing first when the bytes are not contiguous with
    // it or would overflow it.
    result<void> stage(std::span<const std::byte> bytes, std::uint64_t offset) override {
        if (!staging_.empty() && staging_offset_ + staging_.size() != offset) ONNXSTREAM_TRY(flush());
        if (staging_.size() + bytes.size() > buffer_size_) ONNXSTREAM_TRY(flush());
        if (staging_.empty()) staging_offset_ = offset;
        if (bytes.size() >= buffer_size_) {
            ONNXSTREAM_TRY(write_all(job_->output_descriptor, bytes, offset));
            progress(bytes.size());
            return {};
        }
        staging_.insert(staging_.end(), bytes.begin(), bytes.end());
        return {};
    }

    result<void> flush() {
        if (staging_.empty()) return {};
        ONNXSTREAM_TRY(write_all(job_->output_descriptor, staging_, staging_offset_));
        progress(staging_.size());
        staging_.clear();
        return {};
    }

    void progress(std::uint64_t bytes) override {
        report_.bytes_written += bytes;
        if (options_->on_progress) options_->on_progress(bytes);
        written_since_writeback_ += bytes;
        if (written_since_writeback_ >= detail::writeback_interval) {
            written_since_writeback_ = 0;
            detail::start_writeback(job_->output_descriptor, 0, 0);
        }
    }

    result<void> copy_large(const write_operation& op, const source_file& source) {
        std::uint64_t done = 0;
        bool kernel_copy = options_->allow_copy_file_range;
        while (done < op.length) {
            if (cancelled()) return detail::interrupted();
            if (kernel_copy) {
                const std::uint64_t chunk = std::min<std::uint64_t>(op.length - done, detail::kernel_copy_chunk);
                const auto outcome = detail::copy_in_kernel(source.descriptor(), op.input_offset + done, job_->output_descriptor,
                                                            op.output_offset + done, chunk, options_->cancel);
                done += outcome.copied;
                if (outcome.copied > 0) progress(outcome.copied);
                if (outcome.end_of_source) return source_shrank(source, op.input_offset + done);
                if (outcome.os_error == 0) continue;
                if (outcome.os_error == ENOSPC) return detail::write_failed(outcome.os_error);
                if (!detail::kernel_copy_unsupported(outcome.os_error)) return detail::read_failed(source, outcome.os_error);
                // EXDEV, ENOSYS, EINVAL, EOPNOTSUPP...: this pair of files cannot be copied
                // in the kernel; fall back to reading and writing.
                kernel_copy = false;
                continue;
            }
            const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(op.length - done, bounce_.size()));
            const auto buffer = std::span(bounce_).first(piece);
            ONNXSTREAM_TRY(source.read_at(op.input_offset + done, buffer));
            ONNXSTREAM_TRY(write_all(job_->output_descriptor, buffer, op.output_offset + done));
            done += piece;
            progress(piece);
        }
        return {};
    }

    result<void> copy_hashed(const write_operation& op, const source_file& source) {
        ONNXSTREAM_TRY(flush());
        const stream_check& check = job_->checks[op.check];
        detail::check_hashes hashes(check);
        std::uint64_t done = 0;
        while (done < op.length) {
            if (cancelled()) return detail::interrupted();
            const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(op.length - done, bounce_.size()));
            const auto buffer = std::span(bounce_).first(piece);
            ONNXSTREAM_TRY(source.read_at(op.input_offset + done, buffer));
            hashes.update(buffer);
            ONNXSTREAM_TRY(write_all(job_->output_descriptor, buffer, op.output_offset + done));
            done += piece;
            progress(piece);
        }
        report_.checks[op.check] = hashes.finish(check);
        return {};
    }

    std::vector<std::byte> staging_;
    std::uint64_t staging_offset_ = 0;
    std::vector<std::byte> bounce_;
    std::size_t buffer_size_ = 0;
    std::uint64_t written_since_writeback_ = 0;
};

}  // namespace

std::unique_ptr<plan_writer> make_portable_writer() { return std::make_unique<portable_writer>(); }

}  // namespace onnxstream::io
