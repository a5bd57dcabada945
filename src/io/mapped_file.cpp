#include <onnxstream/io/mapped_file.hpp>

#include "mapped_file_shared.hpp"

#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <system_error>

namespace onnxstream::io {
namespace {

// The guard against SIGBUS (see the header). The handler may only touch what is
// async-signal-safe: blocks of atomics, mmap, sigaction. A block holds a fixed number of
// ranges; when every range is taken, a new block is linked after the last one (by the
// thread that maps, never by the handler) and stays for the life of the process. Every
// mapping is guarded whatever their number: a fixed table of 256 once left the 257th
// mapping open to SIGBUS (merge -j 300 of models sharing a data file died of it).
struct guarded_range {
    std::atomic<bool> used{false};
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
    std::atomic<bool> truncated{false};
};
struct guard_block {
    std::array<guarded_range, 256> ranges;
    std::atomic<guard_block*> next{nullptr};
};
guard_block first_block;
struct sigaction previous_sigbus {};
std::uintptr_t page_size = 4096;
std::once_flag handler_installed;

void forward_sigbus(int signal_number, siginfo_t* info, void* context) {
    if ((previous_sigbus.sa_flags & SA_SIGINFO) != 0 && previous_sigbus.sa_sigaction != nullptr) {
        previous_sigbus.sa_sigaction(signal_number, info, context);
        return;
    }
    if (previous_sigbus.sa_handler != SIG_DFL && previous_sigbus.sa_handler != SIG_IGN) {
        previous_sigbus.sa_handler(signal_number);
        return;
    }
    // The default action: restore it and let the fault happen again (or re-send a signal
    // that did not come from a fault).
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    ::sigaction(SIGBUS, &default_action, nullptr);
    if (info == nullptr || info->si_code <= 0) ::raise(SIGBUS);
}

extern "C" void on_sigbus(int signal_number, siginfo_t* info, void* context) {
    const auto address = info != nullptr ? reinterpret_cast<std::uintptr_t>(info->si_addr) : 0;
    for (auto* block = &first_block; block != nullptr; block = block->next.load(std::memory_order_acquire)) {
        for (auto& range : block->ranges) {
            if (!range.used.load(std::memory_order_acquire)) continue;
            const auto begin = range.begin.load(std::memory_order_relaxed);
            const auto end = range.end.load(std::memory_order_relaxed);
            if (address < begin || address >= end) continue;
            const auto page = address & ~(page_size - 1);
            void* zeros = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                                 -1, 0);
            if (zeros == MAP_FAILED) break;
            range.truncated.store(true, std::memory_order_release);
            return;  // the read is retried, and now finds zeros
        }
    }
    forward_sigbus(signal_number, info, context);
}

void install_handler() {
    const long size = ::sysconf(_SC_PAGESIZE);
    if (size > 0) page_size = static_cast<std::uintptr_t>(size);
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &previous_sigbus);
}

// The range guarding [data, data + size), in a new block when every block is full;
// null only when no memory is left for one.
guarded_range* guard(const void* data, std::size_t size) noexcept {
    install_sigbus_guard();
    for (auto* block = &first_block;;) {
        for (auto& range : block->ranges) {
            bool expected = false;
            if (range.used.load() || !range.used.compare_exchange_strong(expected, true)) continue;
            range.truncated.store(false);
            range.begin.store(reinterpret_cast<std::uintptr_t>(data));
            range.end.store(reinterpret_cast<std::uintptr_t>(data) + size);
            return &range;
        }
        auto* next = block->next.load(std::memory_order_acquire);
        if (next == nullptr) {
            auto* added = new (std::nothrow) guard_block;
            if (added == nullptr) return nullptr;
            // Another thread may have linked one meanwhile: then its block is taken.
            if (block->next.compare_exchange_strong(next, added, std::memory_order_acq_rel)) next = added;
            else delete added;
        }
        block = next;
    }
}

void unguard(guarded_range* range) noexcept {
    if (range == nullptr) return;
    range->end.store(0);
    range->begin.store(0);
    range->used.store(false, std::memory_order_release);
}

}  // namespace

void install_sigbus_guard() noexcept { std::call_once(handler_installed, install_handler); }

struct mapped_file::impl {
    void* data = nullptr;
    std::size_t size = 0;
    guarded_range* guard = nullptr;
    ~impl() {
        unguard(guard);  // before the pages go
        if (data != nullptr) ::munmap(data, size);
    }
};

mapped_file::mapped_file() = default;
mapped_file::mapped_file(mapped_file&&) noexcept = default;
mapped_file& mapped_file::operator=(mapped_file&&) noexcept = default;
mapped_file::~mapped_file() = default;

