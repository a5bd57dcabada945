#include <onnxstream/io/output_file.hpp>

#include "output_file_shared.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace onnxstream::io {
namespace {

namespace fs = std::filesystem;

using output_detail::existing_kind;
using output_detail::folder_of;
using output_detail::human_bytes;
using output_detail::outputs_registry;
using output_detail::temporary_name;
using output_detail::unregister_name;

// Callers hold the registry's mutex.
void register_name(output_detail::output_registry& r, const std::string& name) { r.names.push_back(name); }

existing_kind kind_of(mode_t mode) {
    if (S_ISREG(mode)) return existing_kind::regular;
    if (S_ISLNK(mode)) return existing_kind::link;
    if (S_ISFIFO(mode)) return existing_kind::fifo;
    if (S_ISCHR(mode)) return existing_kind::character_device;
    if (S_ISBLK(mode)) return existing_kind::block_device;
    if (S_ISSOCK(mode)) return existing_kind::socket;
    if (S_ISDIR(mode)) return existing_kind::directory;
    return existing_kind::other;
}

error not_regular(const fs::path& destination, mode_t mode, bool during) {
    return output_detail::not_regular(destination, kind_of(mode), during);
}

// One output's way through a commit.
struct step {
    output_file* file = nullptr;
    std::string staged;   // the new bytes under a hidden name in the destination's folder
    std::string backup;   // where the replaced file waits until the transaction is done
    bool placed = false;  // the destination now holds the new bytes
    bool anonymous = false;
};

std::string in_folder(const fs::path& destination, const std::string& name) { return (folder_of(destination) / name).string(); }

// Gives an anonymous temporary a name beside its destination.
result<void> stage(step& s, int fd) {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    for (int attempt = 0; attempt < 16; ++attempt) {
        s.staged = in_folder(s.file->destination(), temporary_name(".tmp"));
        if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, s.staged.c_str(), AT_SYMLINK_FOLLOW) == 0) return {};
        if (errno != EEXIST) break;
    }
    const std::error_code os(errno, std::generic_category());
    s.staged.clear();
    return failure(os_failure("cannot give the output " + s.file->destination().string() + " its name", os,
                              "the file system must allow hard links, and /proc must be mounted"));
}

// Moves the staged file over the destination, keeping what was there as `backup`.
result<void> place(step& s, bool overwrite) {
    const auto destination = s.file->destination().string();
    auto os = [&](const char* what) {
        const std::error_code code(errno, std::generic_category());
        return failure(os_failure(what + (" " + destination), code));
    };
    if (overwrite) {
        if (::renameat2(AT_FDCWD, s.staged.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE) == 0) {
            // The staged name now holds what was at the destination: only a regular file
            // may be replaced, whatever appeared there while we worked.
            struct stat old {};
            if (::lstat(s.staged.c_str(), &old) == 0 && !S_ISREG(old.st_mode)) {
                ::renameat2(AT_FDCWD, s.staged.c_str(), AT_FDCWD, destination.c_str(), RENAME_EXCHANGE);
                return failure(not_regular(destination, old.st_mode, true));
            }
            s.backup = std::exchange(s.staged, {});
            s.placed = true;
            return {};
        }
        if (errno != ENOENT) {
            if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return os("cannot move the output into place as");
            // No RENAME_EXCHANGE here: keep the old file under a second name, then rename.
            struct stat old {};
            if (::lstat(destination.c_str(), &old) == 0) {
                if (!S_ISREG(old.st_mode)) return failure(not_regular(destination, old.st_mode, true));
                for (int attempt = 0; attempt < 16 && s.backup.empty(); ++attempt) {
                    auto name = in_folder(destination, temporary_name(".old"));
                    if (::link(destination.c_str(), name.c_str()) == 0) s.backup = std::move(name);
                    else if (errno != EEXIST) return os("cannot keep a backup of");
                }
                if (s.backup.empty()) return os("cannot keep a backup of");
            }
            if (::rename(s.staged.c_str(), destination.c_str()) != 0) {
                const int code = errno;
                if (!s.backup.empty()) ::unlink(s.backup.c_str());
                s.backup.clear();
                errno = code;
                return os("cannot move the output into place as");
            }
            s.staged.clear();
            s.placed = true;
            return {};
        }
    }
    // Nothing to replace: link + unlink refuses a destination that appeared meanwhile.
    if (::link(s.staged.c_str(), destination.c_str()) == 0) {
        ::unlink(s.staged.c_str());
    } else if (errno == EEXIST) {
        return failure(output_detail::appeared_while_writing(destination));
    } else if (::renameat2(AT_FDCWD, s.staged.c_str(), AT_FDCWD, destination.c_str(), RENAME_NOREPLACE) != 0) {
        if (errno == EEXIST) return failure(output_detail::appeared_while_writing(destination));
        return os("cannot move the output into place as");
    }
    s.staged.clear();
    s.placed = true;
    return {};
}

// Undoes a placed step: the replaced file comes back, a new one goes.
void roll_back(step& s) noexcept {
    if (!s.placed) return;
    const auto destination = s.file->destination().string();
    if (!s.backup.empty()) {
        if (::rename(s.backup.c_str(), destination.c_str()) == 0) s.backup.clear();
    } else {
        ::unlink(destination.c_str());
    }
    s.placed = false;
}

}  // namespace

void output_detail::close_output_descriptor(int descriptor) noexcept { ::close(descriptor); }

void output_detail::remove_temporary_named(const fs::path::string_type& name) noexcept { ::unlink(name.c_str()); }

