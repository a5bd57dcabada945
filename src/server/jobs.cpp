#include "jobs.hpp"

#include <onnxstream/report/json.hpp>

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

std::string relative_to(const fs::path& path, const fs::path& root) {
    std::error_code ignored;
    const auto rel = fs::relative(path, root, ignored);
    return rel.empty() ? path.filename().string() : rel.generic_string();
}

}  // namespace

job::job(std::string id_, std::string action_, fs::path model_, fs::path output_)
    : id(std::move(id_)), action(std::move(action_)), model(std::move(model_)), output(std::move(output_)) {}

void job::progress(const ops::progress_event& event) {
    std::lock_guard lock(mutex_);
    if (event.stage != stage_) {
        stage_ = event.stage;
        stage_started_ = std::chrono::steady_clock::now();
    }
    if (!event.tensor.empty()) tensor_ = event.tensor;
    done_ = event.done;
    total_ = event.total;
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

result<std::shared_ptr<job>> job_table::start(const action& a, action_input input) {
    ONNXSTREAM_ASSIGN(const auto output, planned_output(a, input));
    std::lock_guard lock(mutex_);
    if (!output.empty() && !busy_outputs_.insert(output).second)
        return failure(error_code::output_exists, "another job is writing " + relative_to(output, root_) + " right now",
                       "wait for it to finish or cancel it, or choose another output");
    auto j = std::make_shared<job>(std::to_string(next_id_++), std::string(a.name), input.model, output);
    jobs_.emplace(j->id, j);
    try {
        threads_.emplace_back([this, &a, j, in = std::move(input)]() mutable { run(a, j, std::move(in)); });
    } catch (const std::system_error& e) {
        jobs_.erase(j->id);
        if (!output.empty()) busy_outputs_.erase(output);
        return failure(error_code::io, std::string("cannot start a job: ") + e.what(), "try again");
    }
    return j;
}

void job_table::run(const action& a, const std::shared_ptr<job>& j, action_input input) {
    // Nothing escapes this thread: a failing job is a failed job, never a dead server.
    try {
        input.cancel = &j->cancel_;
        input.on_progress = [&j](const ops::progress_event& event) { j->progress(event); };
        auto outcome = a.run(input);
        if (outcome) {
            report::json_writer files;
            files.begin_array();
            for (const auto& f : outcome->outputs) {
                std::error_code ec;
                const auto size = fs::file_size(f, ec);
                files.begin_object().field("path", relative_to(f, root_)).field("size", ec ? 0 : size).end_object();
            }
            files.end_array();
            j->finish(job_state::done,
                      "\"passed\":" + std::string(outcome->passed ? "true" : "false") + ",\"outputs\":" + files.text() +
                          ",\"text\":" + report::json_quote(outcome->report_text) + ",\"result\":" + outcome->report_json);
        } else {
            const auto& e = outcome.error();
            const auto state = e.code == error_code::interrupted ? job_state::cancelled : job_state::failed;
            report::json_writer json;
            json.begin_object().key("error");
            report::write_error(json, e, page_wording());
            json.end_object();
            auto body = json.text();
            j->finish(state, body.substr(1, body.size() - 2));
        }
    } catch (const std::exception& e) {
        j->finish(job_state::failed, "\"error\":{\"code\":\"internal\",\"message\":" + report::json_quote(e.what()) +
                                         ",\"hint\":\"this is a bug in onnxstream; the server goes on\"}");
    } catch (...) {
        j->finish(job_state::failed,
                  "\"error\":{\"code\":\"internal\",\"message\":\"the job failed\",\"hint\":\"this is a bug in onnxstream\"}");
    }
    std::lock_guard lock(mutex_);
    if (!j->output.empty()) busy_outputs_.erase(j->output);
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
