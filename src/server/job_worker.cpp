#include "job_worker.hpp"

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/report/json.hpp>

#include <unistd.h>  // mingw-w64 has one too: read, write, STDIN_FILENO

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t max_item = std::size_t{1} << 30;  // a report of a huge model, with room
constexpr std::size_t max_length_digits = 10;

}  // namespace

bool write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        // At most 1 GiB a call: Windows' C runtime takes an unsigned int.
        const auto n = ::write(fd, bytes.data(), static_cast<unsigned>(std::min<std::size_t>(bytes.size(), 1U << 30)));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

namespace {

// The next frame from `fd`; nothing at the end of the stream or on a malformed one.
std::optional<frame> read_frame(int fd, frame_reader& reader) {
    for (;;) {
        auto next = reader.next();
        if (!next) return std::nullopt;
        if (*next) return std::move(**next);
        char buffer[1 << 16];
        const auto n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;
        reader.feed({buffer, static_cast<std::size_t>(n)});
    }
}

}  // namespace

std::string encode_frame(const frame& items) {
    std::string bytes;
    for (const auto& item : items) {
        bytes += std::to_string(item.size());
        bytes += ':';
        bytes += item;
        bytes += ',';
    }
    bytes += ';';
    return bytes;
}

result<std::optional<frame>> frame_reader::next() {
    const auto malformed = [] { return failure(error_code::malformed, "a job's worker sent a malformed message"); };
    frame items;
    std::size_t at = parsed_;
    for (;;) {
        if (at >= buffer_.size()) return std::optional<frame>();
        if (buffer_[at] == ';') {
            buffer_.erase(0, at + 1);
            parsed_ = 0;
            return std::optional<frame>(std::move(items));
        }
        std::size_t length = 0;
        std::size_t digits = 0;
        while (at + digits < buffer_.size() && buffer_[at + digits] >= '0' && buffer_[at + digits] <= '9') {
            if (digits == max_length_digits) return malformed();
            length = length * 10 + static_cast<std::size_t>(buffer_[at + digits] - '0');
            ++digits;
        }
        if (at + digits >= buffer_.size()) return std::optional<frame>();  // the length is still arriving
        if (digits == 0 || buffer_[at + digits] != ':' || length > max_item) return malformed();
        const auto start = at + digits + 1;
        if (buffer_.size() - start < length + 1) return std::optional<frame>();
        if (buffer_[start + length] != ',') return malformed();
        items.emplace_back(buffer_, start, length);
        at = start + length + 1;
    }
}

// ---------------------------------------------------------------- the worker's side

namespace {

// Set when the server closes our stdin (Cancel, or the server is gone). A namespace-level
// flag: the thread that sets it outlives run_job_worker's frame.
std::atomic<bool> worker_cancel{false};

std::mutex output_mutex;

void send(const frame& items) {
    const std::lock_guard lock(output_mutex);
    (void)write_all(STDOUT_FILENO, encode_frame(items));
}

// Test-only: makes the worker of an action crash at a chosen point, so that the
// end-to-end tests can show that a crashing job fails alone. The variable holds
// ACTION:POINT items separated by commas (points: start, progress, named-temporary).
// Read here only, in the worker, never by the library or the server.
std::string crash_point(std::string_view action) {
    const char* value = std::getenv("ONNXSTREAM_TEST_WORKER_CRASH");
    std::string_view items = value == nullptr ? std::string_view() : std::string_view(value);
    while (!items.empty()) {
        const auto comma = items.find(',');
        const auto item = items.substr(0, comma);
        if (item.size() > action.size() && item.starts_with(action) && item[action.size()] == ':')
            return std::string(item.substr(action.size() + 1));
        if (comma == std::string_view::npos) break;
        items.remove_prefix(comma + 1);
    }
    return {};
}

[[noreturn]] void crash() {
    std::signal(SIGSEGV, SIG_DFL);  // not a sanitizer's report: the signal itself
    std::raise(SIGSEGV);
    std::abort();  // Windows' C runtime ends the process on raise(SIGSEGV) without a crash
}

}  // namespace

pin_kind pin_kind_of(std::string_view field) {
    if (field == "data-dir") return pin_kind::folder;
    if (field == "output") return pin_kind::destination;
    if (field == "data") return pin_kind::file;
    return pin_kind::existing;
}

std::string error_members(const error& e) {
    report::json_writer json;
    json.begin_object().key("error");
    report::write_error(json, e, page_wording());
    json.end_object();
    const auto body = json.text();
    return body.substr(1, body.size() - 2);
}

