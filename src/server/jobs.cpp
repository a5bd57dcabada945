#include "jobs.hpp"

#include "job_worker.hpp"

#include <onnxstream/report/json.hpp>

#include <cstring>
#include <system_error>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

const char* to_string(job_state state) {
    switch (state) {
        case job_state::running: return "running";
        case job_state::done: return "done";
        case job_state::failed: return "failed";
        case job_state::cancelled: return "cancelled";
    }
    return "failed";
}

}  // namespace

std::string relative_to(const fs::path& path, const fs::path& root) {
    std::error_code ignored;
    const auto rel = fs::relative(path, root, ignored);
    return rel.empty() ? path.filename().string() : rel.generic_string();
}

job::job(std::string id_, std::string action_, fs::path model_, fs::path output_)
    : id(std::move(id_)), action(std::move(action_)), model(std::move(model_)), output(std::move(output_)) {}

void job::progress(std::string stage, std::string tensor, std::uint64_t done, std::uint64_t total) {
    std::lock_guard lock(mutex_);
    if (stage != stage_) {
        stage_ = std::move(stage);
        stage_started_ = std::chrono::steady_clock::now();
    }
    if (!tensor.empty()) tensor_ = std::move(tensor);
    done_ = done;
    total_ = total;
    ++version_;
    changed_.notify_all();
}

void job::finish(job_state state, std::string body) {
    std::lock_guard lock(mutex_);
    state_ = state;
    body_ = std::move(body);
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    ++version_;
    changed_.notify_all();
}

bool job::finished() const {
    std::lock_guard lock(mutex_);
    return state_ != job_state::running;
}

std::uint64_t job::wait_change(std::uint64_t version, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return version_ != version; });
    return version_;
}

std::string job::event_json(const fs::path& root) const {
    std::lock_guard lock(mutex_);
    report::json_writer json;
    json.begin_object().field("id", id).field("action", action).field("model", relative_to(model, root));
    json.field("state", to_string(state_)).field("stage", stage_).field("tensor", tensor_);
    json.field("done", done_).field("total", total_);
    const auto now = std::chrono::steady_clock::now();
    const double stage_seconds = std::chrono::duration<double>(now - stage_started_).count();
    json.field("elapsed", state_ == job_state::running ? std::chrono::duration<double>(now - started_).count() : seconds_);
    // Time left from this stage's rate so far.
    if (state_ == job_state::running && done_ > 0 && total_ > done_ && stage_seconds > 0.2)
        json.field("seconds_left", stage_seconds * static_cast<double>(total_ - done_) / static_cast<double>(done_));
    // The object is left open: a finished job's members (result or error) go inside.
    std::string text = json.text();
    if (!body_.empty()) text += "," + body_;
    return text + "}";
}

job_table::~job_table() { stop_all(); }

result<std::shared_ptr<job>> job_table::start(job_request request) {
    const auto& a = *request.operation;
    // Checked here only to answer the page at once and to claim the output; the worker
    // opens every path again beneath the folder, by descriptor, for the job itself.
    auto model = folder_.pin(request.model, pin_kind::existing);
    if (!model) {
        if (model.error().code == error_code::unsafe_location) return failure(std::move(model).error());
        return failure(error_code::invalid_argument, "no model file at '" + request.model + "'", "pick a .onnx file in the list");
    }
    action_input input;
    input.root = root_;
    input.model = model->shown;
    input.fields = request.fields;
    input.locate = [this](std::string_view field, std::string_view value) -> result<fs::path> {
        ONNXSTREAM_ASSIGN(const auto pinned, folder_.pin(value, pin_kind_of(field)));
        return pinned.shown;
    };
    ONNXSTREAM_TRY(check_paths(a, input));
    ONNXSTREAM_ASSIGN(const auto output, planned_output(a, input));
    const auto key = a.cached_result ? result_key(a, *model, request) : std::string();
    std::lock_guard lock(mutex_);
    if (const auto hit = key.empty() ? results_.end() : results_.find(key); hit != results_.end()) {
        // The same file, unchanged, with the same fields: its result, finished at once.
        auto j = std::make_shared<job>(std::to_string(next_id_++), std::string(a.name), model->shown, output);
        j->finish(job_state::done, hit->second);
        jobs_.emplace(j->id, j);
        return j;
    }
    if (!output.empty() && !busy_outputs_.insert(output).second)
        return failure(error_code::output_exists, "another job is writing " + relative_to(output, root_) + " right now",
                       "wait for it to finish or cancel it, or choose another output");
    auto j = std::make_shared<job>(std::to_string(next_id_++), std::string(a.name), model->shown, output);
    jobs_.emplace(j->id, j);
    try {
        threads_.emplace_back([this, j, r = std::move(request), key] { run(j, r, key); });
    } catch (const std::system_error& e) {
        jobs_.erase(j->id);
        if (!output.empty()) busy_outputs_.erase(output);
        return failure(error_code::io, std::string("cannot start a job: ") + e.what(), "try again");
    }
    return j;
}

std::string job_table::result_key(const action& a, const pinned_path& model, const job_request& request) {
    // The file's identity: a file replaced, rewritten or touched gets a new key. Empty
    // (nothing cached) when it cannot be read.
    const auto identity = file_identity(model);
    if (identity.empty()) return {};
    std::string key = std::string(a.name) + identity;
    for (const auto& [name, value] : request.fields) key += '\0' + name + '=' + value;
    return key;
}

void job_table::remember(const std::string& key, std::string body) {
    std::lock_guard lock(mutex_);
    constexpr std::size_t kept = 64;  // models opened in one session; past that any one goes (it is only work again)
    if (results_.size() >= kept && !results_.contains(key)) results_.erase(results_.begin());
    results_.insert_or_assign(key, std::move(body));
}

