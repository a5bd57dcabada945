// Optional parts of onnxstream whose dependencies are heavy (OpenCV's dnn module; the gui's
// web server with its TLS and compression libraries) are shared objects opened on first
// use, so that every other command starts without loading them. POSIX only (dlopen): a
// Windows build links such a part in or leaves it out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace onnxstream::io {

/// Where a module may be, after the running executable's own folder (the build tree, or a
/// relocated copy of the binary with its modules).
struct module_places {
    /// Where `cmake --install` puts it, from the installed executable's folder
    /// (`../lib/onnxstream`): found under whatever prefix the install went to.
    std::filesystem::path beside_installed;
    std::filesystem::path installed;  // the same place as configured (LIBDIR/onnxstream, absolute)
    std::filesystem::path built;      // the build tree (for test programs in its subfolders)
};

enum class module_outcome : std::uint8_t {
    loaded,      // `entry` is the entry symbol's address
    not_found,   // no candidate file exists
    not_loaded,  // the first file that exists did not load (`detail`: the loader's words)
    no_entry,    // it loaded but does not define the entry symbol
};

struct loaded_module {
    module_outcome outcome = module_outcome::not_found;
    void* entry = nullptr;
    std::filesystem::path path;  // the file tried; empty when not_found
    std::string detail;
};

/// Opens the first of `file_name` beside the executable, under the executable's folder /
/// `places.beside_installed`, under `places.installed`, under `places.built` that exists (RTLD_NOW | RTLD_LOCAL) and looks up
/// `entry_symbol` in it. Only that first file is tried: a broken module is reported, never skipped for another (possibly older)
/// one. A loaded module stays loaded for the life of the process; the caller checks what the entry symbol gives (a version)
/// before using it.
[[nodiscard]] loaded_module load_module(std::string_view file_name, const char* entry_symbol, const module_places& places);

}  // namespace onnxstream::io
