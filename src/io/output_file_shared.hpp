// What the POSIX and the Windows output_file share: the registry of temporaries that
// `abandon_all_outputs` removes, temporary names, and the checks and messages about the
// destination. Internal to io/ (output_file.cpp, output_file_win.cpp, output_file_shared.cpp).
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace onnxstream::io::output_detail {

namespace fs = std::filesystem;

// Every named temporary of this process, for `abandon_all_outputs`. One mutex guards the
// list, the `abandoned` flag, the creation of a temporary with its registration, and a
// whole commit: a program leaving on a signal can then never find a temporary created but
// not yet listed, nor a transaction half done.
struct output_registry {
    std::mutex mutex;
    std::vector<fs::path::string_type> names;
    bool abandoned = false;
};

/// The process's registry. Never destroyed: a signal may arrive while statics are torn down.
[[nodiscard]] output_registry& outputs_registry();

/// Callers hold the registry's mutex.
void unregister_name(output_registry& registry, const fs::path::string_type& name) noexcept;

/// The registry's lock, unless `abandon_all_outputs` has run (then `interrupted`): what
/// creating a temporary and committing outputs begin with.
[[nodiscard]] result<std::unique_lock<std::mutex>> lock_unless_abandoned(output_registry& registry);

/// The platform's part of `discard` and `abandon_all_outputs` (output_file.cpp,
/// output_file_win.cpp): close an output's descriptor, remove a temporary by name.
void close_output_descriptor(int descriptor) noexcept;
void remove_temporary_named(const fs::path::string_type& name) noexcept;

/// Discards every output when a commit leaves early; `armed = false` once it succeeded.
struct discard_unless_committed {
    std::span<output_file* const> outputs;
    bool armed = true;
    ~discard_unless_committed() {
        if (armed)
            for (auto* file : outputs) file->discard();
    }
};

/// How every commit begins: each output still open and flushed to disk, then the
/// registry's lock (refused after `abandon_all_outputs`).
[[nodiscard]] result<std::unique_lock<std::mutex>> flush_and_lock_for_commit(std::span<output_file* const> outputs);

/// ".onnxstream-" + 8 random letters or digits + `suffix`. Short on purpose: a destination
/// name of up to 255 bytes must still leave room for it.
[[nodiscard]] fs::path::string_type temporary_name(std::string_view suffix);

[[nodiscard]] std::string human_bytes(std::uint64_t bytes);

/// The folder a destination is created in ("." for a bare file name).
[[nodiscard]] fs::path folder_of(const fs::path& destination);

/// What is at a destination, without following a link.
enum class existing_kind : std::uint8_t {
    none,
    regular,
    directory,
    link,
    fifo,
    character_device,
    block_device,
    socket,
    other,
};

/// Refuses what cannot be replaced, before anything is created: a directory, an existing
/// file without `overwrite`, anything but a regular file, a missing folder. Returns the folder.
[[nodiscard]] result<fs::path> check_destination(const fs::path& destination, existing_kind kind, bool overwrite);

/// The destination became something other than a regular file while the output was written.
[[nodiscard]] error not_regular(const fs::path& destination, existing_kind kind, bool during);

/// The destination appeared while the output was written (the output does not replace files).
[[nodiscard]] error appeared_while_writing(const fs::path& destination);

/// The file system could not give the output its size; `volume` is what the user frees
/// space on ("file system", "drive").
[[nodiscard]] error reserve_failure(const fs::path& destination, std::uint64_t size, std::error_code os, std::string_view volume);

}  // namespace onnxstream::io::output_detail
