// The overlapped writer (Windows): the portable writer's plan, with several reads and
// writes in flight. Large copies go in buffer-sized chunks through a fixed ring of
// buffers (writer_options::buffer_count of writer_options::buffer_size bytes): each chunk
// is read with an overlapped ReadFile, then written with an overlapped WriteFile from the
// same buffer, while the chunks behind it are being read. Chunks are taken up in the order
// they were issued, so that a hashed copy's bytes reach its hash in order; a buffer is
// reused only once its write completed. Each request has its own event (no completion
// port), so the synchronous reads and writes of the other code paths on the same handles
// (read_at, write_all, the convert operation) never see a stray completion.
//
// Small pieces (metadata, copies up to 64 KiB) are gathered in a staging buffer as in the
// portable writer and leave as one overlapped write; convert operations run inline (CPU
// work, see convert_support.hpp) once everything before them is written.
#include <onnxstream/io/plan_writer.hpp>

#include "handle_win.hpp"
#include "in_order_writer.hpp"
#include "writer_support.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

namespace onnxstream::io {
namespace {

class overlapped_writer final : public detail::in_order_writer {
public:
    overlapped_writer() = default;
    overlapped_writer(const overlapped_writer&) = delete;
    overlapped_writer& operator=(const overlapped_writer&) = delete;
    ~overlapped_writer() override { close_slots(); }

    const char* name() const noexcept override { return "overlapped"; }

    result<write_report> run(const write_job& job, const writer_options& options) override {
        start_run(job, options);
        output_ = win::to_handle(job.output_descriptor);
        buffer_size_ = std::max<std::size_t>(options.buffer_size, 64 * 1024);
        ONNXSTREAM_TRY(open_slots(std::max<std::size_t>(options.buffer_count, 2)));
        staging_.clear();
        staging_.reserve(buffer_size_);
        hashes_.clear();
        auto outcome = execute_all();
        if (!outcome) {
            abort_in_flight();
            return failure(std::move(outcome.error()));
        }
        return std::move(report_);
    }

private:
    enum class slot_state : std::uint8_t { idle, reading, writing };

    struct slot {
        OVERLAPPED request{};
        HANDLE event = nullptr;
        std::vector<std::byte> buffer;
        slot_state state = slot_state::idle;
        HANDLE file = nullptr;  // the handle the request is on
        std::uint64_t output_offset = 0;
        std::uint64_t input_offset = 0;
        std::size_t length = 0;
        const source_file* source = nullptr;
        std::uint32_t check = no_check;
        bool last_of_check = false;
    };

    result<void> open_slots(std::size_t count) {
        if (slots_.size() == count && !slots_.empty() && slots_.front().buffer.size() == buffer_size_) return {};
        close_slots();
        slots_.resize(count);
        for (auto& s : slots_) {
            s.event = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
            if (s.event == nullptr) return failure(os_failure("cannot create an event for overlapped I/O", win::last_error()));
            s.buffer.resize(buffer_size_);
        }
        return {};
    }

    void close_slots() noexcept {
        for (auto& s : slots_)
            if (s.event != nullptr) ::CloseHandle(s.event);
        slots_.clear();
        order_.clear();
    }

    result<void> execute_all() {
        ONNXSTREAM_TRY(execute_operations());
        return finish_pending_writes();
    }

    result<void> finish_pending_writes() override {
        ONNXSTREAM_TRY(flush_staging());
        return drain();
    }

    result<void> copy(const write_operation& op, const source_file& source) override { return copy_chunks(op, source); }

    // A copy as chunks, each read into a ring buffer and written from it.
    result<void> copy_chunks(const write_operation& op, const source_file& source) {
        if (op.check != no_check) hashes_.emplace(op.check, detail::check_hashes(job_->checks[op.check]));
        if (op.length == 0 && op.check != no_check) {
            report_.checks[op.check] = hashes_.at(op.check).finish(job_->checks[op.check]);
            hashes_.erase(op.check);
            return {};
        }
        for (std::uint64_t done = 0; done < op.length;) {
            if (cancelled()) return detail::interrupted();
            ONNXSTREAM_ASSIGN(slot * s, free_slot());
            const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(op.length - done, buffer_size_));
            s->source = &source;
            s->input_offset = op.input_offset + done;
            s->output_offset = op.output_offset + done;
            s->length = piece;
            s->check = op.check;
            done += piece;
            s->last_of_check = done == op.length;
            ONNXSTREAM_TRY(start(*s, win::to_handle(source.descriptor()), false, s->input_offset));
        }
        return {};
    }

    // Appends to the staging buffer; it leaves as one write when full or not contiguous.
    result<void> stage(std::span<const std::byte> bytes, std::uint64_t offset) override {
        if (!staging_.empty() && staging_offset_ + staging_.size() != offset) ONNXSTREAM_TRY(flush_staging());
        if (staging_.size() + bytes.size() > buffer_size_) ONNXSTREAM_TRY(flush_staging());
        if (staging_.empty()) staging_offset_ = offset;
        if (bytes.size() >= buffer_size_) {
            ONNXSTREAM_TRY(detail::write_all(job_->output_descriptor, bytes, offset));
            progress(bytes.size());
            return {};
        }
        staging_.insert(staging_.end(), bytes.begin(), bytes.end());
        return {};
    }