result<output_file> output_file::create(const fs::path& destination, std::uint64_t size, const output_options& options) {
    output_file file(destination, size, options.overwrite);
    // lstat: a dangling symbolic link exists too.
    struct stat existing {};
    const bool exists = ::lstat(destination.c_str(), &existing) == 0;
    ONNXSTREAM_ASSIGN(const auto folder,
                      output_detail::check_destination(destination, exists ? kind_of(existing.st_mode) : existing_kind::none,
                                                       options.overwrite));
    {
        auto& r = outputs_registry();
        ONNXSTREAM_ASSIGN(const auto lock, output_detail::lock_unless_abandoned(r));
        if (options.anonymous) {
            file.fd_ = ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
            if (file.fd_ < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT)
                return failure(os_failure("cannot create a file in " + folder.string(), {errno, std::generic_category()},
                                          "check that the output folder exists and is writable"));
        }
        for (int attempt = 0; attempt < 16 && file.fd_ < 0; ++attempt) {
            file.temporary_ = folder / temporary_name(".tmp");
            file.fd_ = ::open(file.temporary_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (file.fd_ < 0 && errno != EEXIST) {
                const std::error_code os(errno, std::generic_category());
                file.temporary_.clear();
                return failure(os_failure("cannot create a file in " + folder.string(), os,
                                          "check that the output folder exists and is writable"));
            }
        }
        if (file.fd_ < 0) {
            file.temporary_.clear();
            return failure(error_code::io, "cannot create a temporary file in " + folder.string());
        }
        if (!file.temporary_.empty()) {
            try {
                register_name(r, file.temporary_.native());
            } catch (const std::bad_alloc&) {
                ::unlink(file.temporary_.c_str());
                file.temporary_.clear();
                return failure(error_code::io, "out of memory while creating the output " + destination.string());
            }
        }
    }
    if (exists) {
        // The replacement looks like what it replaces: same permissions (a 0600 file
        // stays private, from the first byte on) and, where allowed, the same owner.
        mode_t mode = existing.st_mode & 07777;
        // Not ours to give: the file stays ours, and never set-user/group-ID for us.
        if (::fchown(file.fd_, existing.st_uid, existing.st_gid) != 0) mode &= ~mode_t{S_ISUID | S_ISGID};
        ::fchmod(file.fd_, mode);
    }
    if (size > 0) {
        int rc = options.preallocate ? ::posix_fallocate(file.fd_, 0, static_cast<off_t>(size)) : EOPNOTSUPP;
        if (rc == EOPNOTSUPP || rc == EINVAL) rc = ::ftruncate(file.fd_, static_cast<off_t>(size)) == 0 ? 0 : errno;
        if (rc != 0) {
            return failure(output_detail::reserve_failure(destination, size, {rc, std::generic_category()}, "file system"));
        }
    }
    return file;
}

result<void> output_file::flush_to_disk() const {
    if (fd_ < 0 || ::fsync(fd_) != 0)
        return failure(
            os_failure("cannot flush " + destination_.string() + " to disk", {fd_ < 0 ? EBADF : errno, std::generic_category()}));
    return {};
}

std::filesystem::path output_file::readable_path() const {
    if (!temporary_.empty()) return temporary_;
    return std::filesystem::path("/proc/self/fd") / std::to_string(fd_);
}

result<void> commit_outputs(std::span<output_file* const> outputs) {
    // Every failure below leaves each output discarded (its temporary removed).
    output_detail::discard_unless_committed guard{outputs};
    ONNXSTREAM_ASSIGN(auto lock, output_detail::flush_and_lock_for_commit(outputs));
    auto& r = outputs_registry();
    std::vector<step> steps(outputs.size());
    std::vector<std::string> registered;  // names given here to anonymous temporaries
    auto release = [&](bool remove) {
        for (auto& s : steps)
            if (remove && s.anonymous && !s.staged.empty()) ::unlink(s.staged.c_str());
        for (const auto& name : registered) unregister_name(r, name);
    };
    // First every output gets a name beside its destination, then the moves follow each
    // other with no other work between them.
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        auto& s = steps[i];
        s.file = outputs[i];
        s.anonymous = s.file->temporary_.empty();
        if (!s.anonymous) {
            s.staged = s.file->temporary_.native();
            continue;
        }
        registered.reserve(outputs.size());
        if (auto staged = stage(s, s.file->fd_); !staged) {
            release(true);
            return staged;
        }
        registered.push_back(s.staged);
        register_name(r, s.staged);
    }
    for (std::size_t i = 0; i < steps.size(); ++i) {
        auto placed = place(steps[i], steps[i].file->overwrite_);
        if (!steps[i].anonymous && steps[i].staged.empty()) {
            // The named temporary was moved (into place, or out of the way with the
            // replaced file in it): the output no longer owns that name.
            unregister_name(r, steps[i].file->temporary_.native());
            steps[i].file->temporary_.clear();
        }
        if (!placed) {
            for (std::size_t j = i + 1; j-- > 0;) roll_back(steps[j]);
            // A backup that could not be put back stays, named, rather than be lost.
            release(true);
            return placed;
        }
    }
    for (auto& s : steps) {
        if (!s.backup.empty()) ::unlink(s.backup.c_str());
        ::close(std::exchange(s.file->fd_, -1));
    }
    release(false);
    lock.unlock();
    guard.armed = false;
    std::vector<fs::path> folders;
    for (const auto* file : outputs) {
        const auto folder = folder_of(file->destination_);
        if (std::find(folders.begin(), folders.end(), folder) != folders.end()) continue;
        folders.push_back(folder);
        const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (folder_fd >= 0) {
            ::fsync(folder_fd);
            ::close(folder_fd);
        }
    }
    return {};
}

}  // namespace onnxstream::io
