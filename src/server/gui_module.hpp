// The boundary between the onnxstream binary and its gui module (onnxstream-gui.so on
// Linux). The web server (cpp-httplib) brings libssl, libcrypto's TLS start-up and three
// brotli libraries that cost every command about 2 ms of start-up when linked into the
// binary; only `onnxstream gui` needs them, so the server lives in a module that
// command_gui.cpp loads with dlopen. The module does not carry the library: its
// references to onnxstream's functions bind to the binary's own copy, which exports them
// (cmake/gui_module_exports.list). Both sides are built by the same CMake project with the
// same compiler and standard library, so C++ types may cross.
#pragma once

#include "gui_server.hpp"

namespace onnxstream::server {

inline constexpr int gui_module_version = 2;

struct gui_module_api {
    int version = gui_module_version;
    result<void> (*serve)(const serve_options& options) = nullptr;
    std::string (*random_token)() = nullptr;
    bool (*is_loopback)(const std::string& host) = nullptr;
    /// `onnxstream gui-worker`: runs one page job from stdin (job_worker.hpp); the exit status.
    int (*run_worker)() = nullptr;
};

}  // namespace onnxstream::server

/// The module's one exported symbol.
extern "C" const onnxstream::server::gui_module_api* onnxstream_gui_module();
inline constexpr const char* onnxstream_gui_module_symbol = "onnxstream_gui_module";