namespace {

// Runs the job; returns its state and the finished job's JSON members.
std::pair<job_state, std::string> run_job(const served_folder& folder, const action& a, const std::string& model,
                                          std::map<std::string, std::string, std::less<>> fields, io::writer_backend writer) {
    // Every name the library gets is pinned beneath the served folder by descriptor: a
    // folder swapped for a link during the job cannot redirect a read or a write. The
    // pins live until the job is done (deque: stable addresses for show_pinned).
    std::deque<pinned_path> pins;
    auto pinned_names = [&] {
        std::vector<const pinned_path*> all;
        for (const auto& p : pins) all.push_back(&p);
        return all;
    };
    auto shown = [&](std::string text, bool json) { return show_pinned(std::move(text), pinned_names(), json); };
    auto fail = [&](error e) {
        e.message = shown(e.message, false);
        e.hint = shown(e.hint, false);
        return std::pair{e.code == error_code::interrupted ? job_state::cancelled : job_state::failed, error_members(e)};
    };
    auto model_pin = folder.pin(model, pin_kind::existing);
    if (!model_pin) return fail(std::move(model_pin).error());
    pins.push_back(std::move(*model_pin));

    action_input input;
    input.root = folder.path();
    input.model = pins.back().path;
    input.fields = std::move(fields);
    input.writer = writer;
    input.cancel = &worker_cancel;
    input.locate = [&](std::string_view field, std::string_view value) -> result<fs::path> {
        ONNXSTREAM_ASSIGN(auto pin, folder.pin(value, pin_kind_of(field)));
        pins.push_back(std::move(pin));
        return pins.back().path;
    };
    const auto crash_at = crash_point(a.name);
    if (crash_at == "start") crash();
    if (crash_at == "named-temporary") {
        // A writer's temporary with a name, as on a file system without O_TMPFILE.
        if (auto output = planned_output(a, input); output && !output->empty())
            if (auto file = io::output_file::create(*output, 0, {.overwrite = false, .preallocate = false, .anonymous = false}))
                crash();
    }
    auto last_sent = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    std::string last_stage;
    std::mutex progress_mutex;
    input.on_progress = [&](const ops::progress_event& event) {
        if (crash_at == "progress") crash();
        const std::lock_guard lock(progress_mutex);
        const auto now = std::chrono::steady_clock::now();
        // The page redraws a few times a second; a pipe full of events would only slow the job.
        if (event.stage == last_stage && event.done < event.total && now - last_sent < std::chrono::milliseconds(50)) return;
        last_stage = event.stage;
        last_sent = now;
        send({"progress", event.stage, event.tensor, std::to_string(event.done), std::to_string(event.total)});
    };
    auto outcome = run_action(a, input);
    if (!outcome) return fail(std::move(outcome).error());
    report::json_writer files;
    files.begin_array();
    for (const auto& f : outcome->outputs) {
        std::error_code ec;
        const auto size = fs::file_size(f, ec);
        files.begin_object()
            .field("path", relative_to(fs::path(shown(f.string(), false)), folder.path()))
            .field("size", ec ? 0 : size)
            .end_object();
    }
    files.end_array();
    return {job_state::done,
            shown("\"passed\":" + std::string(outcome->passed ? "true" : "false") + ",\"outputs\":" + files.text() +
                      ",\"text\":" + report::json_quote(outcome->report_text) + ",\"result\":" + outcome->report_json,
                  true)};
}

}  // namespace

int run_job_worker() {
    prepare_worker_side();
    frame_reader reader;
    const auto head = read_frame(STDIN_FILENO, reader);
    if (!head || head->size() != 5 || (*head)[0] != "job") return 2;
    const auto& root = (*head)[1];
    const auto& action_name = (*head)[2];
    const auto& model = (*head)[3];
    const auto writer = static_cast<io::writer_backend>(std::atoi((*head)[4].c_str()));
    std::map<std::string, std::string, std::less<>> fields;
    for (;;) {
        auto next = read_frame(STDIN_FILENO, reader);
        if (!next) return 2;
        if (next->size() == 1 && (*next)[0] == "go") break;
        if (next->size() != 3 || (*next)[0] != "field") return 2;
        fields.insert_or_assign((*next)[1], (*next)[2]);
    }
    std::thread([] {
        char buffer[256];
        for (;;) {
            const auto n = ::read(STDIN_FILENO, buffer, sizeof buffer);
            if (n == 0 || (n < 0 && errno != EINTR)) break;
        }
        worker_cancel.store(true);
    }).detach();

    std::pair<job_state, std::string> finished;
    try {
        const auto* a = find_action(action_name);
        auto folder = served_folder::open(root);
        if (a == nullptr) finished = {job_state::failed, error_members({error_code::invalid_argument, "no such action"})};
        else if (!folder) finished = {job_state::failed, error_members(folder.error())};
        else finished = run_job(*folder, *a, model, std::move(fields), writer);
    } catch (const std::exception& e) {
        finished = {job_state::failed, error_members({error_code::io, std::string("the job failed: ") + e.what(),
                                                      "this is a bug in onnxstream; the server goes on"})};
    }
    send({"finish", std::to_string(static_cast<int>(finished.first)), finished.second});
    return 0;
}

}  // namespace onnxstream::server
