// The connection gate: cpp-httplib's task queue for the page server, which looks at each
// request's head before httplib reads a byte of it.
//
// Why: the Debian cpp-httplib (0.11.4) reads a request line and each header line into memory
// whatever their length and with no deadline for the whole head, and after answering a
// refused request it reads the unread body as the next request's line. So a 200 MB POST
// without the token grew the server by 200 MB, and 40 clients that stop in the middle of
// their headers held all its worker threads. httplib hands each accepted connection to its
// task queue before reading from it; this queue finds the connection's socket, waits for
// the complete head in one thread that polls every waiting connection (a stalled client
// holds no worker), and peeks at it (MSG_PEEK: httplib still reads it all). A head that is
// late, too large, or that admission() refuses is answered here and the connection closed;
// only an admitted one reaches a worker, where httplib serves it (one request per connection,
// so every request passes the gate).
//
// Linux only (the socket is found in /proc/self/fd); the page server is not built elsewhere.
#pragma once

#include "admission.hpp"

#include <httplib.h>

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace onnxstream::server {

struct gate_limits {
    std::size_t workers = 24;                     // threads serving admitted requests
    std::size_t waiting = 256;                    // connections held open; beyond, the oldest are closed
    std::chrono::milliseconds head_time{5000};    // from accept to the end of the head
    std::size_t head_bytes = 16 * 1024;           // the request line and headers together
    std::chrono::milliseconds linger_time{1000};  // reading (and dropping) a refused request's body
};

class connection_gate final : public httplib::TaskQueue {
public:
    /// `policy` must outlive the gate; `error_body` writes a refusal's JSON body.
    connection_gate(const admission_policy& policy, std::function<std::string(const error&)> error_body, gate_limits limits = {});
    ~connection_gate() override;
    connection_gate(const connection_gate&) = delete;
    connection_gate& operator=(const connection_gate&) = delete;

    void enqueue(std::function<void()> task) override;
    void shutdown() override;

private:
    using clock = std::chrono::steady_clock;
    struct connection {
        int fd = -1;
        ino_t inode = 0;
        std::function<void()> task;  // httplib's: serves the connection, then closes it
        clock::time_point deadline;
        std::size_t seen = 0;    // bytes of the head peeked at so far
        bool lingering = false;  // refused: its body is read and dropped until the deadline
    };

    void watch();
    void work();
    [[nodiscard]] bool step(connection& c, short events);  // false: done with it (admitted or closed)
    void refuse(connection& c, int status, const error& why);
    void close_connection(connection& c);
    void admit(connection& c);
    [[nodiscard]] int find_socket(bool listening, ino_t& inode);

    const admission_policy& policy_;
    std::function<std::string(const error&)> error_body_;
    gate_limits limits_;
    std::mutex mutex_;
    std::condition_variable admitted_ready_;
    std::deque<std::function<void()>> admitted_;
    std::vector<connection> incoming_;  // accepted, not yet taken by the watcher
    std::unordered_set<ino_t> owned_;   // sockets handed to the gate and not closed yet
    bool stopping_ = false;
    int wake_[2] = {-1, -1};
    std::thread watcher_;
    std::vector<std::thread> workers_;
};

}  // namespace onnxstream::server