void job_table::release(const std::shared_ptr<job>& j) {
    std::lock_guard lock(mutex_);
    if (!j->output.empty()) busy_outputs_.erase(j->output);
}

void job_table::run(const std::shared_ptr<job>& j, const job_request& request, const std::string& key) {
    // Nothing escapes this thread, and nothing the worker does reaches it but its frames
    // and its exit status: a failing or crashing job is a failed job, never a dead server.
    try {
        auto worker = worker_process::spawn(root_, request);
        if (!worker) {
            j->finish(job_state::failed, error_members(worker.error()));
            return release(j);
        }
        constexpr auto grace = std::chrono::seconds(10);  // for a worker asked to cancel
        frame_reader reader;
        bool finished = false;
        bool malformed = false;
        std::optional<std::chrono::steady_clock::time_point> cancelled_at;
        for (;;) {
            if (j->cancel_requested() && !cancelled_at) {
                worker->cancel();
                cancelled_at = std::chrono::steady_clock::now();
            }
            if (cancelled_at && std::chrono::steady_clock::now() - *cancelled_at > grace) worker->kill();
            char buffer[1 << 16];
            const auto n = worker->read_output(buffer, sizeof buffer, std::chrono::milliseconds(100));
            if (n == worker_process::nothing_yet) continue;
            if (n <= 0) break;
            reader.feed({buffer, static_cast<std::size_t>(n)});
            for (;;) {
                auto next = reader.next();
                if (!next) malformed = true;
                if (!next || !*next) break;
                const auto& items = **next;
                if (items.size() == 5 && items[0] == "progress") {
                    j->progress(items[1], items[2], std::strtoull(items[3].c_str(), nullptr, 10),
                                std::strtoull(items[4].c_str(), nullptr, 10));
                } else if (items.size() == 3 && items[0] == "finish" && !finished) {
                    const int state = std::atoi(items[1].c_str());
                    // Kept before the page hears of it: opening the model again finds it.
                    if (!key.empty() && state == static_cast<int>(job_state::done)) remember(key, items[2]);
                    j->finish(state == static_cast<int>(job_state::done)        ? job_state::done
                              : state == static_cast<int>(job_state::cancelled) ? job_state::cancelled
                                                                                : job_state::failed,
                              items[2]);
                    finished = true;
                } else {
                    malformed = true;
                }
            }
            if (malformed) {
                worker->kill();
                break;
            }
        }
        const auto end = worker->wait();
        const bool signalled = end.crashed;
        if (signalled) remove_stray_temporaries(*j);
        if (!finished) {
            error e;
            if (cancelled_at) {
                e = error{error_code::interrupted, "the job was cancelled", "run it again to finish it"};
            } else if (signalled) {
                e = error{error_code::io, "the job crashed (" + end.cause + "); the server goes on",
                          "this is a bug in onnxstream: please report it with the model; nothing was written"};
            } else {
                e = error{error_code::io,
                          malformed
                              ? std::string("the job's worker sent a malformed message")
                              : "the job's worker ended without a result (exit status " + std::to_string(end.exit_status) + ")",
                          "this is a bug in onnxstream: please report it; the server goes on"};
            }
            j->finish(cancelled_at ? job_state::cancelled : job_state::failed, error_members(e));
        }
    } catch (const std::exception& e) {
        if (!j->finished())
            j->finish(job_state::failed, error_members({error_code::io, std::string("the job failed: ") + e.what(),
                                                        "this is a bug in onnxstream; the server goes on"}));
    }
    release(j);
}

namespace {

// A writer's temporary (io::output_file): .onnxstream-XXXXXXXX.tmp. Backups (.old) are
// never removed: after a crash in a commit one may hold the only copy of a replaced file.
bool writer_temporary(std::string_view name) {
    constexpr std::string_view prefix = ".onnxstream-";
    constexpr std::string_view suffix = ".tmp";
    if (name.size() != prefix.size() + 8 + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return false;
    for (const char c : name.substr(prefix.size(), 8))
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
    return true;
}

}  // namespace

void job_table::remove_stray_temporaries(const job& j) {
    // The writer's temporaries have no name where the file system allows it (O_TMPFILE)
    // and vanish with the worker; elsewhere, and for an output being committed, they have
    // one the dead worker cannot remove. They are taken from the job's output folder when
    // they are no older than the job and no other job of this server writes there.
    if (j.output.empty()) return;
    const auto folder = j.output.parent_path();
    {
        std::lock_guard lock(mutex_);
        for (const auto& other : busy_outputs_)
            if (other != j.output && other.parent_path() == folder) return;
    }
    std::error_code ec;
    auto relative = fs::relative(folder, root_, ec).generic_string();
    if (ec || relative.starts_with("..")) return;
    if (relative == ".") relative.clear();
    auto opened = folder_.open_beneath(relative, O_RDONLY | O_DIRECTORY);
    if (!opened) return;
    auto listing = folder_.open_beneath(relative, O_RDONLY | O_DIRECTORY);
    if (!listing) return;
    auto entries = list_folder(std::move(*listing));
    if (!entries) return;
    const auto since = std::chrono::system_clock::to_time_t(j.started_at()) - 1;
    for (const auto& entry : *entries) {
        if (!writer_temporary(entry.name) || entry.kind != entry_kind::file || entry.changed < since) continue;
        remove_in(opened->get(), entry.name);
    }
}

std::shared_ptr<job> job_table::find(const std::string& id) const {
    std::lock_guard lock(mutex_);
    const auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : it->second;
}

void job_table::stop_all() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, j] : jobs_) j->cancel();
        threads.swap(threads_);
    }
    for (auto& t : threads)
        if (t.joinable()) t.join();
}

}  // namespace onnxstream::server
