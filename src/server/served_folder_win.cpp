// The served folder on Windows (served_folder.hpp says how it differs from POSIX).
// Descriptors are HANDLEs held in an int, as in the io layer: Windows keeps handle values
// within 32 bits, and INVALID_HANDLE_VALUE becomes -1.
#include "served_folder.hpp"

#include "../io/handle_win.hpp"

#include <windows.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cwctype>
#include <system_error>
#include <vector>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

// Descriptors are HANDLEs, as in the io layer.
using io::win::to_descriptor;
using io::win::to_handle;

std::wstring wide(std::string_view utf8) {
    if (utf8.empty()) return {};
    const int size = ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
    std::wstring out(static_cast<std::size_t>(std::max(size, 0)), L'\0');
    if (size > 0) ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), out.data(), size);
    return out;
}

std::string narrow(std::wstring_view text) {
    if (text.empty()) return {};
    const int size = ::WideCharToMultiByte(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), nullptr, 0, nullptr, nullptr);
    std::string out(static_cast<std::size_t>(std::max(size, 0)), '\0');
    if (size > 0)
        ::WideCharToMultiByte(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), out.data(), size, nullptr, nullptr);
    return out;
}

std::string quoted(std::string_view relative) { return "'" + std::string(relative) + "'"; }

error refused(std::string_view relative, std::string why) {
    return error{error_code::unsafe_location, "refusing the path " + quoted(relative) + ": " + std::move(why),
                 "give a path inside the served folder (links are never followed)"};
}

