// Windows: a read-only view of the file's own handle (CreateFileMapping + MapViewOfFile),
// so the mapping is of exactly the file that was opened and checked. Windows refuses to
// truncate a file while a view of it exists (ERROR_USER_MAPPED_FILE), so the SIGBUS guard
// of the POSIX version has no counterpart: a mapping here stays intact. Nor does
// copy_in_except: the large-folio faults it works around are Linux's.
#include <onnxstream/io/mapped_file.hpp>

#include "handle_win.hpp"
#include "mapped_file_shared.hpp"

namespace onnxstream::io {

struct mapped_file::impl {
    HANDLE mapping = nullptr;
    const void* view = nullptr;
    impl() = default;
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;
    ~impl() {
        if (view != nullptr) ::UnmapViewOfFile(view);
        if (mapping != nullptr) ::CloseHandle(mapping);
    }
};

mapped_file::mapped_file() = default;
mapped_file::mapped_file(mapped_file&&) noexcept = default;
mapped_file& mapped_file::operator=(mapped_file&&) noexcept = default;
mapped_file::~mapped_file() = default;

bool mapped_file::intact() const noexcept { return true; }

void install_sigbus_guard() noexcept {}

result<void> mapped_file::copy_in_except(int, std::span<const byte_range>) { return {}; }

result<mapped_file> mapped_file::map(int fd, std::uint64_t size, const std::filesystem::path& display) {
    mapped_file file;
    if (size == 0) return file;
    ONNXSTREAM_TRY(mapping_detail::check_mappable_size(size, display));
    auto state = std::make_unique<impl>();
    // The view is exactly `size` bytes: a file grown since it was opened maps as it was.
    state->mapping = ::CreateFileMappingW(win::to_handle(fd), nullptr, PAGE_READONLY, static_cast<DWORD>(size >> 32),
                                          static_cast<DWORD>(size), nullptr);
    if (state->mapping != nullptr) state->view = ::MapViewOfFile(state->mapping, FILE_MAP_READ, 0, 0, static_cast<SIZE_T>(size));
    if (state->view == nullptr)
        return failure(os_failure("cannot map " + display.string() + " into memory", win::last_error(),
                                  "check that the file is readable and not being changed"));
    file.bytes_ = std::span(static_cast<const std::byte*>(state->view), static_cast<std::size_t>(size));
    file.impl_ = std::move(state);
    return file;
}

void mapped_file::release(std::uint64_t offset, std::uint64_t length) const noexcept {
    if (bytes_.empty() || offset >= bytes_.size()) return;
    constexpr std::uint64_t page = 4096;
    const std::uint64_t first = (offset + page - 1) / page * page;
    const std::uint64_t last = std::min<std::uint64_t>(offset + length, bytes_.size()) / page * page;
    if (last <= first) return;
    // Unlocking pages that are not locked takes them out of the working set (the
    // documented way to trim part of one); the file's pages stay in the cache.
    (void)::VirtualUnlock(const_cast<std::byte*>(bytes_.data()) + first, static_cast<SIZE_T>(last - first));
}

}  // namespace onnxstream::io