    result<void> flush_staging() {
        if (staging_.empty()) return {};
        ONNXSTREAM_ASSIGN(slot * s, free_slot());
        std::memcpy(s->buffer.data(), staging_.data(), staging_.size());
        s->source = nullptr;
        s->output_offset = staging_offset_;
        s->length = staging_.size();
        s->check = no_check;
        s->last_of_check = false;
        staging_.clear();
        return start(*s, output_, true, s->output_offset);
    }

    // Issues the overlapped request of `s` (a read into its buffer, or a write from it).
    result<void> start(slot& s, HANDLE file, bool write, std::uint64_t offset) {
        s.request = OVERLAPPED{};
        s.request.Offset = static_cast<DWORD>(offset);
        s.request.OffsetHigh = static_cast<DWORD>(offset >> 32);
        s.request.hEvent = s.event;
        ::ResetEvent(s.event);
        s.file = file;
        s.state = write ? slot_state::writing : slot_state::reading;
        const auto count = static_cast<DWORD>(s.length);
        const BOOL done = write ? ::WriteFile(file, s.buffer.data(), count, nullptr, &s.request)
                                : ::ReadFile(file, s.buffer.data(), count, nullptr, &s.request);
        if (!done && ::GetLastError() != ERROR_IO_PENDING) {
            const DWORD code = ::GetLastError();
            s.state = slot_state::idle;
            if (!write && code == ERROR_HANDLE_EOF) return detail::source_shrank(*s.source, offset);
            return failure(
                os_failure(write ? "cannot write the output" : "cannot read " + s.source->path().string(), win::error_of(code)));
        }
        if (std::find(order_.begin(), order_.end(), &s) == order_.end()) order_.push_back(&s);
        return {};
    }

    // Waits for the oldest request and takes it one step: a finished read is hashed and
    // written; a finished write frees its buffer.
    result<void> advance_oldest() {
        slot& s = *order_.front();
        DWORD transferred = 0;
        const bool ok = ::GetOverlappedResult(s.file, &s.request, &transferred, TRUE) != 0;
        const DWORD code = ok ? 0 : ::GetLastError();
        if (s.state == slot_state::reading) {
            if (!ok && code != ERROR_HANDLE_EOF) {
                s.state = slot_state::idle;
                return failure(os_failure("cannot read " + s.source->path().string(), win::error_of(code)));
            }
            if (transferred < s.length) {
                // A short read of a regular file: read the rest synchronously (it fails
                // as truncated_data if the file really ended).
                const auto rest = std::span(s.buffer).subspan(transferred, s.length - transferred);
                if (auto rest_read = s.source->read_at(s.input_offset + transferred, rest); !rest_read) {
                    s.state = slot_state::idle;
                    return rest_read;
                }
            }
            if (s.check != no_check) {
                auto& hashes = hashes_.at(s.check);
                hashes.update(std::span(s.buffer).first(s.length));
                if (s.last_of_check) {
                    report_.checks[s.check] = hashes.finish(job_->checks[s.check]);
                    hashes_.erase(s.check);
                }
            }
            order_.pop_front();
            return start(s, output_, true, s.output_offset);
        }
        order_.pop_front();
        s.state = slot_state::idle;
        if (!ok) return failure(os_failure("cannot write the output", win::error_of(code)));
        if (transferred < s.length) {
            // A short write: the rest synchronously.
            ONNXSTREAM_TRY(detail::write_all(job_->output_descriptor,
                                             std::span(s.buffer).subspan(transferred, s.length - transferred),
                                             s.output_offset + transferred));
        }
        progress(s.length);
        return {};
    }

    result<slot*> free_slot() {
        for (;;) {
            for (auto& s : slots_)
                if (s.state == slot_state::idle) return &s;
            if (cancelled()) return detail::interrupted();
            ONNXSTREAM_TRY(advance_oldest());
        }
    }

    result<void> drain() {
        while (!order_.empty()) {
            if (cancelled()) return detail::interrupted();
            ONNXSTREAM_TRY(advance_oldest());
        }
        return {};
    }

    // After a failure: no request may still write into a buffer, or to the file.
    void abort_in_flight() noexcept {
        for (auto& s : slots_) {
            if (s.state == slot_state::idle) continue;
            ::CancelIoEx(s.file, &s.request);
            DWORD ignored = 0;
            (void)::GetOverlappedResult(s.file, &s.request, &ignored, TRUE);
            s.state = slot_state::idle;
        }
        order_.clear();
        hashes_.clear();
    }

    void progress(std::uint64_t bytes) override {
        report_.bytes_written += bytes;
        if (options_->on_progress) options_->on_progress(bytes);
    }

    HANDLE output_ = nullptr;
    std::size_t buffer_size_ = 0;
    std::vector<slot> slots_;
    std::deque<slot*> order_;  // slots with a request in flight, oldest first
    std::map<std::uint32_t, detail::check_hashes> hashes_;
    std::vector<std::byte> staging_;
    std::uint64_t staging_offset_ = 0;
};

}  // namespace

std::unique_ptr<plan_writer> make_overlapped_writer() { return std::make_unique<overlapped_writer>(); }

}  // namespace onnxstream::io
