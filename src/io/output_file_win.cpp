// Windows: the temporary is a hidden file (.onnxstream-XXXXXXXX.tmp) beside the
// destination, opened for overlapped I/O and shared for deletion so that it can be renamed
// while open. A commit flushes it (FlushFileBuffers) and moves it into place with
// MoveFileExW(MOVEFILE_WRITE_THROUGH), the replaced file first moved aside as a backup
// (.onnxstream-XXXXXXXX.old) and only removed once every output of the transaction is in
// place; on a failure every backup is moved back. Windows has no O_TMPFILE: a process
// killed outright (TerminateProcess) can leave the hidden .tmp behind; Ctrl-C and every
// failure remove it.
#include <onnxstream/io/output_file.hpp>

#include "handle_win.hpp"
#include "output_file_shared.hpp"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace onnxstream::io {
namespace {

namespace fs = std::filesystem;

using output_detail::existing_kind;
using output_detail::folder_of;
using output_detail::not_regular;
using output_detail::outputs_registry;
using output_detail::temporary_name;
using output_detail::unregister_name;

// What is at `path`, without following a link: missing, a regular file, or something
// onnxstream never replaces (a folder, a link or junction, a device name).
existing_kind kind_at(const fs::path& path) {
    const DWORD attributes = ::GetFileAttributesW(path.c_str());
    if (attributes == INVALID_FILE_ATTRIBUTES) return existing_kind::none;
    if ((attributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0) return existing_kind::link;
    if ((attributes & FILE_ATTRIBUTE_DIRECTORY) != 0) return existing_kind::directory;
    if ((attributes & FILE_ATTRIBUTE_DEVICE) != 0) return existing_kind::other;
    return existing_kind::regular;
}

struct step {
    output_file* file = nullptr;
    std::wstring backup;  // where the replaced file waits until the transaction is done
    bool placed = false;
};

// Moves the temporary over the destination, the replaced file kept as `backup`.
result<void> place(step& s, const fs::path& temporary, bool overwrite) {
    const fs::path& destination = s.file->destination();
    const auto kind = kind_at(destination);
    if (kind != existing_kind::none) {
        if (!overwrite) return failure(output_detail::appeared_while_writing(destination));
        if (kind != existing_kind::regular) return failure(not_regular(destination, kind, true));
        for (int attempt = 0; attempt < 16 && s.backup.empty(); ++attempt) {
            auto name = (folder_of(destination) / temporary_name(".old")).native();
            if (::MoveFileExW(destination.c_str(), name.c_str(), MOVEFILE_WRITE_THROUGH)) s.backup = std::move(name);
            else if (::GetLastError() != ERROR_ALREADY_EXISTS && ::GetLastError() != ERROR_FILE_EXISTS)
                return failure(os_failure("cannot keep a backup of " + destination.string(), win::last_error()));
        }
        if (s.backup.empty()) return failure(error_code::io, "cannot keep a backup of " + destination.string());
    }
    // No REPLACE_EXISTING: a destination that appeared since is refused, never overwritten.
    if (!::MoveFileExW(temporary.c_str(), destination.c_str(), MOVEFILE_WRITE_THROUGH)) {
        const DWORD code = ::GetLastError();
        if (!s.backup.empty() && ::MoveFileExW(s.backup.c_str(), destination.c_str(), MOVEFILE_WRITE_THROUGH)) s.backup.clear();
        if (code == ERROR_ALREADY_EXISTS || code == ERROR_FILE_EXISTS)
            return failure(output_detail::appeared_while_writing(destination));
        return failure(os_failure("cannot move the output into place as " + destination.string(), win::error_of(code)));
    }
    s.placed = true;
    return {};
}

// Undoes a placed step: the replaced file comes back over the new one, or the new goes.
void roll_back(step& s) noexcept {
    if (!s.placed) return;
    const auto& destination = s.file->destination();
    if (!s.backup.empty()) {
        if (::MoveFileExW(s.backup.c_str(), destination.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
            s.backup.clear();
    } else {
        ::DeleteFileW(destination.c_str());
    }
    s.placed = false;
}

}  // namespace

void output_detail::close_output_descriptor(int descriptor) noexcept { ::CloseHandle(win::to_handle(descriptor)); }

void output_detail::remove_temporary_named(const fs::path::string_type& name) noexcept { ::DeleteFileW(name.c_str()); }

result<output_file> output_file::create(const fs::path& destination, std::uint64_t size, const output_options& options) {
    output_file file(destination, size, options.overwrite);
    ONNXSTREAM_ASSIGN(const auto folder, output_detail::check_destination(destination, kind_at(destination), options.overwrite));
    HANDLE handle = INVALID_HANDLE_VALUE;
    {
        auto& r = outputs_registry();
        ONNXSTREAM_ASSIGN(const auto lock, output_detail::lock_unless_abandoned(r));
        for (int attempt = 0; attempt < 16 && handle == INVALID_HANDLE_VALUE; ++attempt) {
            file.temporary_ = folder / temporary_name(".tmp");
            handle = ::CreateFileW(file.temporary_.c_str(), GENERIC_READ | GENERIC_WRITE | DELETE,
                                   FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, CREATE_NEW,
                                   FILE_ATTRIBUTE_HIDDEN | FILE_FLAG_OVERLAPPED, nullptr);
            if (handle == INVALID_HANDLE_VALUE && ::GetLastError() != ERROR_FILE_EXISTS) {
                const auto os = win::last_error();
                file.temporary_.clear();
                return failure(os_failure("cannot create a file in " + folder.string(), os,
                                          "check that the output folder exists and is writable"));
            }
        }
        if (handle == INVALID_HANDLE_VALUE) {
            file.temporary_.clear();
            return failure(error_code::io, "cannot create a temporary file in " + folder.string());
        }
        file.fd_ = win::to_descriptor(handle);
        try {
            r.names.push_back(file.temporary_.native());
        } catch (const std::bad_alloc&) {
            ::CloseHandle(handle);
            file.fd_ = -1;
            ::DeleteFileW(file.temporary_.c_str());
            file.temporary_.clear();
            return failure(error_code::io, "out of memory while creating the output " + destination.string());
        }
    }
    if (size > 0) {
        // Reserving the clusters finds a full disk now; the end of file makes it `size` long.
        // A file system (or wine) that cannot reserve clusters gets the size alone.
        bool ok = true;
        if (options.preallocate) {
            FILE_ALLOCATION_INFO allocation{};
            allocation.AllocationSize.QuadPart = static_cast<LONGLONG>(size);
            ok = ::SetFileInformationByHandle(handle, FileAllocationInfo, &allocation, sizeof allocation) != 0 ||
                 (::GetLastError() != ERROR_DISK_FULL && ::GetLastError() != ERROR_HANDLE_DISK_FULL);
        }
        if (ok) {
            FILE_END_OF_FILE_INFO end{};
            end.EndOfFile.QuadPart = static_cast<LONGLONG>(size);
            ok = ::SetFileInformationByHandle(handle, FileEndOfFileInfo, &end, sizeof end) != 0;
        }
        if (!ok) {
            return failure(output_detail::reserve_failure(destination, size, win::last_error(), "drive"));
        }
    }
    return file;
}

result<void> output_file::flush_to_disk() const {
    if (fd_ < 0 || !::FlushFileBuffers(win::to_handle(fd_)))
        return failure(os_failure("cannot flush " + destination_.string() + " to disk", win::last_error()));
    return {};
}

std::filesystem::path output_file::readable_path() const { return temporary_; }

result<void> commit_outputs(std::span<output_file* const> outputs) {
    output_detail::discard_unless_committed guard{outputs};
    ONNXSTREAM_ASSIGN(auto lock, output_detail::flush_and_lock_for_commit(outputs));
    auto& r = outputs_registry();
    std::vector<step> steps(outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        auto& s = steps[i];
        s.file = outputs[i];
        auto placed = place(s, s.file->temporary_, s.file->overwrite_);
        if (!placed) {
            for (std::size_t j = i + 1; j-- > 0;) roll_back(steps[j]);
            return placed;
        }
    }
    // Every output is in place: the temporaries' names are gone, the backups may go.
    for (auto& s : steps) {
        if (!s.backup.empty()) ::DeleteFileW(s.backup.c_str());
        unregister_name(r, s.file->temporary_.native());
        s.file->temporary_.clear();
        ::CloseHandle(win::to_handle(std::exchange(s.file->fd_, -1)));
    }
    lock.unlock();
    guard.armed = false;
    return {};
}

}  // namespace onnxstream::io