bool mapped_file::intact() const noexcept { return impl_ == nullptr || !impl_->guard->truncated.load(std::memory_order_acquire); }

result<mapped_file> mapped_file::map(int fd, std::uint64_t size, const std::filesystem::path& display) {
    mapped_file file;
    if (size == 0) return file;
    ONNXSTREAM_TRY(mapping_detail::check_mappable_size(size, display));
    auto state = std::make_unique<impl>();
    // The descriptor itself is mapped (what is open, whatever the path names by now).
    // Boost.Iostreams did the same through /proc/self/fd, at the price of five shared
    // libraries (it links every compression library it supports) loaded by every run.
    void* data = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) {
        const std::error_code why(errno, std::generic_category());  // before building the message may change errno
        return failure(error_code::io, "cannot map " + display.string() + " into memory: " + why.message(),
                       "check that the file is readable and not being changed");
    }
    state->data = data;
    state->size = static_cast<std::size_t>(size);
    state->guard = guard(data, state->size);
    // Unguarded, a read past a cut would end the process: no mapping without its guard.
    if (state->guard == nullptr)
        return failure(error_code::io, "cannot map " + display.string() + " into memory: out of memory",
                       "free memory, or work on fewer models at once");
    file.bytes_ = std::span(static_cast<const std::byte*>(data), state->size);
    file.impl_ = std::move(state);
    return file;
}

void mapped_file::release(std::uint64_t offset, std::uint64_t length) const noexcept {
    if (bytes_.empty() || offset >= bytes_.size()) return;
    static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    // Only whole pages inside the range may be dropped.
    std::uint64_t first = (offset + page - 1) / page * page;
    const std::uint64_t last = std::min<std::uint64_t>(offset + length, bytes_.size()) / page * page;
    auto* base = const_cast<std::byte*>(bytes_.data());
    auto drop = [base](std::uint64_t from, std::uint64_t to) {
        if (to > from) ::madvise(base + from, static_cast<std::size_t>(to - from), MADV_DONTNEED);
    };
    // Private pages are anonymous memory: MADV_DONTNEED would turn them into zeros.
    auto next = std::lower_bound(private_pages_.begin(), private_pages_.end(), first,
                                 [](const byte_range& r, std::uint64_t at) { return r.offset + r.length <= at; });
    for (; next != private_pages_.end() && next->offset < last && first < last; ++next) {
        drop(first, std::min(next->offset, last));
        first = std::max(first, next->offset + next->length);
    }
    if (first < last) drop(first, last);
}

result<void> mapped_file::copy_in_except(int fd, std::span<const byte_range> bulk) {
    if (bytes_.empty() || !private_pages_.empty()) return {};
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t size = bytes_.size();
    const std::uint64_t mapped_end = (size + page - 1) / page * page;
    // The private runs: everything but the whole pages inside a bulk range.
    std::vector<byte_range> runs;
    std::uint64_t from = 0;
    for (const auto& range : bulk) {
        if (range.offset > size || range.length > size - range.offset) break;
        const std::uint64_t first = (range.offset + page - 1) / page * page;
        const std::uint64_t last = (range.offset + range.length) / page * page;
        if (last <= first || first < from) continue;
        if (first > from) runs.push_back({from, first - from});
        from = last;
    }
    if (from < mapped_end) runs.push_back({from, mapped_end - from});
    auto* base = const_cast<std::byte*>(bytes_.data());
    auto broken = [this](std::string what) {
        if (impl_ != nullptr) impl_->guard->truncated.store(true, std::memory_order_release);
        return failure(error_code::io, std::move(what), "check that the file is readable and not being changed");
    };
    for (const auto& run : runs) {
        void* at = base + run.offset;
        // MAP_FIXED replaces the file's pages with fresh anonymous ones in one step.
        if (::mmap(at, static_cast<std::size_t>(run.length), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                   0) == MAP_FAILED)
            return broken("cannot copy the metadata of a mapped file into memory: " +
                          std::error_code(errno, std::generic_category()).message());
        private_pages_.push_back(run);
        const std::uint64_t bytes = std::min(run.offset + run.length, size) - run.offset;
        for (std::uint64_t done = 0; done < bytes;) {
            const ssize_t got = ::pread(fd, base + run.offset + done, static_cast<std::size_t>(bytes - done),
                                        static_cast<off_t>(run.offset + done));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) return broken("cannot read a mapped file: " + std::error_code(errno, std::generic_category()).message());
            if (got == 0) return broken("a mapped file ended early while it was read (it is being changed)");
            done += static_cast<std::uint64_t>(got);
        }
        ::mprotect(at, static_cast<std::size_t>(run.length), PROT_READ);
    }
    return {};
}

}  // namespace onnxstream::io
