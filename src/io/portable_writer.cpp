// The portable writer: one thread, sequential, a staging buffer for small pieces and
// copy_file_range for large ones. Small copies (metadata between weights) are gathered
// into the staging buffer so that a graph of 200k nodes costs a few large writes rather
// than 200k tiny ones; large unhashed copies never enter user space.
#include <onnxstream/io/plan_writer.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace onnxstream::io {
namespace {

constexpr std::uint64_t small_copy = 64 * 1024;

result<void> write_all(int fd, std::span<const std::byte> bytes, std::uint64_t offset) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t wrote = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
        if (wrote < 0) {
            if (errno == EINTR) continue;
            return failure(os_failure("cannot write the output", {errno, std::generic_category()}));
        }
        if (wrote == 0) return failure(error_code::io, "cannot write the output: the device accepted no bytes");
        done += static_cast<std::size_t>(wrote);
    }
    return {};
}

failure source_shrank(const source_file& source, std::uint64_t offset) {
    return failure(error_code::truncated_data,
                   source.path().string() + " ended at byte " + std::to_string(offset) + " while being copied",
                   "the file changed while onnxstream was reading it; do not modify inputs during a run");
}

class portable_writer final : public plan_writer {
public:
    const char* name() const noexcept override { return "portable"; }

    result<write_report> run(const write_job& job, const writer_options& options) override {
        job_ = &job;
        options_ = &options;
        report_ = {};
        report_.backend = name();
        report_.checks.resize(job.checks.size());
        staging_.clear();
        staging_.reserve(options.buffer_size);
        staging_offset_ = 0;
        bounce_.resize(options.buffer_size);
        for (const auto& op : job.operations) {
            if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed))
                return failure(error_code::interrupted, "interrupted; no output was written");
            ONNXSTREAM_TRY(execute(op));
        }
        ONNXSTREAM_TRY(flush());
        return std::move(report_);
    }

private:
    result<void> execute(const write_operation& op) {
        if (op.kind == operation_kind::emit) return stage(job_->pool.subspan(op.input_offset, op.length), op.output_offset);
        if (op.source >= job_->sources.size()) return failure(error_code::io, "a copy names an unknown source");
        const source_file& source = *job_->sources[op.source];
        if (op.length > source.size() || op.input_offset > source.size() - op.length) return source_shrank(source, source.size());
        if (op.check != no_check) return copy_hashed(op, source);
        if (op.length <= small_copy) {
            if (!source.bytes().empty()) return stage(source.bytes().subspan(op.input_offset, op.length), op.output_offset);
            std::vector<std::byte> piece(op.length);
            ONNXSTREAM_TRY(source.read_at(op.input_offset, piece));
            return stage(piece, op.output_offset);
        }
        ONNXSTREAM_TRY(flush());
        return copy_large(op, source);
    }

    // Appends to the staging buffer, flushing first when the bytes are not contiguous with
    // it or would overflow it.
    result<void> stage(std::span<const std::byte> bytes, std::uint64_t offset) {
        if (!staging_.empty() && staging_offset_ + staging_.size() != offset) ONNXSTREAM_TRY(flush());
        if (staging_.size() + bytes.size() > options_->buffer_size) ONNXSTREAM_TRY(flush());
        if (staging_.empty()) staging_offset_ = offset;
        if (bytes.size() >= options_->buffer_size) {
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

    void progress(std::uint64_t bytes) {
        report_.bytes_written += bytes;
        if (options_->on_progress) options_->on_progress(bytes);
    }

    bool cancelled() const { return options_->cancel != nullptr && options_->cancel->load(std::memory_order_relaxed); }

    result<void> copy_large(const write_operation& op, const source_file& source) {
        std::uint64_t done = 0;
        bool kernel_copy = options_->allow_copy_file_range;
        while (done < op.length) {
            if (cancelled()) return failure(error_code::interrupted, "interrupted; no output was written");
            const std::uint64_t chunk = std::min<std::uint64_t>(op.length - done, 64ULL << 20);
            if (kernel_copy) {
                auto in_offset = static_cast<off_t>(op.input_offset + done);
                auto out_offset = static_cast<off_t>(op.output_offset + done);
                const ssize_t copied = ::copy_file_range(source.descriptor(), &in_offset, job_->output_descriptor,
                                                         &out_offset, static_cast<std::size_t>(chunk), 0);
                if (copied > 0) {
                    done += static_cast<std::uint64_t>(copied);
                    progress(static_cast<std::uint64_t>(copied));
                    continue;
                }
                if (copied == 0) return source_shrank(source, op.input_offset + done);
                if (errno == EINTR) continue;
                if (errno == ENOSPC) return failure(os_failure("cannot write the output", {errno, std::generic_category()}));
                // EXDEV, ENOSYS, EINVAL, EOPNOTSUPP...: this pair of files cannot be copied
                // in the kernel; fall back to reading and writing.
                kernel_copy = false;
                continue;
            }
            const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, bounce_.size()));
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
        const bool want_sha1 = check.expected_sha1.has_value() || check.compute_sha1;
        std::optional<sha1_hasher> sha1;
        std::optional<xxh3_hasher> xxh3;
        if (want_sha1) sha1.emplace();
        if (check.compute_xxh3) xxh3.emplace();
        std::uint64_t done = 0;
        while (done < op.length) {
            if (cancelled()) return failure(error_code::interrupted, "interrupted; no output was written");
            const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(op.length - done, bounce_.size()));
            const auto buffer = std::span(bounce_).first(piece);
            ONNXSTREAM_TRY(source.read_at(op.input_offset + done, buffer));
            if (sha1) sha1->update(buffer);
            if (xxh3) xxh3->update(buffer);
            ONNXSTREAM_TRY(write_all(job_->output_descriptor, buffer, op.output_offset + done));
            done += piece;
            progress(piece);
        }
        auto& outcome = report_.checks[op.check];
        if (sha1) {
            outcome.sha1 = sha1->finish();
            if (check.expected_sha1) outcome.sha1_matches = *outcome.sha1 == *check.expected_sha1;
        }
        if (xxh3) outcome.xxh3 = xxh3->digest();
        return {};
    }

    const write_job* job_ = nullptr;
    const writer_options* options_ = nullptr;
    write_report report_;
    std::vector<std::byte> staging_;
    std::uint64_t staging_offset_ = 0;
    std::vector<std::byte> bounce_;
};

}  // namespace

std::unique_ptr<plan_writer> make_portable_writer() { return std::make_unique<portable_writer>(); }

}  // namespace onnxstream::io
