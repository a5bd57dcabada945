// The io_uring writer. One thread (the caller's) runs an event loop over a ring; a pool of
// at most `threads` workers does the work that would otherwise serialize it: hashing
// buffers and copying large unhashed slices with copy_file_range.
//
//   emit, small copy   gathered into a staging buffer (memcpy from the plan's pool or the
//                      source's mapping, pread when a source is not mapped), written with
//                      one IORING_OP_WRITE when full or when the next byte is elsewhere
//   large copy         copy_file_range on a worker (bytes never enter user space), in
//                      chunks so several workers share a tensor; sources or file systems
//                      that refuse it fall back to the next path for the rest of the run
//   hashed copy, or    IORING_OP_READ into a buffer, then at once IORING_OP_WRITE of it
//   no kernel copy     and, for a hashed copy, the hash of it on a worker; a check's
//                      buffers are hashed strictly in order, different checks in parallel
//
// Every buffer comes from a ring of `buffer_count` buffers allocated once; a buffer is
// reused when its write and its hash are both done, so memory never depends on the bytes
// written. Short reads and writes are resubmitted for the rest, EINTR and EAGAIN retried.
// Workers report through a queue and an eventfd the ring polls, so the loop waits in one
// place. On an error or cancellation nothing new is started, everything in flight is
// drained (the kernel and the workers may still use the buffers), then the error returns.
//
// The output's writeback to the device is started while copying, without waiting (by the
// worker for each chunk it copied, by IORING_OP_SYNC_FILE_RANGE every 32 MiB written
// through the ring), so the fsync before the rename has little left to do.
#include <onnxstream/io/plan_writer.hpp>

#include "convert_support.hpp"
#include "writer_support.hpp"

#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

namespace onnxstream::io {
namespace {

using detail::kernel_copy_chunk;
using detail::small_copy;

// user_data of the ring's requests: the poll on the workers' eventfd, the writeback
// request, or a buffer (index + first_slot_tag; a buffer has at most one request in flight).
constexpr std::uint64_t event_tag = 1;
constexpr std::uint64_t writeback_tag = 2;
constexpr std::uint64_t first_slot_tag = 16;

// ---------------------------------------------------------------- worker pool

struct worker_done {
    enum class kind : std::uint8_t { hashed, copied } what = kind::hashed;
    std::uint32_t index = 0;  // the buffer (hashed) or the lane (copied)
};

// Threads started on first use; tasks report completions that the loop collects after
// the eventfd wakes it.
class worker_pool {
public:
    worker_pool(unsigned count, int event_fd) : count_(count), event_fd_(event_fd) {}
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;
    ~worker_pool() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (auto& thread : threads_) thread.join();
    }

    // `task` runs on a worker, then `done` is reported, even if the task threw (no
    // exception may leave a thread: it is recorded, and `failed` says so).
    void post(std::function<void()> task, worker_done done) {
        if (!started_) {
            started_ = true;
            threads_.reserve(count_);
            try {
                for (unsigned i = 0; i < count_; ++i) threads_.emplace_back([this] { work(); });
            } catch (const std::system_error&) {
                // No more threads for this process: work with those there are, or none.
            }
        }
        if (threads_.empty()) {
            run(task, done);  // it reports through complete() like any other
            return;
        }
        {
            std::lock_guard lock(mutex_);
            tasks_.emplace_back(std::move(task), done);
        }
        wake_.notify_one();
    }

    void complete(worker_done done) {
        {
            std::lock_guard lock(done_mutex_);
            done_.push_back(done);
        }
        const std::uint64_t one = 1;
        // The counter cannot overflow here, and the reader drains the queue whatever
        // the eventfd says, so the result is of no use.
        [[maybe_unused]] const auto ignored = ::write(event_fd_, &one, sizeof one);
    }

    void take(std::vector<worker_done>& out) {
        out.clear();
        std::lock_guard lock(done_mutex_);
        out.swap(done_);
    }

    [[nodiscard]] bool failed() const noexcept { return failed_.load(); }

private:
    void run(const std::function<void()>& task, worker_done done) noexcept {
        try {
            task();
        } catch (...) {
            failed_.store(true);
        }
        complete(done);
    }

