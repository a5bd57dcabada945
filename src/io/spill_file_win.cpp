// Windows: the spill file is a hidden temporary opened with FILE_FLAG_DELETE_ON_CLOSE, so
// that it disappears with the process whatever happens (the counterpart of O_TMPFILE).
// The reader opens it again by its final path, sharing deletion as the flag requires.
// Appending goes through the writers' write loop, shared with POSIX (spill_file.cpp).
#include <onnxstream/io/spill_file.hpp>

#include "handle_win.hpp"

#include <random>
#include <string>
#include <utility>

namespace onnxstream::io {
namespace {

std::wstring spill_name() {
    static thread_local std::mt19937_64 generator{std::random_device{}()};
    static constexpr wchar_t alphabet[] = L"abcdefghijklmnopqrstuvwxyz0123456789";
    std::wstring name = L".onnxstream-spill-";
    for (int i = 0; i < 8; ++i) name += alphabet[generator() % (std::size(alphabet) - 1)];
    return name + L".tmp";
}

}  // namespace

spill_file::spill_file(spill_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), folder_(std::move(other.folder_)) {}

spill_file& spill_file::operator=(spill_file&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::CloseHandle(win::to_handle(fd_));
        fd_ = std::exchange(other.fd_, -1);
        size_ = other.size_;
        folder_ = std::move(other.folder_);
    }
    return *this;
}

spill_file::~spill_file() {
    if (fd_ >= 0) ::CloseHandle(win::to_handle(fd_));
}

result<spill_file> spill_file::create(const std::filesystem::path& folder) {
    spill_file spill;
    spill.folder_ = folder.empty() ? std::filesystem::path(".") : folder;
    HANDLE handle = INVALID_HANDLE_VALUE;
    for (int attempt = 0; attempt < 16 && handle == INVALID_HANDLE_VALUE; ++attempt) {
        const auto path = spill.folder_ / spill_name();
        handle = ::CreateFileW(path.c_str(), GENERIC_READ | GENERIC_WRITE | DELETE,
                               FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, CREATE_NEW,
                               FILE_ATTRIBUTE_HIDDEN | FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, nullptr);
        if (handle == INVALID_HANDLE_VALUE && ::GetLastError() != ERROR_FILE_EXISTS)
            return failure(os_failure("cannot create a scratch file in " + spill.folder_.string(), win::last_error(),
                                      "check that the output's folder is writable"));
    }
    if (handle == INVALID_HANDLE_VALUE)
        return failure(error_code::io, "cannot create a scratch file in " + spill.folder_.string());
    spill.fd_ = win::to_descriptor(handle);
    return spill;
}

result<source_file> spill_file::open_source() const {
    std::filesystem::path path;
    if (!win::final_path_of(win::to_handle(fd_), path))
        return failure(os_failure("cannot reopen a scratch file in " + folder_.string(), win::last_error()));
    return source_file::open(path, false);
}

}  // namespace onnxstream::io
