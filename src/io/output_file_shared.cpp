#include "output_file_shared.hpp"

#include <onnxstream/io/output_file.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

namespace onnxstream::io {
namespace output_detail {

output_registry& outputs_registry() {
    static auto* instance = new output_registry;
    return *instance;
}

void unregister_name(output_registry& registry, const fs::path::string_type& name) noexcept {
    const auto it = std::find(registry.names.begin(), registry.names.end(), name);
    if (it != registry.names.end()) registry.names.erase(it);
}

result<std::unique_lock<std::mutex>> lock_unless_abandoned(output_registry& registry) {
    std::unique_lock lock(registry.mutex);
    if (registry.abandoned) return failure(error_code::interrupted, "interrupted; no output was written");
    return lock;
}

result<std::unique_lock<std::mutex>> flush_and_lock_for_commit(std::span<output_file* const> outputs) {
    for (auto* file : outputs) {
        if (file->descriptor() < 0) return failure(error_code::io, "the output was already committed or discarded");
        ONNXSTREAM_TRY(file->flush_to_disk());
    }
    return lock_unless_abandoned(outputs_registry());
}

fs::path::string_type temporary_name(std::string_view suffix) {
    static thread_local std::mt19937_64 generator{std::random_device{}()};
    static constexpr std::string_view alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::string name = ".onnxstream-";
    for (int i = 0; i < 8; ++i) name += alphabet[generator() % alphabet.size()];
    name += suffix;
    return {name.begin(), name.end()};  // ASCII: the same characters in a wide name
}

std::string human_bytes(std::uint64_t bytes) {
    char text[64];
    if (bytes >= (1ULL << 30)) std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ULL << 30));
    else if (bytes >= (1ULL << 20)) std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1ULL << 20));
    else std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
    return text;
}

fs::path folder_of(const fs::path& destination) {
    auto folder = destination.parent_path();
    return folder.empty() ? fs::path(".") : folder;
}

namespace {

const char* kind_text(existing_kind kind) {
    switch (kind) {
#ifdef _WIN32
        case existing_kind::link: return "a symbolic link or junction";
#else
        case existing_kind::link: return "a symbolic link";
#endif
        case existing_kind::fifo: return "a FIFO";
        case existing_kind::character_device: return "a character device";
        case existing_kind::block_device: return "a block device";
        case existing_kind::socket: return "a socket";
        case existing_kind::directory: return "a directory";
        case existing_kind::none:
        case existing_kind::regular:
        case existing_kind::other: break;
    }
    return "not a regular file";
}

}  // namespace

result<fs::path> check_destination(const fs::path& destination, existing_kind kind, bool overwrite) {
    if (kind == existing_kind::directory)
        return failure(error_code::invalid_argument, "the output " + destination.string() + " is a directory",
                       "give a file name with {0}", {{remedy::choose_output, {}}});
    if (kind != existing_kind::none && !overwrite)
        return failure(error_code::output_exists, "the output " + destination.string() + " already exists",
                       "{0} to replace it, or choose another name with {1}",
                       {{remedy::replace_output, {}}, {remedy::choose_output, {}}});
    if (kind != existing_kind::none && kind != existing_kind::regular) return failure(not_regular(destination, kind, false));
    auto folder = folder_of(destination);
    std::error_code status_error;
    if (!fs::is_directory(folder, status_error))
        return failure(error_code::io, "the output folder " + folder.string() + " does not exist",
                       "create it first, or choose another output with {0}", {{remedy::choose_output, {}}});
    return folder;
}

error not_regular(const fs::path& destination, existing_kind kind, bool during) {
    return with_remedies({error_code::invalid_argument, "the output " + destination.string() + " is " + kind_text(kind) +
                                                            (during ? " (it appeared while writing)" : "")},
                         "onnxstream only replaces regular files; remove it or choose another name with {0}",
                         {{remedy::choose_output, {}}});
}

error appeared_while_writing(const fs::path& destination) {
    return with_remedies({error_code::output_exists, "the output " + destination.string() + " appeared while writing"},
                         "{0} to replace it", {{remedy::replace_output, {}}});
}

error reserve_failure(const fs::path& destination, std::uint64_t size, std::error_code os, std::string_view volume) {
    const bool full = os == std::errc::no_space_on_device;
    auto e = os_failure(
        "cannot reserve " + human_bytes(size) + " for " + destination.string(), os,
        full ? "free at least " + human_bytes(size) + " on that " + std::string(volume) + ", or write elsewhere with {0}"
        : os == std::errc::file_too_large ? "the file-size limit (ulimit -f) or the file system does not allow a file that large"
                                          : std::string{});
    if (full) e.remedies = {{remedy::choose_output, {}}};
    return e;
}

}  // namespace output_detail

void abandon_all_outputs() noexcept {
    auto& r = output_detail::outputs_registry();
    const std::lock_guard lock(r.mutex);
    r.abandoned = true;
    for (const auto& name : r.names) output_detail::remove_temporary_named(name);
    r.names.clear();
}

void output_file::discard() noexcept {
    if (fd_ >= 0) output_detail::close_output_descriptor(fd_);
    fd_ = -1;
    if (!temporary_.empty()) {
        auto& r = output_detail::outputs_registry();
        const std::lock_guard lock(r.mutex);
        output_detail::remove_temporary_named(temporary_.native());
        output_detail::unregister_name(r, temporary_.native());
        temporary_.clear();
    }
}

result<void> output_file::commit() {
    output_file* self = this;
    return commit_outputs(std::span(&self, 1));
}

output_file::output_file(std::filesystem::path destination, std::uint64_t size, bool overwrite)
    : size_(size), overwrite_(overwrite), destination_(std::move(destination)) {}

// The moves and the destructor are the same on every platform.
output_file::output_file(output_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      overwrite_(other.overwrite_),
      destination_(std::move(other.destination_)),
      temporary_(std::exchange(other.temporary_, {})) {}

output_file& output_file::operator=(output_file&& other) noexcept {
    if (this != &other) {
        discard();
        fd_ = std::exchange(other.fd_, -1);
        size_ = other.size_;
        overwrite_ = other.overwrite_;
        destination_ = std::move(other.destination_);
        temporary_ = std::exchange(other.temporary_, {});
    }
    return *this;
}

output_file::~output_file() { discard(); }

}  // namespace onnxstream::io