    void work() noexcept {
        for (;;) {
            std::pair<std::function<void()>, worker_done> task;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
                if (tasks_.empty()) return;
                task = std::move(tasks_.front());
                tasks_.pop_front();
            }
            run(task.first, task.second);
        }
    }

    unsigned count_;
    int event_fd_;
    bool started_ = false;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::pair<std::function<void()>, worker_done>> tasks_;
    std::atomic<bool> failed_{false};
    bool stopping_ = false;
    std::vector<std::thread> threads_;
    std::mutex done_mutex_;
    std::vector<worker_done> done_;
};

// ---------------------------------------------------------------- one run

// A piece of work not yet started: a copy range, or the rest of one after a kernel copy
// was refused.
struct piece {
    std::uint32_t source = 0;
    std::uint32_t check = no_check;
    std::uint64_t input_offset = 0;
    std::uint64_t output_offset = 0;
    std::uint64_t length = 0;
};

enum class slot_state : std::uint8_t { free, staging, reading, writing, written };

struct slot {
    std::byte* memory = nullptr;
    slot_state state = slot_state::free;
    std::uint64_t output_offset = 0;
    std::uint64_t length = 0;   // bytes held (staging: so far)
    std::uint64_t io_done = 0;  // bytes of the current read or write done (short transfers)
    std::uint32_t source = 0;   // reading: where from
    std::uint64_t input_offset = 0;
    std::uint32_t check = no_check;
    std::uint64_t sequence = 0;  // the buffer's place in its check's stream
    bool hashing = false;        // waiting for or running on a worker
};

struct lane {
    bool busy = false;
    piece work;
    detail::kernel_copy_result outcome;
};

// A check being hashed: its buffers go to the workers one at a time, in stream order.
struct check_stream {
    explicit check_stream(const stream_check& check) : hashes(check) {}
    detail::check_hashes hashes;
    std::uint64_t produced = 0;                    // buffers handed out so far
    std::uint64_t hashed = 0;                      // buffers hashed so far
    bool busy = false;                             // a buffer of it is on a worker
    bool complete = false;                         // every buffer of it has been handed out
    std::map<std::uint64_t, std::uint32_t> ready;  // read buffers waiting: sequence -> slot
};

class uring_run {
public:
    uring_run(io_uring& ring, int event_fd, bool& event_armed, const write_job& job, const writer_options& options,
              std::size_t buffer_size, std::size_t buffer_count)
        : ring_(ring),
          event_fd_(event_fd),
          event_armed_(event_armed),
          job_(job),
          options_(options),
          buffer_size_(buffer_size),
          threads_(std::max(1U, options.threads)),
          kernel_copy_(options.allow_copy_file_range),
          sizes_(detail::current_sizes(job)) {
        // On small pages, not huge ones (large_blocks.hpp): a run that copies its bytes in
        // the kernel touches a few pages of the 8 MiB, and each huge page touched would
        // make 2 MiB of it resident (+2 to +8 MiB on the peak of a small model's run).
        memory_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, buffer_size * buffer_count)));
        slots_.resize(buffer_count);
        for (std::size_t i = 0; i < buffer_count; ++i) slots_[i].memory = memory_.get() + i * buffer_size;
        lanes_.resize(threads_);
        report_.checks.resize(job.checks.size());
        checks_seen_.resize(job.checks.size());
    }

    result<write_report> run() {
        if (!memory_) return failure(error_code::io, "cannot allocate the writer's buffers");
        for (;;) {
            if (!error_ && detail::cancelled(options_)) stop(detail::interrupted());
            if (!error_) produce();
            submit();
            if (in_flight_ == 0 && tasks_ == 0) {
                if (error_ || finished()) break;
                // Nothing can complete, so nothing would wake the loop: a bug, not a hang.
                stop(failure(error_code::io, "the io_uring writer stalled with work left"));
                break;
            }
            if (auto waited = wait(); !waited) {
                // The ring cannot be reaped any more, so requests in flight may still write
                // into the buffers: leave them allocated rather than free them under the kernel.
                stop(std::move(waited).error());
                if (in_flight_ > 0) static_cast<void>(memory_.release());
                break;
            }
        }
        pool_.reset();  // joins the workers: nothing touches the buffers past this point
        if (error_) return failure(std::move(*error_));
        return std::move(report_);
    }

