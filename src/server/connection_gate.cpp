#include "connection_gate.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <optional>

namespace onnxstream::server {

namespace {

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return (x >= 'A' && x <= 'Z' ? x + 32 : x) == (y >= 'A' && y <= 'Z' ? y + 32 : y);
           });
}

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// The head as admission() reads it, or nothing when it is not one. The headers the rules
// read may not repeat: httplib takes the first of several, and the two readings must agree.
std::optional<request_head> parse_head(std::string_view text) {
    request_head head;
    auto line_end = text.find("\r\n");
    const auto request_line = text.substr(0, line_end);
    const auto first_space = request_line.find(' ');
    const auto last_space = request_line.rfind(' ');
    if (first_space == std::string_view::npos || last_space == first_space) return std::nullopt;
    head.method = request_line.substr(0, first_space);
    const auto target = request_line.substr(first_space + 1, last_space - first_space - 1);
    if (!request_line.substr(last_space + 1).starts_with("HTTP/1.")) return std::nullopt;
    const auto question = target.find('?');
    head.path = target.substr(0, question);
    head.query = question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
    bool host = false, origin = false, site = false, token = false, length = false;
    const auto take = [](std::string_view value, std::string_view& into, bool& seen) {
        if (seen) return false;
        seen = true;
        into = value;
        return true;
    };
    for (auto at = line_end + 2; at < text.size();) {
        const auto end = text.find("\r\n", at);
        if (end == std::string_view::npos || end == at) break;
        const auto line = text.substr(at, end - at);
        at = end + 2;
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;  // httplib skips it too
        const auto name = line.substr(0, colon);
        const auto value = trimmed(line.substr(colon + 1));
        bool ok = true;
        if (same_name(name, "Host")) ok = take(value, head.host, host);
        else if (same_name(name, "Origin")) ok = take(value, head.origin, origin);
        else if (same_name(name, "Sec-Fetch-Site")) ok = take(value, head.sec_fetch_site, site);
        else if (same_name(name, "X-Onnxstream-Token")) ok = take(value, head.token, token);
        else if (same_name(name, "Content-Length")) ok = take(value, head.content_length, length);
        else if (same_name(name, "Transfer-Encoding")) head.has_transfer_encoding = true;
        if (!ok) return std::nullopt;
    }
    head.has_content_length = length;
    return head;
}

const char* reason(int status) {
    switch (status) {
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 431: return "Request Header Fields Too Large";
        default: return "Service Unavailable";
    }
}

// Sends what fits without waiting: an answer of a few hundred bytes always fits in a new
// connection's send buffer, and a client that reads nothing must not hold the watcher.
void send_now(int fd, const std::string& text) {
    std::size_t sent = 0;
    while (sent < text.size()) {
        const auto n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) sent += static_cast<std::size_t>(n);
        else if (n < 0 && errno == EINTR) continue;
        else return;
    }
}

std::string answer(int status, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n" + body;
}

void set_low_water_mark(int fd, std::size_t bytes) {
    const int value = static_cast<int>(std::min<std::size_t>(bytes, 1 << 20));
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value);
}

}  // namespace

connection_gate::connection_gate(const admission_policy& policy, std::function<std::string(const error&)> error_body,
                                 gate_limits limits)
    : policy_(policy), error_body_(std::move(error_body)), limits_(limits) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
    // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's
    // library): in a burst of connections the kernel drops the SYNs beyond it, and a client
    // then waits a second or more for its retry. listen() again on the socket raises it.
    ino_t ignored = 0;
    if (const int listener = find_socket(true, ignored); listener >= 0) (void)::listen(listener, SOMAXCONN);
    watcher_ = std::thread([this] { watch(); });
    for (std::size_t i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { work(); });
}

connection_gate::~connection_gate() {
    shutdown();
    for (const int fd : wake_)
        if (fd >= 0) ::close(fd);
}

void connection_gate::shutdown() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !watcher_.joinable()) return;
        stopping_ = true;
    }
    if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
    admitted_ready_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    for (auto& w : workers_)
        if (w.joinable()) w.join();
}

// The socket on our port that listens (`listening`), or the one httplib has just accepted:
// connected to our port and not owned by the gate yet. httplib's accept loop is the only
// place that creates such sockets, and it calls enqueue() right after each accept, so there
// is exactly one; sockets are told apart by inode, which (unlike a descriptor number) is not
// reused when one is closed.
int connection_gate::find_socket(bool listening, ino_t& inode) {
    DIR* folder = ::opendir("/proc/self/fd");
    if (folder == nullptr) return -1;
    int found = -1;
    while (const dirent* entry = ::readdir(folder)) {
        char* end = nullptr;
        const long number = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || number < 0 || number == ::dirfd(folder)) continue;
        const int fd = static_cast<int>(number);
        struct stat status {};
        if (::fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode) || owned_.contains(status.st_ino)) continue;
        sockaddr_storage address{};
        socklen_t size = sizeof address;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) continue;
        std::uint16_t port = 0;
        if (address.ss_family == AF_INET) port = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
        else if (address.ss_family == AF_INET6) port = ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
        else continue;
        int accepts = 0;
        socklen_t accepts_size = sizeof accepts;
        if (port != policy_.port || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepts, &accepts_size) != 0 ||
            (accepts != 0) != listening)
            continue;
        if (found >= 0) {  // two candidates: not the situation the rule above assumes
            found = -1;
            break;
        }
        found = fd;
        inode = status.st_ino;
    }
    ::closedir(folder);
    return found;
}

