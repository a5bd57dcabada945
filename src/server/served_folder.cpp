#include "served_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <vector>

namespace onnxstream::server {

namespace fs = std::filesystem;

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

unique_fd::~unique_fd() {
    if (fd_ >= 0) ::close(fd_);
}

namespace {

std::string quoted(std::string_view relative) { return "'" + std::string(relative) + "'"; }

error refused(std::string_view relative, std::string why) {
    return error{error_code::unsafe_location, "refusing the path " + quoted(relative) + ": " + std::move(why),
                 "give a path inside the served folder (links are never followed)"};
}

// Why `relative` may not even be tried, or empty. The kernel refuses these too (EXDEV);
// checking first only words the answer.
std::string unsafe_because(std::string_view relative) {
    if (relative.find('\0') != std::string_view::npos) return "it contains a NUL byte";
    if (!relative.empty() && (relative.front() == '/' || relative.front() == '\\')) return "it is an absolute path";
    std::size_t at = 0;
    while (at <= relative.size()) {
        auto end = relative.find('/', at);
        if (end == std::string_view::npos) end = relative.size();
        if (relative.substr(at, end - at) == "..") return "it leaves the served folder with '..'";
        at = end + 1;
    }
    return {};
}

error open_failure(std::string_view relative, int code) {
    switch (code) {
        case ELOOP:
        case EXDEV: return refused(relative, "it leads through a symbolic link or out of the served folder");
        case ENOENT: return error{error_code::missing_data, "nothing at " + quoted(relative), "pick a file in the list"};
        case ENOTDIR: return error{error_code::invalid_argument, "a part of " + quoted(relative) + " is not a folder", ""};
        case EEXIST: return error{error_code::output_exists, quoted(relative) + " already exists", ""};
        default: return os_failure("cannot open " + quoted(relative), {code, std::generic_category()});
    }
}

long open_with_openat2(int folder, const char* relative, int flags, mode_t mode) {
    open_how how{};
    how.flags = static_cast<decltype(how.flags)>(static_cast<unsigned>(flags));
    how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
    how.resolve = static_cast<decltype(how.resolve)>(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    // EAGAIN: a rename raced the walk and the kernel could not prove the result stays
    // beneath; it asks to try again.
    for (int attempt = 0;; ++attempt) {
        const long fd = ::syscall(SYS_openat2, folder, relative, &how, sizeof how);
        if (fd >= 0 || (errno != EINTR && errno != EAGAIN) || attempt == 16) return fd;
    }
}

// For kernels before 5.6: the same walk by hand, one component per openat, none of them
// allowed to be a link (O_NOFOLLOW; an O_PATH open would take the link itself, so the
// last component is checked on the descriptor). Returns -1 with errno set on failure.
int open_by_walk(int folder, std::string_view relative, int flags, mode_t mode) {
    std::vector<std::string> parts;
    std::size_t at = 0;
    while (at <= relative.size()) {
        auto end = relative.find('/', at);
        if (end == std::string_view::npos) end = relative.size();
        const auto part = relative.substr(at, end - at);
        if (!part.empty() && part != ".") parts.emplace_back(part);
        at = end + 1;
    }
    unique_fd current(::fcntl(folder, F_DUPFD_CLOEXEC, 0));
    if (current.get() < 0) return -1;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        const int next = ::openat(current.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            const int code = errno;
            struct stat st {};
            errno = ::fstatat(current.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) ? ELOOP
                                                                                                                     : code;
            return -1;
        }
        current = unique_fd(next);
    }
    const char* last = parts.empty() ? "." : parts.back().c_str();
    unique_fd opened(::openat(current.get(), last, flags | O_NOFOLLOW | O_CLOEXEC, mode));
    if (opened.get() < 0) return -1;
    struct stat st {};
    if (::fstat(opened.get(), &st) != 0) return -1;
    if (S_ISLNK(st.st_mode)) {
        errno = ELOOP;
        return -1;
    }
    return opened.release();
}

// `relative` opened beneath `folder`; failures are worded for `shown` (the path the
// caller asked for, of which `relative` may be the folder part).
result<unique_fd> open_in(int folder, std::string_view relative, std::string_view shown, int flags, mode_t mode) {
    if (const auto why = unsafe_because(relative); !why.empty()) return failure(refused(shown, why));
    const std::string name = relative.empty() ? std::string(".") : std::string(relative);
    long fd = open_with_openat2(folder, name.c_str(), flags | O_CLOEXEC, mode);
    if (fd < 0 && errno == ENOSYS) fd = open_by_walk(folder, name, flags, mode);
    if (fd < 0) return failure(open_failure(shown, errno));
    return unique_fd(static_cast<int>(fd));
}

}  // namespace

result<served_folder> served_folder::open(const fs::path& root) {
    std::error_code ec;
    auto real = fs::canonical(root, ec);
    if (ec) return failure(os_failure("cannot open the folder " + root.string(), ec, "give the folder to serve"));
    served_folder folder;
    folder.descriptor_ = unique_fd(::open(real.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (folder.descriptor_.get() < 0)
        return failure(
            os_failure("cannot open the folder " + root.string(), {errno, std::generic_category()}, "give the folder to serve"));
    folder.path_ = std::move(real);
    return folder;
}

result<unique_fd> served_folder::open_beneath(std::string_view relative, int flags, mode_t mode) const {
    return open_in(descriptor_.get(), relative, relative, flags, mode);
}

result<pinned_path> served_folder::pin(std::string_view relative, pin_kind kind) const {
    pinned_path pinned;
    const auto shown = (path_ / fs::path(std::string(relative))).lexically_normal();
    if (kind == pin_kind::folder || kind == pin_kind::file) {
        // O_NONBLOCK: a FIFO put there must not hang the open.
        ONNXSTREAM_ASSIGN(pinned.folder,
                          open_beneath(relative, kind == pin_kind::folder ? O_PATH | O_DIRECTORY : O_RDONLY | O_NONBLOCK));
        struct stat st {};
        if (kind == pin_kind::file && (::fstat(pinned.folder.get(), &st) != 0 || !S_ISREG(st.st_mode)))
            return failure(error_code::invalid_argument, quoted(relative) + " is not a file", "pick a file in the list");
        pinned.path = "/proc/self/fd/" + std::to_string(pinned.folder.get());
        pinned.shown = shown;
        return pinned;
    }
    const auto slash = relative.rfind('/');
    const auto parent = slash == std::string_view::npos ? std::string_view() : relative.substr(0, slash);
    const auto leaf = slash == std::string_view::npos ? relative : relative.substr(slash + 1);
    if (const auto why = unsafe_because(relative); !why.empty()) return failure(refused(relative, why));
    if (leaf.empty() || leaf == ".")
        return failure(error_code::invalid_argument, quoted(relative) + " names a folder, not a file", "pick a file");
    ONNXSTREAM_ASSIGN(pinned.folder, open_in(descriptor_.get(), parent, relative, O_PATH | O_DIRECTORY, 0));
    const std::string leaf_name(leaf);
    struct stat st {};
    const bool exists = ::fstatat(pinned.folder.get(), leaf_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    const int status_error = exists ? 0 : errno;
    // For messages only: what the library opens through the pinned folder is a name. An
    // output is never a link it follows (io::output_file refuses one, and a rename
    // replaces the link itself). A model, which must be opened by a name in its folder
    // (its data files are looked for beside it), could still be swapped for a link
    // between this check and the library's open: closing that needs a library that takes
    // a descriptor. Data files given in a field are pinned as files (pin_kind::file).
    if (exists && S_ISLNK(st.st_mode)) return failure(open_failure(relative, ELOOP));
    if (kind == pin_kind::existing) {
        if (!exists) return failure(open_failure(relative, status_error));
        if (!S_ISREG(st.st_mode))
            return failure(error_code::invalid_argument, quoted(relative) + " is not a file", "pick a file in the list");
    }
    pinned.path = fs::path("/proc/self/fd/" + std::to_string(pinned.folder.get())) / leaf_name;
    pinned.shown = shown;
    return pinned;
}

namespace {

std::string json_escaped(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            static constexpr char digits[] = "0123456789abcdef";
            out += "\\u00";
            out += digits[u >> 4];
            out += digits[u & 0xF];
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

result<std::vector<folder_entry>> list_folder(unique_fd folder) {
    DIR* listing = ::fdopendir(folder.get());
    if (listing == nullptr) return failure(os_failure("cannot list a folder", {errno, std::generic_category()}));
    (void)folder.release();  // the listing owns it now
    std::vector<folder_entry> entries;
    while (const dirent* d = ::readdir(listing)) {
        const std::string_view name = d->d_name;
        if (name == "." || name == "..") continue;
        struct stat st {};
        if (::fstatat(::dirfd(listing), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        folder_entry entry;
        entry.name = name;
        entry.kind = S_ISLNK(st.st_mode)   ? entry_kind::link
                     : S_ISDIR(st.st_mode) ? entry_kind::folder
                     : S_ISREG(st.st_mode) ? entry_kind::file
                                           : entry_kind::other;
        entry.size = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
        entry.changed = static_cast<std::int64_t>(st.st_ctime);
        entries.push_back(std::move(entry));
    }
    ::closedir(listing);
    return entries;
}

std::optional<std::uint64_t> regular_file_size(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return static_cast<std::uint64_t>(st.st_size);
}

long long read_at(int fd, char* buffer, std::size_t size, std::uint64_t offset) {
    for (;;) {
        const auto n = ::pread(fd, buffer, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        return n;
    }
}

long long write_at(int fd, const char* buffer, std::size_t size, std::uint64_t offset) {
    for (;;) {
        const auto n = ::pwrite(fd, buffer, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        return n;
    }
}

void remove_in(int folder, const std::string& name) { (void)::unlinkat(folder, name.c_str(), 0); }

std::string file_identity(const pinned_path& file) {
    struct stat st {};
    if (::fstatat(file.folder.get(), file.path.filename().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return {};
    std::string key;
    for (const auto number :
         {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
          static_cast<std::uint64_t>(st.st_mtim.tv_sec), static_cast<std::uint64_t>(st.st_mtim.tv_nsec)})
        key += '\0' + std::to_string(number);
    return key;
}

std::string show_pinned(std::string text, std::span<const pinned_path* const> pins, bool json) {
    for (const auto* pin : pins) {
        if (pin == nullptr || pin->folder.get() < 0) continue;
        const std::string prefix = "/proc/self/fd/" + std::to_string(pin->folder.get());
        const auto folder = pin->path.native() == prefix ? pin->shown : pin->shown.parent_path();
        const std::string replacement = json ? json_escaped(folder.native()) : folder.native();
        std::size_t at = 0;
        while ((at = text.find(prefix, at)) != std::string::npos) {
            const auto end = at + prefix.size();
            // /proc/self/fd/1 is a prefix of /proc/self/fd/12: only a whole number counts.
            if (end < text.size() && text[end] >= '0' && text[end] <= '9') {
                at = end;
                continue;
            }
            text.replace(at, prefix.size(), replacement);
            at += replacement.size();
        }
    }
    return text;
}

}  // namespace onnxstream::server