// A DOS device name (CON, NUL, COM1, LPT1.txt, ...): Windows opens the device, wherever it sits.
bool device_name(std::string_view part) {
    auto stem = part.substr(0, part.find('.'));
    while (!stem.empty() && stem.back() == ' ') stem.remove_suffix(1);
    std::string upper(stem);
    for (auto& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
    if (upper == "CON" || upper == "PRN" || upper == "AUX" || upper == "NUL" || upper == "CONIN$" || upper == "CONOUT$")
        return true;
    return upper.size() == 4 && (upper.starts_with("COM") || upper.starts_with("LPT")) && upper[3] >= '0' && upper[3] <= '9';
}

// The components of `relative` ('/'-separated), or why it may not be tried. Windows also
// reads '\' as a separator and ':' as a drive or a stream, and drops a component's trailing
// dots and spaces (so that ".. " would be ".."): all refused, as device names are.
std::string split(std::string_view relative, std::vector<std::string>& parts) {
    if (relative.find('\0') != std::string_view::npos) return "it contains a NUL byte";
    if (!relative.empty() && (relative.front() == '/' || relative.front() == '\\')) return "it is an absolute path";
    std::size_t at = 0;
    while (at <= relative.size()) {
        auto end = relative.find('/', at);
        if (end == std::string_view::npos) end = relative.size();
        const auto part = relative.substr(at, end - at);
        at = end + 1;
        if (part.empty() || part == ".") continue;
        if (part == "..") return "it leaves the served folder with '..'";
        if (part.find_first_of("\\:*?\"<>|") != std::string_view::npos)
            return "a name holds a character Windows reads as a path or a pattern (\\ : * ? \" < > |)";
        if (std::any_of(part.begin(), part.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
            return "a name holds a control character";
        if (part.back() == '.' || part.back() == ' ') return "a name ends with a dot or a space (Windows would drop it)";
        if (device_name(part)) return "a name is a Windows device name";
        parts.emplace_back(part);
    }
    return {};
}

// The long-path form of an absolute path: no length limit and no rewriting of names.
std::wstring long_form(const fs::path& path) {
    const auto& text = path.native();
    if (text.starts_with(L"\\\\?\\")) return text;
    if (text.starts_with(L"\\\\")) return L"\\\\?\\UNC\\" + text.substr(2);
    return L"\\\\?\\" + text;
}

error open_failure(std::string_view relative, DWORD code) {
    switch (code) {
        case ERROR_FILE_NOT_FOUND:
        case ERROR_PATH_NOT_FOUND:
            return error{error_code::missing_data, "nothing at " + quoted(relative), "pick a file in the list"};
        case ERROR_DIRECTORY:
            return error{error_code::invalid_argument, "a part of " + quoted(relative) + " is not a folder", ""};
        case ERROR_FILE_EXISTS:
        case ERROR_ALREADY_EXISTS: return error{error_code::output_exists, quoted(relative) + " already exists", ""};
        default: return os_failure("cannot open " + quoted(relative), {static_cast<int>(code), std::system_category()});
    }
}

// Opens one component as itself (a link or junction is opened, not followed). Folders on
// the way, and a file that `held` (a pinned one, which the library opens by its name), are
// shared for reading and writing but not deletion: while held, none can be renamed or
// replaced. A file only read here (a download) leaves its owner free to rename it.
HANDLE open_component(const std::wstring& path, bool folder, bool held = true) {
    const DWORD access = folder ? FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE : GENERIC_READ;
    const DWORD share = folder || held ? FILE_SHARE_READ | FILE_SHARE_WRITE
                                       : FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
    return ::CreateFileW(path.c_str(), access, share, nullptr, OPEN_EXISTING,
                         FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
}

struct walked {
    std::vector<unique_fd> chain;  // every folder from the first below the root, then the target
    fs::path path;                 // the target's full path
};

// `parts` opened one by one beneath `root` (the last as a folder when `folder`), each
// checked on its handle: never a reparse point, folders where a folder is needed.
result<walked> walk(const fs::path& root, const std::vector<std::string>& parts, std::string_view shown, bool folder, bool held) {
    walked out;
    out.path = root;
    if (parts.empty()) {
        const HANDLE h = open_component(long_form(root), true);
        if (h == INVALID_HANDLE_VALUE) return failure(open_failure(shown, ::GetLastError()));
        out.chain.emplace_back(to_descriptor(h));
        return out;
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const bool last = i + 1 == parts.size();
        const bool want_folder = !last || folder;
        out.path /= wide(parts[i]);
        const HANDLE h = open_component(long_form(out.path), want_folder, !last || held);
        if (h == INVALID_HANDLE_VALUE) {
            const DWORD code = ::GetLastError();
            return failure(open_failure(shown, code == ERROR_FILE_NOT_FOUND && !last ? ERROR_PATH_NOT_FOUND : code));
        }
        out.chain.emplace_back(to_descriptor(h));
        BY_HANDLE_FILE_INFORMATION info{};
        if (!::GetFileInformationByHandle(h, &info)) return failure(open_failure(shown, ::GetLastError()));
        if ((info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0)
            return failure(refused(shown, "it leads through a symbolic link or junction"));
        const bool is_folder = (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
        if (want_folder && !is_folder) return failure(open_failure(shown, ERROR_DIRECTORY));
    }
    return out;
}

result<walked> walk_beneath(const fs::path& root, std::string_view relative, std::string_view shown, bool folder) {
    std::vector<std::string> parts;
    if (const auto why = split(relative, parts); !why.empty()) return failure(refused(shown, why));
    return walk(root, parts, shown, folder, false);
}

std::int64_t unix_seconds(LARGE_INTEGER filetime) {
    constexpr std::int64_t ticks_per_second = 10'000'000;
    constexpr std::int64_t from_1601_to_1970 = 11'644'473'600;
    return filetime.QuadPart / ticks_per_second - from_1601_to_1970;
}

}  // namespace

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::CloseHandle(to_handle(fd_));
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

unique_fd::~unique_fd() {
    if (fd_ >= 0) ::CloseHandle(to_handle(fd_));
}

result<served_folder> served_folder::open(const fs::path& root) {
    std::error_code ec;
    auto real = fs::canonical(root, ec);
    if (ec) return failure(os_failure("cannot open the folder " + root.string(), ec, "give the folder to serve"));
    served_folder folder;
    const HANDLE h = open_component(long_form(real), true);
    if (h == INVALID_HANDLE_VALUE)
        return failure(os_failure("cannot open the folder " + root.string(),
                                  {static_cast<int>(::GetLastError()), std::system_category()}, "give the folder to serve"));
    folder.descriptor_ = unique_fd(to_descriptor(h));
    folder.path_ = std::move(real);
    return folder;
}

result<unique_fd> served_folder::open_beneath(std::string_view relative, int flags, mode_t) const {
    if ((flags & (O_CREAT | O_WRONLY | O_RDWR)) != 0)
        return failure(error_code::invalid_argument, "open_beneath opens for reading only on Windows");
    ONNXSTREAM_ASSIGN(auto found, walk_beneath(path_, relative, relative, (flags & O_DIRECTORY) != 0));
    return std::move(found.chain.back());
}

result<pinned_path> served_folder::pin(std::string_view relative, pin_kind kind) const {
    pinned_path pinned;
    std::vector<std::string> parts;
    if (const auto why = split(relative, parts); !why.empty()) return failure(refused(relative, why));
    pinned.shown = (path_ / fs::path(wide(relative))).lexically_normal();
    if (kind == pin_kind::folder || kind == pin_kind::file) {
        ONNXSTREAM_ASSIGN(auto found, walk(path_, parts, relative, kind == pin_kind::folder, true));
        if (kind == pin_kind::file && !regular_file_size(found.chain.back().get()))
            return failure(error_code::invalid_argument, quoted(relative) + " is not a file", "pick a file in the list");
        pinned.folder = std::move(found.chain.back());
        found.chain.pop_back();
        pinned.chain = std::move(found.chain);
        pinned.path = found.path;
        return pinned;
    }
    if (parts.empty())
        return failure(error_code::invalid_argument, quoted(relative) + " names a folder, not a file", "pick a file");
    const std::string leaf = parts.back();
    parts.pop_back();
    ONNXSTREAM_ASSIGN(auto found, walk(path_, parts, relative, true, true));
    const auto path = found.path / wide(leaf);
    // For messages only, as on POSIX: the leaf is opened by the library by name.
    const HANDLE h = ::CreateFileW(long_form(path).c_str(), FILE_READ_ATTRIBUTES,
                                   FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                                   FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
    const DWORD status_error = h == INVALID_HANDLE_VALUE ? ::GetLastError() : 0;
    if (h != INVALID_HANDLE_VALUE) {
        const unique_fd leaf_handle(to_descriptor(h));
        BY_HANDLE_FILE_INFORMATION info{};
        if (!::GetFileInformationByHandle(h, &info)) return failure(open_failure(relative, ::GetLastError()));
        if ((info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0)
            return failure(refused(relative, "it leads through a symbolic link or junction"));
        if (kind == pin_kind::existing && (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0)
            return failure(error_code::invalid_argument, quoted(relative) + " is not a file", "pick a file in the list");
    } else if (kind == pin_kind::existing) {
        return failure(open_failure(relative, status_error));
    }
    pinned.folder = std::move(found.chain.back());
    found.chain.pop_back();
    pinned.chain = std::move(found.chain);
    pinned.path = path;
    return pinned;
}

result<std::vector<folder_entry>> list_folder(unique_fd folder) {
    std::vector<folder_entry> entries;
    alignas(8) std::array<std::byte, 64 * 1024> buffer{};
    FILE_INFO_BY_HANDLE_CLASS request = FileIdBothDirectoryRestartInfo;
    for (;;) {
        if (!::GetFileInformationByHandleEx(to_handle(folder.get()), request, buffer.data(), static_cast<DWORD>(buffer.size()))) {
            const DWORD code = ::GetLastError();
            if (code == ERROR_NO_MORE_FILES) break;
            return failure(os_failure("cannot list a folder", {static_cast<int>(code), std::system_category()}));
        }
        request = FileIdBothDirectoryInfo;
        for (std::size_t at = 0;;) {
            const auto* info = reinterpret_cast<const FILE_ID_BOTH_DIR_INFO*>(buffer.data() + at);
            const std::wstring_view name(info->FileName, info->FileNameLength / sizeof(wchar_t));
            if (name != L"." && name != L"..") {
                folder_entry entry;
                entry.name = narrow(name);
                const DWORD attributes = info->FileAttributes;
                entry.kind = (attributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0 ? entry_kind::link
                             : (attributes & FILE_ATTRIBUTE_DIRECTORY) != 0   ? entry_kind::folder
                                                                              : entry_kind::file;
                entry.size = entry.kind == entry_kind::file ? static_cast<std::uint64_t>(info->EndOfFile.QuadPart) : 0;
                entry.changed = unix_seconds(info->LastWriteTime);
                entries.push_back(std::move(entry));
            }
            if (info->NextEntryOffset == 0) break;
            at += info->NextEntryOffset;
        }
    }
    return entries;
}

std::optional<std::uint64_t> regular_file_size(int fd) {
    BY_HANDLE_FILE_INFORMATION info{};
    if (::GetFileType(to_handle(fd)) != FILE_TYPE_DISK || !::GetFileInformationByHandle(to_handle(fd), &info) ||
        (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT)) != 0)
        return std::nullopt;
    return (static_cast<std::uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
}

namespace {

long long transfer_at(int fd, bool write, char* buffer, std::size_t size, std::uint64_t offset) {
    OVERLAPPED at{};
    at.Offset = static_cast<DWORD>(offset & 0xFFFFFFFFU);
    at.OffsetHigh = static_cast<DWORD>(offset >> 32);
    const auto wanted = static_cast<DWORD>(std::min<std::size_t>(size, std::size_t{1} << 30));
    DWORD moved = 0;
    const BOOL ok = write ? ::WriteFile(to_handle(fd), buffer, wanted, &moved, &at)
                          : ::ReadFile(to_handle(fd), buffer, wanted, &moved, &at);
    if (!ok) return ::GetLastError() == ERROR_HANDLE_EOF ? 0 : -1;
    return moved;
}

}  // namespace

long long read_at(int fd, char* buffer, std::size_t size, std::uint64_t offset) {
    return transfer_at(fd, false, buffer, size, offset);
}

long long write_at(int fd, const char* buffer, std::size_t size, std::uint64_t offset) {
    return transfer_at(fd, true, const_cast<char*>(buffer), size, offset);
}

void remove_in(int folder, const std::string& name) {
    std::vector<std::string> parts;
    if (!split(name, parts).empty() || parts.size() != 1) return;
    std::wstring path(32768, L'\0');
    const DWORD length = ::GetFinalPathNameByHandleW(to_handle(folder), path.data(), static_cast<DWORD>(path.size()),
                                                     FILE_NAME_NORMALIZED);
    if (length == 0 || length >= path.size()) return;
    path.resize(length);
    path += L'\\';
    path += wide(parts.front());
    (void)::DeleteFileW(path.c_str());
}

std::string file_identity(const pinned_path& file) {
    const HANDLE h = ::CreateFileW(long_form(file.path).c_str(), FILE_READ_ATTRIBUTES,
                                   FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                                   FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
    if (h == INVALID_HANDLE_VALUE) return {};
    const unique_fd held(to_descriptor(h));
    BY_HANDLE_FILE_INFORMATION info{};
    if (!::GetFileInformationByHandle(h, &info) ||
        (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT)) != 0)
        return {};
    std::string key;
    for (const std::uint64_t number :
         {std::uint64_t{info.dwVolumeSerialNumber}, (std::uint64_t{info.nFileIndexHigh} << 32) | info.nFileIndexLow,
          (std::uint64_t{info.nFileSizeHigh} << 32) | info.nFileSizeLow,
          (std::uint64_t{info.ftLastWriteTime.dwHighDateTime} << 32) | info.ftLastWriteTime.dwLowDateTime})
        key += '\0' + std::to_string(number);
    return key;
}

std::string show_pinned(std::string text, std::span<const pinned_path* const>, bool) {
    // A pin names the place itself (its real path): nothing to replace.
    return text;
}

}  // namespace onnxstream::server
