// The web page front end: an HTTP server on one folder, for `onnxstream gui`. It serves
// the embedded page and a small JSON API over the library (browse, inspect, and the
// actions as jobs with progress and cancellation, analyze among them). It never prints:
// what to tell the user comes back through `on_listening` and the result.
#pragma once

#include <onnxstream/io/plan_writer.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace onnxstream::server {

struct serve_options {
    std::filesystem::path root;                                 // every path the page names is confined to this folder
    std::string host = "127.0.0.1";                             // the address to bind
    std::uint16_t port = 0;                                     // 0: a free port
    std::string token;                                          // required on every request
    const std::atomic<bool>* stop = nullptr;                    // set to shut down (jobs are cancelled)
    std::function<void(std::uint16_t port)> on_listening;       // the port is bound and serving
    io::writer_backend writer = io::writer_backend::automatic;  // the writer every job uses
};

/// Serves until `stop` is set. Errors: `io` (the address cannot be bound), `invalid_argument`
/// (the root is not a folder).
[[nodiscard]] result<void> serve(const serve_options& options);

/// A fresh random token (32 hex digits) from the system's random source.
[[nodiscard]] std::string random_token();

/// True for 127.0.0.1/8, ::1 and "localhost".
[[nodiscard]] bool is_loopback(const std::string& host);

}  // namespace onnxstream::server
