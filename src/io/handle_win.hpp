// What the Windows io files and the server's Windows files share (private to src/). The
// public headers hand files around as `int` descriptors; on Windows that int is the file's
// HANDLE itself: Windows keeps handle values within 32 bits so that they may be truncated
// and sign-extended (documented for 32/64-bit interoperability), and INVALID_HANDLE_VALUE
// becomes -1, the POSIX "no descriptor". No C runtime descriptor table is involved, so no
// CRT limit on open files either.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/io/source_file.hpp>

#include <windows.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

namespace onnxstream::io::win {

[[nodiscard]] inline HANDLE to_handle(int descriptor) noexcept {
    return reinterpret_cast<HANDLE>(static_cast<std::intptr_t>(descriptor));
}

[[nodiscard]] inline int to_descriptor(HANDLE handle) noexcept {
    return handle == INVALID_HANDLE_VALUE || handle == nullptr ? -1 : static_cast<int>(reinterpret_cast<std::intptr_t>(handle));
}

/// A Windows error as the errno the rest of onnxstream knows (messages, hints and error
/// codes are chosen on std::errc values).
[[nodiscard]] inline std::error_code error_of(DWORD code) noexcept {
    int value = EIO;
    switch (code) {
        case ERROR_FILE_NOT_FOUND:
        case ERROR_PATH_NOT_FOUND:
        case ERROR_INVALID_DRIVE:
        case ERROR_BAD_NETPATH:
        case ERROR_BAD_NET_NAME: value = ENOENT; break;
        case ERROR_ACCESS_DENIED:
        case ERROR_WRITE_PROTECT: value = EACCES; break;
        case ERROR_SHARING_VIOLATION:
        case ERROR_LOCK_VIOLATION:
        case ERROR_USER_MAPPED_FILE: value = EBUSY; break;
        case ERROR_DISK_FULL:
        case ERROR_HANDLE_DISK_FULL: value = ENOSPC; break;
        case ERROR_FILE_EXISTS:
        case ERROR_ALREADY_EXISTS: value = EEXIST; break;
        case ERROR_TOO_MANY_OPEN_FILES: value = EMFILE; break;
        case ERROR_INVALID_NAME:
        case ERROR_BAD_PATHNAME:
        case ERROR_INVALID_PARAMETER: value = EINVAL; break;
        case ERROR_DIRECTORY: value = ENOTDIR; break;
        case ERROR_FILENAME_EXCED_RANGE: value = ENAMETOOLONG; break;
        case ERROR_NOT_ENOUGH_MEMORY:
        case ERROR_OUTOFMEMORY: value = ENOMEM; break;
        case ERROR_NOT_SUPPORTED:
        case ERROR_INVALID_FUNCTION: value = ENOTSUP; break;
        case ERROR_NOT_SAME_DEVICE: value = EXDEV; break;
        case ERROR_FILE_TOO_LARGE: value = EFBIG; break;
        case ERROR_OPERATION_ABORTED: value = EINTR; break;
        default: break;
    }
    return {value, std::generic_category()};
}

[[nodiscard]] inline std::error_code last_error() noexcept { return error_of(::GetLastError()); }

/// The identity of an open file: its volume's serial number and its file index, the
/// Windows counterpart of (st_dev, st_ino). Another spelling of a name (case, short 8.3
/// names, `\\?\`, a junction) leads to the same identity.
[[nodiscard]] inline bool identity_of_handle(HANDLE handle, file_identity& identity, BY_HANDLE_FILE_INFORMATION& info) {
    if (!::GetFileInformationByHandle(handle, &info)) return false;
    identity.device = info.dwVolumeSerialNumber;
    identity.inode = (static_cast<std::uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
    return true;
}

/// The path Windows resolved for an open handle (links and junctions followed), without
/// the `\\?\` prefix it comes with: `C:\models\m.onnx`, or `\\server\share\m.onnx`.
[[nodiscard]] inline bool final_path_of(HANDLE handle, std::filesystem::path& out) {
    std::wstring buffer(512, L'\0');
    for (int attempt = 0; attempt < 4; ++attempt) {
        const DWORD length = ::GetFinalPathNameByHandleW(handle, buffer.data(), static_cast<DWORD>(buffer.size()),
                                                         FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
        if (length == 0) return false;
        if (length < buffer.size()) {
            buffer.resize(length);
            if (buffer.rfind(L"\\\\?\\UNC\\", 0) == 0) buffer = L"\\\\" + buffer.substr(8);
            else if (buffer.rfind(L"\\\\?\\", 0) == 0) buffer = buffer.substr(4);
            out = std::filesystem::path(buffer);
            return true;
        }
        buffer.assign(length + 1, L'\0');
    }
    return false;
}

/// Waits for an overlapped request started on `handle` and returns its byte count, or
/// false with GetLastError set.
[[nodiscard]] inline bool finish_overlapped(HANDLE handle, OVERLAPPED& request, BOOL started, DWORD& transferred) {
    if (!started && ::GetLastError() != ERROR_IO_PENDING) return false;
    return ::GetOverlappedResult(handle, &request, &transferred, TRUE) != 0;
}

/// One synchronous positioned read or write of at most 1 GiB (a DWORD count), on a handle
/// opened with or without FILE_FLAG_OVERLAPPED. End of file reads as 0 bytes.
[[nodiscard]] inline bool transfer_at(HANDLE handle, bool write, void* data, std::size_t size, std::uint64_t offset,
                                      DWORD& transferred) {
    OVERLAPPED request{};
    request.Offset = static_cast<DWORD>(offset);
    request.OffsetHigh = static_cast<DWORD>(offset >> 32);
    request.hEvent = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
    if (request.hEvent == nullptr) return false;
    const auto count = static_cast<DWORD>(std::min<std::size_t>(size, 1U << 30));
    transferred = 0;
    const BOOL started = write ? ::WriteFile(handle, data, count, nullptr, &request)
                               : ::ReadFile(handle, data, count, nullptr, &request);
    bool ok = finish_overlapped(handle, request, started, transferred);
    if (!ok && !write && ::GetLastError() == ERROR_HANDLE_EOF) {
        transferred = 0;
        ok = true;
    }
    const DWORD code = ::GetLastError();
    ::CloseHandle(request.hEvent);
    ::SetLastError(code);
    return ok;
}

/// The size of an open file, or false.
[[nodiscard]] inline bool size_of(HANDLE handle, std::uint64_t& size) noexcept {
    LARGE_INTEGER value{};
    if (!::GetFileSizeEx(handle, &value)) return false;
    size = static_cast<std::uint64_t>(value.QuadPart);
    return true;
}

}  // namespace onnxstream::io::win