private:
    struct free_deleter {
        void operator()(std::byte* p) const noexcept { std::free(p); }
    };

    bool finished() const { return plan_done_ && requeued_.empty() && current_.length == 0 && staging_ == none; }

    void stop(failure f) { stop(std::move(f.value)); }
    void stop(error e) {
        if (!error_) error_ = std::move(e);
    }

    // ------------------------------------------------------------ producing work

    // Hands out work until a resource (buffer, lane) runs out or the plan ends.
    void produce() {
        for (;;) {
            if (error_) return;
            if (current_.length == 0 && !next_piece()) {
                if (staging_ != none) flush_staging();
                return;
            }
            const piece& p = current_;
            bool started = false;
            if (p.source == emit_source || p.source == converted_source) started = stage_emit();
            else if (p.check != no_check) started = start_read();
            else if (p.length <= small_copy) started = stage_copy();
            else if (kernel_copy_) started = start_kernel_copy();
            else started = start_read();
            if (!started) return;
        }
    }

    static constexpr std::uint32_t emit_source = std::numeric_limits<std::uint32_t>::max();
    // A small convert's output (converted_), staged as an emit's bytes are.
    static constexpr std::uint32_t converted_source = emit_source - 1;

    // Moves to the next piece: requeued ranges first, then the plan's next operation.
    bool next_piece() {
        if (!requeued_.empty()) {
            current_ = requeued_.front();
            requeued_.pop_front();
            return true;
        }
        while (!plan_done_) {
            auto next = cursor_.next();
            if (!next) {
                stop(std::move(next).error());
                return false;
            }
            if (*next == nullptr) {
                plan_done_ = true;
                break;
            }
            const write_operation& op = **next;
            if (op.kind == operation_kind::emit) {
                if (auto checked = detail::check_emit(cursor_.pool(), op); !checked) {
                    stop(std::move(checked).error());
                    return false;
                }
                if (op.length == 0) continue;
                current_ = {emit_source, no_check, op.input_offset, op.output_offset, op.length};
                return true;
            }
            if (op.kind == operation_kind::convert && detail::slice_converter::small(op)) {
                auto converted = converter_.convert_small(job_, sizes_, op, small_reads_, released_, report_, checks_seen_);
                if (!converted) {
                    stop(std::move(converted).error());
                    return false;
                }
                converted_ = *converted;
                if (op.length == 0) continue;
                current_ = {converted_source, no_check, 0, op.output_offset, op.length};
                return true;
            }
            if (op.kind == operation_kind::convert) {
                // Inline (see convert_support.hpp); requests in flight go on meanwhile.
                auto converted = converter_.run(
                    job_, sizes_, op, options_, [this](std::uint64_t bytes) { report_progress(bytes); }, report_, checks_seen_);
                if (!converted) {
                    stop(std::move(converted).error());
                    return false;
                }
                continue;
            }
            auto source = detail::copy_source(job_, sizes_, op);
            if (!source) {
                stop(std::move(source).error());
                return false;
            }
            if (auto claimed = detail::claim_check(job_, op, checks_seen_); !claimed) {
                stop(std::move(claimed).error());
                return false;
            }
            if (op.length == 0) {
                // Nothing to read, but an empty tensor still has a hash to report.
                if (op.check != no_check) {
                    const auto& check = job_.checks[op.check];
                    report_.checks[op.check] = detail::check_hashes(check).finish(check);
                }
                continue;
            }
            if (op.check != no_check) streams_.try_emplace(op.check, job_.checks[op.check]);
            current_ = {op.source, op.check, op.input_offset, op.output_offset, op.length};
            return true;
        }
        return false;
    }

    std::uint32_t free_slot() const {
        for (std::uint32_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].state == slot_state::free) return i;
        return none;
    }

    // The staging buffer for bytes bound for `offset`, flushing one that they do not
    // continue; `none` when every buffer is busy.
    std::uint32_t staging_for(std::uint64_t offset) {
        if (staging_ != none) {
            const slot& s = slots_[staging_];
            if (s.output_offset + s.length == offset && s.length < buffer_size_) return staging_;
            flush_staging();
        }
        const auto index = free_slot();
        if (index == none) return none;
        slot& s = slots_[index];
        s.state = slot_state::staging;
        s.output_offset = offset;
        s.length = 0;
        s.check = no_check;
        staging_ = index;
        return index;
    }

    std::span<std::byte> staging_room(slot& s, std::uint64_t wanted) const {
        const auto room = std::min<std::uint64_t>(buffer_size_ - s.length, wanted);
        return {s.memory + s.length, static_cast<std::size_t>(room)};
    }

    bool stage_emit() {
        const auto index = staging_for(current_.output_offset);
        if (index == none) return false;
        slot& s = slots_[index];
        const auto room = staging_room(s, current_.length);
        const auto* from = current_.source == emit_source ? cursor_.pool().data() : converted_.data();
        std::memcpy(room.data(), from + current_.input_offset, room.size());
        advance_staged(s, room.size());
        return true;
    }

    bool stage_copy() {
        const auto index = staging_for(current_.output_offset);
        if (index == none) return false;
        slot& s = slots_[index];
        const source_file& source = *job_.sources[current_.source];
        // A small copy can straddle the buffer's end; the rest comes on the next turn.
        const auto room = staging_room(s, current_.length);
        if (!source.bytes().empty()) {
            std::memcpy(room.data(), source.bytes().data() + current_.input_offset, room.size());
            released_.copied(source, current_.source, current_.input_offset, room.size());
        } else if (auto read = small_reads_.read(source, current_.source, current_.input_offset, room.size()); !read) {
            stop(std::move(read).error());
            return false;
        } else {
            std::memcpy(room.data(), read->data(), room.size());
        }
        advance_staged(s, room.size());
        return true;
    }

    void advance_staged(slot& s, std::uint64_t bytes) {
        s.length += bytes;
        current_.input_offset += bytes;
        current_.output_offset += bytes;
        current_.length -= bytes;
        if (s.length == buffer_size_) flush_staging();
    }

    void flush_staging() {
        slot& s = slots_[staging_];
        staging_ = none;
        if (s.length == 0) {
            s.state = slot_state::free;
            return;
        }
        s.state = slot_state::writing;
        s.io_done = 0;
        queue_write(static_cast<std::uint32_t>(&s - slots_.data()));
    }

    bool start_read() {
        const auto index = free_slot();
        if (index == none) return false;
        slot& s = slots_[index];
        const auto length = std::min<std::uint64_t>(current_.length, buffer_size_);
        s.state = slot_state::reading;
        s.source = current_.source;
        s.input_offset = current_.input_offset;
        s.output_offset = current_.output_offset;
        s.length = length;
        s.io_done = 0;
        s.check = current_.check;
        current_.input_offset += length;
        current_.output_offset += length;
        current_.length -= length;
        if (s.check != no_check) {
            auto& stream = streams_.at(s.check);
            s.sequence = stream.produced++;
            // The plan gives a check to one copy: once that copy is handed out in full,
            // the stream is complete.
            if (current_.length == 0) stream.complete = true;
        }
        queue_read(index);
        return true;
    }

    bool start_kernel_copy() {
        lane* free_lane = nullptr;
        for (auto& l : lanes_)
            if (!l.busy) {
                free_lane = &l;
                break;
            }
        if (free_lane == nullptr) return false;
        const auto length = std::min<std::uint64_t>(current_.length, kernel_copy_chunk);
        free_lane->busy = true;
        free_lane->work = current_;
        free_lane->work.length = length;
        free_lane->outcome = {};
        current_.input_offset += length;
        current_.output_offset += length;
        current_.length -= length;
        const auto lane_index = static_cast<std::uint32_t>(free_lane - lanes_.data());
        const int in = job_.sources[free_lane->work.source]->descriptor();
        const int out = job_.output_descriptor;
        const auto* cancel = options_.cancel;
        ++tasks_;
        workers().post(
            [free_lane, in, out, cancel] {
                const piece& w = free_lane->work;
                free_lane->outcome = detail::copy_in_kernel(in, w.input_offset, out, w.output_offset, w.length, cancel);
                // Start writing this chunk to the device at once, from the thread that copied it.
                if (free_lane->outcome.copied > 0) detail::start_writeback(out, w.output_offset, free_lane->outcome.copied);
            },
            {worker_done::kind::copied, lane_index});
        return true;
    }

    worker_pool& workers() {
        if (!pool_) pool_ = std::make_unique<worker_pool>(threads_, event_fd_);
        if (!event_armed_) {
            auto* sqe = get_sqe();
            io_uring_prep_poll_add(sqe, event_fd_, POLLIN);
            io_uring_sqe_set_data64(sqe, event_tag);
            event_armed_ = true;
        }
        return *pool_;
    }

    // ------------------------------------------------------------ the ring

    io_uring_sqe* get_sqe() {
        auto* sqe = io_uring_get_sqe(&ring_);
        while (sqe == nullptr) {
            // The submission queue is full: hand it to the kernel and try again.
            (void)io_uring_submit(&ring_);
            sqe = io_uring_get_sqe(&ring_);
        }
        return sqe;
    }

    void queue_read(std::uint32_t index) {
        slot& s = slots_[index];
        const source_file& source = *job_.sources[s.source];
        auto* sqe = get_sqe();
        io_uring_prep_read(sqe, source.descriptor(), s.memory + s.io_done, static_cast<unsigned>(s.length - s.io_done),
                           s.input_offset + s.io_done);
        io_uring_sqe_set_data64(sqe, first_slot_tag + index);
        ++in_flight_;
    }

    void queue_write(std::uint32_t index) {
        slot& s = slots_[index];
        auto* sqe = get_sqe();
        io_uring_prep_write(sqe, job_.output_descriptor, s.memory + s.io_done, static_cast<unsigned>(s.length - s.io_done),
                            s.output_offset + s.io_done);
        io_uring_sqe_set_data64(sqe, first_slot_tag + index);
        ++in_flight_;
    }

    void queue_writeback() {
        if (writeback_in_flight_ || written_since_writeback_ < detail::writeback_interval) return;
        written_since_writeback_ = 0;
        auto* sqe = get_sqe();
        io_uring_prep_sync_file_range(sqe, job_.output_descriptor, 0, 0, SYNC_FILE_RANGE_WRITE);
        io_uring_sqe_set_data64(sqe, writeback_tag);
        writeback_in_flight_ = true;
        ++in_flight_;
    }

    void submit() {
        if (io_uring_sq_ready(&ring_) == 0) return;
        for (;;) {
            const int submitted = io_uring_submit(&ring_);
            if (submitted >= 0 || (submitted != -EINTR && submitted != -EAGAIN && submitted != -EBUSY)) {
                if (submitted < 0) stop(failure(os_failure("cannot submit to io_uring", {-submitted, std::generic_category()})));
                return;
            }
        }
    }

    result<void> wait() {
        io_uring_cqe* cqe = nullptr;
        int waited = 0;
        if (options_.cancel != nullptr) {
            // Wake now and then to see a cancellation even if nothing completes.
            __kernel_timespec timeout{0, 200'000'000};
            waited = io_uring_wait_cqe_timeout(&ring_, &cqe, &timeout);
        } else {
            waited = io_uring_wait_cqe(&ring_, &cqe);
        }
        if (waited == -ETIME || waited == -EINTR || waited == -EAGAIN || waited == -EBUSY) return {};
        if (waited < 0) return failure(os_failure("cannot wait for io_uring", {-waited, std::generic_category()}));
        while (cqe != nullptr) {
            const auto tag = io_uring_cqe_get_data64(cqe);
            const int res = cqe->res;
            // Seen before it is handled: handling may submit, which needs room in the rings.
            io_uring_cqe_seen(&ring_, cqe);
            complete(tag, res);
            if (io_uring_peek_cqe(&ring_, &cqe) != 0) cqe = nullptr;
        }
        return {};
    }

    // ------------------------------------------------------------ completions

    void complete(std::uint64_t tag, int res) {
        if (tag == event_tag) {
            event_armed_ = false;
            std::uint64_t count = 0;
            [[maybe_unused]] const auto drained = ::read(event_fd_, &count, sizeof count);
            collect_workers();
            if (tasks_ > 0) workers();  // re-arm the poll
            return;
        }
        --in_flight_;
        if (tag == writeback_tag) {
            writeback_in_flight_ = false;  // best effort: a failure shows in the fsync
            return;
        }
        const auto index = static_cast<std::uint32_t>(tag - first_slot_tag);
        slot& s = slots_[index];
        if (res == -EINTR || res == -EAGAIN) {
            // Nothing was transferred: ask again (even after an error, to finish cleanly
            // would need the same; but a stopped run just lets the buffer go).
            if (error_) return release_after_io(s);
            return s.state == slot_state::reading ? queue_read(index) : queue_write(index);
        }
        if (s.state == slot_state::reading) return read_done(index, res);
        write_done(index, res);
    }

    void read_done(std::uint32_t index, int res) {
        slot& s = slots_[index];
        const source_file& source = *job_.sources[s.source];
        if (res < 0) {
            stop(detail::read_failed(source, -res));
            return release_after_io(s);
        }
        if (res == 0) {
            stop(detail::source_shrank(source, s.input_offset + s.io_done));
            return release_after_io(s);
        }
        s.io_done += static_cast<std::uint64_t>(res);
        if (error_) return release_after_io(s);
        if (s.io_done < s.length) return queue_read(index);  // a short read: the rest
        s.state = slot_state::writing;
        s.io_done = 0;
        queue_write(index);
        if (s.check != no_check) {
            s.hashing = true;
            auto& stream = streams_.at(s.check);
            stream.ready.emplace(s.sequence, index);
            dispatch_hash(stream);
        }
    }

    void write_done(std::uint32_t index, int res) {
        slot& s = slots_[index];
        if (res < 0) {
            stop(detail::write_failed(-res));
            return release_after_io(s);
        }
        if (res == 0) {
            stop(failure(error_code::io, "cannot write the output: the device accepted no bytes"));
            return release_after_io(s);
        }
        s.io_done += static_cast<std::uint64_t>(res);
        progress(static_cast<std::uint64_t>(res));
        if (s.io_done < s.length && !error_) return queue_write(index);  // a short write: the rest
        s.state = slot_state::written;
        if (!s.hashing) s.state = slot_state::free;
        queue_writeback();
    }

    // After a failed or abandoned transfer: the buffer is free once no worker holds it.
    void release_after_io(slot& s) { s.state = s.hashing ? slot_state::written : slot_state::free; }

    void dispatch_hash(check_stream& stream) {
        if (stream.busy || error_) return;
        const auto next = stream.ready.find(stream.hashed);
        if (next == stream.ready.end()) return;
        const std::uint32_t index = next->second;
        stream.ready.erase(next);
        stream.busy = true;
        const slot& s = slots_[index];
        const std::span<const std::byte> bytes(s.memory, static_cast<std::size_t>(s.length));
        ++tasks_;
        auto* hashes = &stream.hashes;
        workers().post([hashes, bytes] { hashes->update(bytes); }, {worker_done::kind::hashed, index});
    }

    void collect_workers() {
        pool_->take(done_);
        if (pool_->failed() && !error_)
            stop(with_remedies({error_code::io, "a writer thread failed (out of memory?)"}, "free memory or use fewer {0}",
                               {{remedy::fewer_threads, {}}}));
        for (const auto& done : done_) {
            --tasks_;
            if (done.what == worker_done::kind::hashed) hash_done(done.index);
            else copy_done(done.index);
        }
    }

    void hash_done(std::uint32_t index) {
        slot& s = slots_[index];
        s.hashing = false;
        if (s.state == slot_state::written) s.state = slot_state::free;
        const auto check = s.check;
        auto& stream = streams_.at(check);
        stream.busy = false;
        ++stream.hashed;
        if (stream.complete && stream.hashed == stream.produced) {
            report_.checks[check] = stream.hashes.finish(job_.checks[check]);
            streams_.erase(check);
            return;
        }
        dispatch_hash(stream);
    }

    void copy_done(std::uint32_t lane_index) {
        lane& l = lanes_[lane_index];
        l.busy = false;
        const auto& outcome = l.outcome;
        if (outcome.copied > 0) report_progress(outcome.copied);
        if (outcome.copied == l.work.length || outcome.cancelled) return;
        const source_file& source = *job_.sources[l.work.source];
        if (outcome.end_of_source) return stop(detail::source_shrank(source, l.work.input_offset + outcome.copied));
        if (outcome.os_error == ENOSPC) return stop(detail::write_failed(outcome.os_error));
        if (!detail::kernel_copy_unsupported(outcome.os_error)) return stop(detail::read_failed(source, outcome.os_error));
        // This pair of files cannot be copied in the kernel: read and write the rest, and
        // everything after it.
        kernel_copy_ = false;
        piece rest = l.work;
        rest.input_offset += outcome.copied;
        rest.output_offset += outcome.copied;
        rest.length -= outcome.copied;
        requeued_.push_back(rest);
    }

    // Bytes written through the ring; they count toward the next writeback request.
    void progress(std::uint64_t bytes) {
        written_since_writeback_ += bytes;
        report_progress(bytes);
    }

    void report_progress(std::uint64_t bytes) {
        report_.bytes_written += bytes;
        if (options_.on_progress) options_.on_progress(bytes);
    }

    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

    detail::slice_converter converter_{1U << 20};
    std::span<const std::byte> converted_;  // the small convert being staged: converter_'s
    io_uring& ring_;
    int event_fd_;
    bool& event_armed_;
    const write_job& job_;
    const writer_options& options_;
    std::size_t buffer_size_;
    unsigned threads_;
    bool kernel_copy_;
    std::vector<std::uint64_t> sizes_;
    std::unique_ptr<std::byte, free_deleter> memory_;
    std::vector<slot> slots_;
    std::vector<lane> lanes_;
    std::unordered_map<std::uint32_t, check_stream> streams_;
    std::vector<bool> checks_seen_;
    std::unique_ptr<worker_pool> pool_;
    std::vector<worker_done> done_;
    // The plan's operations, a window at a time: an emit being staged (current_) keeps
    // its window, since the next is asked for only when current_ is done.
    detail::operation_cursor cursor_{job_};
    detail::mapped_release released_{job_.sources.size()};
    detail::read_ahead_window small_reads_;  // small copies and converts from sources that are not mapped
    bool plan_done_ = false;
    piece current_;
    std::deque<piece> requeued_;
    std::uint32_t staging_ = none;
    std::uint64_t in_flight_ = 0;  // requests in the ring (not counting the eventfd poll)
    std::uint64_t tasks_ = 0;      // tasks posted to the workers and not yet collected
    bool writeback_in_flight_ = false;
    std::uint64_t written_since_writeback_ = 0;
    std::optional<error> error_;
    write_report report_;
};