void connection_gate::enqueue(std::function<void()> task) {
    std::unique_lock lock(mutex_);
    ino_t inode = 0;
    const int fd = find_socket(false, inode);
    if (fd < 0) {
        // Not found (it cannot happen as httplib is written): httplib serves it, and its
        // pre-routing handler applies the same admission before reading any body.
        admitted_.push_back(std::move(task));
        admitted_ready_.notify_one();
        return;
    }
    owned_.insert(inode);
    incoming_.push_back(connection{fd, inode, std::move(task), clock::now() + limits_.head_time, 0, false});
    lock.unlock();
    if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
}

void connection_gate::work() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock lock(mutex_);
            admitted_ready_.wait(lock, [this] { return stopping_ || !admitted_.empty(); });
            if (admitted_.empty()) return;
            task = std::move(admitted_.front());
            admitted_.pop_front();
        }
        task();
    }
}

void connection_gate::admit(connection& c) {
    set_low_water_mark(c.fd, 1);
    const ino_t inode = c.inode;
    std::lock_guard lock(mutex_);
    admitted_.push_back([this, inode, task = std::move(c.task)] {
        task();  // closes the socket
        std::lock_guard done(mutex_);
        owned_.erase(inode);
    });
    admitted_ready_.notify_one();
    c.fd = -1;  // the worker's task owns it now
}

// Under mutex_: accepted_socket() must not see the descriptor between its close and the
// erasing of its inode (another socket could take the number, never the inode).
void connection_gate::close_connection(connection& c) {
    ::close(c.fd);
    c.fd = -1;
}

void connection_gate::refuse(connection& c, int status, const error& why) {
    send_now(c.fd, answer(status, error_body_(why)));
    // Closing with unread bytes would reset the connection and could drop the answer before
    // the client reads it: finish sending, then read and drop what comes for a moment.
    ::shutdown(c.fd, SHUT_WR);
    set_low_water_mark(c.fd, 1);
    c.lingering = true;
    c.deadline = clock::now() + limits_.linger_time;
}

bool connection_gate::step(connection& c, short events) {
    const bool late = clock::now() >= c.deadline;
    if (c.lingering) {
        std::array<char, 1 << 16> sink{};
        for (;;) {
            const auto n = ::recv(c.fd, sink.data(), sink.size(), MSG_DONTWAIT);
            if (n > 0) continue;
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !late) return true;
            return false;
        }
    }
    std::string head(limits_.head_bytes, '\0');
    const auto n = ::recv(c.fd, head.data(), head.size(), MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    if (n > 0) c.seen = static_cast<std::size_t>(n);
    head.resize(c.seen);
    if (const auto end = head.find("\r\n\r\n"); end != std::string::npos) {
        head.resize(end + 4);
        const auto parsed = parse_head(head);
        if (!parsed) {
            refuse(c, 400, error{error_code::invalid_argument, "the request is not one this server reads", ""});
            return true;
        }
        if (const auto refused = admission(policy_, *parsed)) {
            refuse(c, refused->status, refused->why);
            return true;
        }
        admit(c);
        return false;
    }
    if (c.seen >= limits_.head_bytes) {
        refuse(c, 431, error{error_code::invalid_argument, "the request's headers are too large", ""});
        return true;
    }
    if ((events & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return false;  // gone before the head ended
    if (late) {
        refuse(c, 408, error{error_code::invalid_argument, "the request's headers did not arrive in time", ""});
        return true;
    }
    // Wake when more than what was seen has arrived: poll() honours SO_RCVLOWAT on TCP.
    set_low_water_mark(c.fd, c.seen + 1);
    return true;
}

void connection_gate::watch() {
    std::vector<connection> held;
    std::vector<pollfd> polled;
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) break;
            for (auto& c : incoming_) held.push_back(std::move(c));
            incoming_.clear();
        }
        // Over the limit, the connections that have waited longest make room: a client that
        // sends its head at once is served even while others hold connections open.
        if (held.size() > limits_.waiting) {
            std::stable_sort(held.begin(), held.end(),
                             [](const connection& a, const connection& b) { return a.deadline < b.deadline; });
            for (std::size_t i = 0; i < held.size() - limits_.waiting; ++i) {
                std::lock_guard lock(mutex_);
                close_connection(held[i]);
                owned_.erase(held[i].inode);
            }
            held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(held.size() - limits_.waiting));
        }
        polled.assign(1, pollfd{wake_[0], POLLIN, 0});
        auto next = clock::now() + std::chrono::seconds(1);
        for (const auto& c : held) {
            polled.push_back(pollfd{c.fd, static_cast<short>(POLLIN | POLLRDHUP), 0});
            next = std::min(next, c.deadline);
        }
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - clock::now()).count();
        const int ready = ::poll(polled.data(), polled.size(), static_cast<int>(std::clamp<long long>(wait + 1, 0, 1000)));
        if (ready < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (polled[0].revents != 0) {
            std::array<char, 64> drained{};
            while (::read(wake_[0], drained.data(), drained.size()) > 0) {
            }
        }
        const auto now = clock::now();
        std::vector<connection> kept;
        for (std::size_t i = 0; i < held.size(); ++i) {
            auto& c = held[i];
            const short events = polled[i + 1].revents;
            if ((events == 0 && now < c.deadline) || step(c, events)) {
                kept.push_back(std::move(c));
                continue;
            }
            if (c.fd >= 0) {  // closed here, never handed to httplib
                std::lock_guard lock(mutex_);
                close_connection(c);
                owned_.erase(c.inode);
            }
        }
        held = std::move(kept);
    }
    std::lock_guard lock(mutex_);
    for (auto& c : incoming_) held.push_back(std::move(c));
    incoming_.clear();
    for (auto& c : held) {
        close_connection(c);
        owned_.erase(c.inode);
    }
}

}  // namespace onnxstream::server
