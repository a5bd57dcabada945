#include "admission.hpp"

#include <array>

namespace onnxstream::server {

namespace {

bool same_token(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

// "NAME:PORT" for one of this server's own names (loopback) or any name (network).
bool host_allowed(const admission_policy& policy, std::string_view host) {
    const std::string port = ":" + std::to_string(policy.port);
    if (policy.network) return host.size() > port.size() && host.ends_with(port);
    const std::array<std::string_view, 4> names{"127.0.0.1", "localhost", "[::1]", policy.bind_host};
    for (const auto name : names)
        if (host.size() == name.size() + port.size() && host.starts_with(name) && host.ends_with(port)) return true;
    return false;
}

// The page and what it loads carry no token (a navigation cannot send a header, and the
// token arrives in the URL's fragment, which the browser never sends); they hold no data.
bool is_static_page(std::string_view method, std::string_view path) {
    return (method == "GET" || method == "HEAD") &&
           (path == "/" || path == "/app.js" || path == "/graph.js" || path == "/app.css");
}

refusal refuse(int status, std::string message, std::string hint = {}) {
    return refusal{status, error{error_code::invalid_argument, std::move(message), std::move(hint)}};
}

}  // namespace

std::optional<std::string_view> query_value(std::string_view query, std::string_view key) {
    while (!query.empty()) {
        const auto end = query.find('&');
        const auto part = query.substr(0, end);
        if (part.size() > key.size() && part.starts_with(key) && part[key.size()] == '=') return part.substr(key.size() + 1);
        if (end == std::string_view::npos) break;
        query.remove_prefix(end + 1);
    }
    return std::nullopt;
}

std::optional<refusal> admission(const admission_policy& policy, const request_head& head) {
    if (head.method != "GET" && head.method != "HEAD" && head.method != "POST")
        return refuse(405, "this server answers GET and POST only");
    // DNS rebinding: a foreign name resolving to this address must not reach the API.
    if (!host_allowed(policy, head.host)) return refuse(403, "this server only answers to its own address");
    // Cross-site requests: a browser names the page that sent them, which must be this one.
    if (!head.origin.empty()) {
        const bool same_origin = head.origin.starts_with("http://") && head.origin.substr(7) == head.host;
        if (!same_origin && !(head.origin.starts_with("http://") && host_allowed(policy, head.origin.substr(7))))
            return refuse(403, "requests from other sites are refused");
    }
    if (head.method == "POST" && head.sec_fetch_site == "cross-site") return refuse(403, "requests from other sites are refused");
    if (!is_static_page(head.method, head.path)) {
        // A download link cannot send a header: it carries a one-use ticket instead, which the
        // download route checks (gui_server.cpp, "tickets").
        const bool ticketed = head.method == "GET" && head.path == "/api/file" && query_value(head.query, "ticket");
        if (!ticketed && !same_token(head.token, policy.token))
            return refuse(403, "a valid token is required", "open the URL that 'onnxstream gui' printed (it carries the token)");
    }
    if (head.method == "POST") {
        // The length is known before the body is read, or the request is not read at all:
        // a body without one could only be read to its end to find out.
        if (head.has_transfer_encoding || !head.has_content_length)
            return refuse(411, "a request with a body must give its Content-Length");
        std::uint64_t length = 0;
        if (head.content_length.empty() || head.content_length.size() > 19)
            return refuse(400, "the Content-Length is not a number");
        for (const char c : head.content_length) {
            if (c < '0' || c > '9') return refuse(400, "the Content-Length is not a number");
            length = length * 10 + static_cast<std::uint64_t>(c - '0');
        }
        // Only an upload streams its body (to a file); every other body is read into memory.
        if (head.path != "/api/upload" && length > max_form_body)
            return refuse(413, "the request is larger than any form the page sends");
    }
    return std::nullopt;
}

}  // namespace onnxstream::server
