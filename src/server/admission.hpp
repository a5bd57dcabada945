// Who the page server answers, decided from a request's head alone: the method, the Host
// and Origin headers, the token and the announced body length. It runs twice on every
// request with the same rules: in the connection gate (connection_gate.hpp), before
// cpp-httplib reads a byte of the request, and again in httplib's pre-routing handler, so a
// request the gate could not look at is still refused before its body is read.
#pragma once

#include <onnxstream/error.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onnxstream::server {

struct admission_policy {
    std::string token;      // the token every API request carries in X-Onnxstream-Token
    std::string bind_host;  // the address given to --host
    std::uint16_t port = 0;
    // Bound to an address other machines reach (gui --host 0.0.0.0): the page is asked for
    // by whatever name or address they use, so any Host is accepted and the token is the
    // only guard. On loopback only this machine's own names are (DNS rebinding).
    bool network = false;
};

/// What the rules read from a request's head. Views into the head; absent headers are empty.
struct request_head {
    std::string_view method;
    std::string_view path;   // the target without its query
    std::string_view query;  // after '?', undecoded
    std::string_view host;
    std::string_view origin;
    std::string_view sec_fetch_site;
    std::string_view token;  // X-Onnxstream-Token
    std::string_view content_length;
    bool has_content_length = false;
    bool has_transfer_encoding = false;
};

struct refusal {
    int status = 403;
    error why;
};

/// The largest body of a request other than an upload (a job's fields).
inline constexpr std::uint64_t max_form_body = 64 * 1024;

/// Nothing when `head` may be served, else the answer to send without reading its body.
[[nodiscard]] std::optional<refusal> admission(const admission_policy& policy, const request_head& head);

/// The value of `key` in an undecoded query string, still encoded; nothing when absent.
[[nodiscard]] std::optional<std::string_view> query_value(std::string_view query, std::string_view key);

}  // namespace onnxstream::server