// ---------------------------------------------------------------- the writer

class uring_writer final : public plan_writer {
public:
    uring_writer() = default;
    uring_writer(const uring_writer&) = delete;
    uring_writer& operator=(const uring_writer&) = delete;
    ~uring_writer() override {
        // Closing the ring cancels the eventfd poll still armed; only then may the eventfd go.
        if (ring_ready_) io_uring_queue_exit(&ring_);
        if (event_fd_ >= 0) ::close(event_fd_);
    }

    static std::unique_ptr<uring_writer> create() {
        auto writer = std::make_unique<uring_writer>();
        // Sized for the largest buffer ring plus the poll and a writeback request.
        if (io_uring_queue_init(512, &writer->ring_, 0) != 0) return nullptr;
        writer->ring_ready_ = true;
        writer->event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (writer->event_fd_ < 0) return nullptr;
        return writer;
    }

    const char* name() const noexcept override { return "io_uring"; }

    result<write_report> run(const write_job& job, const writer_options& options) override {
        const std::size_t buffer_size = std::clamp<std::size_t>(options.buffer_size, 4096, 64U << 20) / 4096 * 4096;
        const std::size_t buffer_count = std::clamp<std::size_t>(options.buffer_count, 2, 256);
        uring_run state(ring_, event_fd_, event_armed_, job, options, buffer_size, buffer_count);
        auto outcome = state.run();
        if (outcome) outcome->backend = name();
        return outcome;
    }

private:
    io_uring ring_{};
    bool ring_ready_ = false;
    int event_fd_ = -1;
    bool event_armed_ = false;
};

}  // namespace

std::unique_ptr<plan_writer> make_uring_writer() {
    // io_uring_queue_init fails on kernels without io_uring and where a seccomp filter or
    // kernel.io_uring_disabled refuses it; the caller then uses the portable writer.
    return uring_writer::create();
}

}  // namespace onnxstream::io
