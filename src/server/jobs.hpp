// Jobs: one action running in its own worker process (job_worker.hpp), with its
// progress, a cancel flag and its result, watched by the page through server-sent events.
// A worker that fails, throws or crashes (a signal) makes a failed job; the server goes on.
#pragma once

#include "actions.hpp"
#include "served_folder.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace onnxstream::server {

enum class job_state : std::uint8_t { running, done, failed, cancelled };

/// `path` as a job shows it: relative to the served folder `root`, '/'-separated; its file
/// name when it has no relative form.
[[nodiscard]] std::string relative_to(const std::filesystem::path& path, const std::filesystem::path& root);

/// What the page asked for: the action, and the model and fields as it named them
/// (paths relative to the served folder, not yet opened).
struct job_request {
    const action* operation = nullptr;
    std::string model;
    std::map<std::string, std::string, std::less<>> fields;
    io::writer_backend writer = io::writer_backend::automatic;
};

class job {
public:
    job(std::string id, std::string action, std::filesystem::path model, std::filesystem::path output);
    job(const job&) = delete;
    job& operator=(const job&) = delete;

    /// The job as a JSON event: state, progress, and once finished the result or error.
    [[nodiscard]] std::string event_json(const std::filesystem::path& root) const;
    /// Waits until the job changed after `version` (or `timeout`); returns the new version.
    [[nodiscard]] std::uint64_t wait_change(std::uint64_t version, std::chrono::milliseconds timeout) const;
    [[nodiscard]] bool finished() const;
    void cancel() { cancel_.store(true); }

    const std::string id;
    const std::string action;
    const std::filesystem::path model;
    const std::filesystem::path output;  // claimed while running; empty for read-only actions

private:
    friend class job_table;
    void progress(std::string stage, std::string tensor, std::uint64_t done, std::uint64_t total);
    void finish(job_state state, std::string body);
    [[nodiscard]] bool cancel_requested() const { return cancel_.load(); }
    [[nodiscard]] std::chrono::system_clock::time_point started_at() const { return wall_started_; }

    std::atomic<bool> cancel_{false};
    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::uint64_t version_ = 1;
    job_state state_ = job_state::running;
    std::string stage_;
    std::string tensor_;
    std::uint64_t done_ = 0;
    std::uint64_t total_ = 0;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point stage_started_ = started_;
    std::chrono::system_clock::time_point wall_started_ = std::chrono::system_clock::now();
    double seconds_ = 0;
    std::string body_;  // finished: the "result" or "error" members
};

class job_table {
public:
    explicit job_table(const served_folder& folder) : folder_(folder), root_(folder.path()) {}
    ~job_table();
    job_table(const job_table&) = delete;
    job_table& operator=(const job_table&) = delete;

    /// Checks the request's paths (beneath the folder, no links) and starts its worker.
    /// Errors: `output_exists` when another job writes the same output; what a path field
    /// is refused with (`unsafe_location`, ...).
    [[nodiscard]] result<std::shared_ptr<job>> start(job_request request);
    [[nodiscard]] std::shared_ptr<job> find(const std::string& id) const;
    /// Cancels every job and waits for them.
    void stop_all();

private:
    // `key`: the request's result_key, or empty (nothing kept).
    void run(const std::shared_ptr<job>& j, const job_request& request, const std::string& key);
    void release(const std::shared_ptr<job>& j);
    // A cached_result action's key for this request (jobs.cpp), and its result kept once done.
    [[nodiscard]] static std::string result_key(const action& a, const pinned_path& model, const job_request& request);
    void remember(const std::string& key, std::string body);
    // After a worker died by a signal: its named temporaries in the job's output folder.
    void remove_stray_temporaries(const job& j);

    const served_folder& folder_;
    std::filesystem::path root_;
    mutable std::mutex mutex_;
    std::map<std::string, std::shared_ptr<job>> jobs_;
    std::set<std::filesystem::path> busy_outputs_;
    std::map<std::string, std::string> results_;  // cached_result actions: result_key -> finished body
    std::vector<std::thread> threads_;
    std::uint64_t next_id_ = 1;
};

}  // namespace onnxstream::server
