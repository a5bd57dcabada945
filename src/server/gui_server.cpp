#include "gui_server.hpp"

#include "actions.hpp"
#include "admission.hpp"
#include "byte_ranges.hpp"
#include "connection_gate.hpp"
#include "jobs.hpp"
#include "page.hpp"

#include <onnxstream/onnx/data_resolver.hpp>
#include <onnxstream/ops/analyze.hpp>
#include <onnxstream/ops/inspect.hpp>
#include <onnxstream/report/json.hpp>

#include <httplib.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t max_found = 50;
constexpr std::size_t max_walked = 200000;

// A download link cannot carry the token in a header, and a token in a URL stays in the
// browser's history and download list. So a link is opened with a ticket: asked for with the
// token just before, good for one download of one path, for a minute.
constexpr auto ticket_lifetime = std::chrono::seconds(60);
constexpr std::size_t max_tickets = 256;

std::string relative_to(const fs::path& path, const fs::path& root) {
    std::error_code ignored;
    const auto rel = fs::relative(path, root, ignored);
    return rel == "." ? std::string() : rel.generic_string();
}

class gui_server {
public:
    explicit gui_server(const serve_options& options, fs::path root) : options_(options), root_(std::move(root)), jobs_(root_) {}

    result<void> run() {
        // Every connection passes the gate before httplib reads from it (connection_gate.hpp
        // says why), and carries one request, so that every request does.
        server_.new_task_queue = [this] {
            return new connection_gate(policy_, [](const error& e) { return report::error_json(e, page_wording()); });
        };
        server_.set_keep_alive_max_count(1);
        // A body (an upload) that stops for this long is abandoned; the head has its own deadline.
        server_.set_read_timeout(10);
        server_.set_write_timeout(30);
        server_.set_payload_max_length(std::numeric_limits<std::size_t>::max());  // uploads stream to a file
        server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            return admit(req, res) ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
        });
        server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
            send_error(res, 500, error{error_code::io, "the request failed inside the server", "try again"});
        });
        routes();
        const int port = options_.port == 0 ? server_.bind_to_any_port(options_.host)
                                            : (server_.bind_to_port(options_.host, options_.port) ? options_.port : -1);
        if (port <= 0)
            return failure(error_code::io, "cannot listen on " + options_.host + ":" + std::to_string(options_.port),
                           "the port may be taken: choose another with --port, or leave it out for a free one");
        port_ = static_cast<std::uint16_t>(port);
        policy_.token = options_.token;
        policy_.bind_host = options_.host;
        policy_.port = port_;
        policy_.network = !is_loopback(options_.host);
        std::thread watcher([this] {
            while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (options_.on_listening) options_.on_listening(port_);
            while (options_.stop == nullptr || !options_.stop->load())
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            jobs_.stop_all();
            server_.stop();
        });
        server_.listen_after_bind();
        if (options_.stop == nullptr) {
            jobs_.stop_all();
        }
        watcher.join();
        return {};
    }

private:
    // ------------------------------------------------------------ who may ask

    // The gate has applied admission() to the head already; this applies it again to what
    // httplib parsed (before it reads a body), for a connection the gate could not look at.
    bool admit(const httplib::Request& req, httplib::Response& res) {
        res.set_header("Cache-Control", "no-store");
        res.set_header("Referrer-Policy", "no-referrer");
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("X-Frame-Options", "DENY");
        const auto host = req.get_header_value("Host");
        const auto origin = req.get_header_value("Origin");
        const auto site = req.get_header_value("Sec-Fetch-Site");
        const auto token = req.get_header_value("X-Onnxstream-Token");
        const auto length = req.get_header_value("Content-Length");
        request_head head;
        head.method = req.method;
        head.path = req.path;
        head.query = req.has_param("ticket") ? "ticket=" : "";
        head.host = host;
        head.origin = origin;
        head.sec_fetch_site = site;
        head.token = token;
        head.content_length = length;
        head.has_content_length = req.has_header("Content-Length");
        head.has_transfer_encoding = req.has_header("Transfer-Encoding");
        if (const auto refused = admission(policy_, head)) {
            send_error(res, refused->status, refused->why);
            return false;
        }
        return true;
    }

    static void send_error(httplib::Response& res, int status, const error& e) {
        res.status = status;
        res.set_content(report::error_json(e, page_wording()), "application/json");
    }

    static void send_json(httplib::Response& res, const std::string& body) { res.set_content(body, "application/json"); }

    result<fs::path> path_param(const httplib::Request& req, const char* name = "path") const {
        return onnx::contained_path(root_, req.get_param_value(name));
    }

    // ------------------------------------------------------------ routes

    void routes() {
        server_.Get("/", [](const httplib::Request&, httplib::Response& res) {
            res.set_header("Content-Security-Policy",
                           "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'");
            res.set_content(std::string(page_html()), "text/html; charset=utf-8");
        });
        server_.Get("/app.js", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(page_js()), "text/javascript; charset=utf-8");
        });
        server_.Get("/app.css", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(page_css()), "text/css; charset=utf-8");
        });
        server_.Get("/api/actions", [](const httplib::Request&, httplib::Response& res) { send_json(res, actions_json()); });
        server_.Get("/api/list", [this](const httplib::Request& req, httplib::Response& res) { list(req, res); });
        server_.Get("/api/inspect", [this](const httplib::Request& req, httplib::Response& res) { inspect(req, res); });
        server_.Get("/api/analyze", [this](const httplib::Request& req, httplib::Response& res) { analyze(req, res); });
        server_.Get("/api/find", [this](const httplib::Request& req, httplib::Response& res) { find(req, res); });
        server_.Get("/api/server", [this](const httplib::Request&, httplib::Response& res) {
            send_json(res, std::string("{\"ok\":true,\"network\":") + (policy_.network ? "true" : "false") + "}");
        });
        server_.Post("/api/tickets", [this](const httplib::Request& req, httplib::Response& res) { issue_ticket(req, res); });
        server_.Get("/api/file", [this](const httplib::Request& req, httplib::Response& res) {
            if (req.has_param("ticket") && !take_ticket(req.get_param_value("ticket"), req.get_param_value("path")))
                return send_error(res, 403,
                                  error{error_code::invalid_argument, "this download link has expired", "click the link again"});
            download(req, res);
        });
        server_.Post("/api/upload", [this](const httplib::Request& req, httplib::Response& res,
                                           const httplib::ContentReader& reader) { upload(req, res, reader); });
        server_.Post("/api/jobs", [this](const httplib::Request& req, httplib::Response& res) { start_job(req, res); });
        server_.Get(R"(/api/jobs/(\d+)/events)",
                    [this](const httplib::Request& req, httplib::Response& res) { job_events(req, res); });
        server_.Post(R"(/api/jobs/(\d+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
            const auto j = jobs_.find(req.matches[1]);
            if (!j) return send_error(res, 404, error{error_code::invalid_argument, "no such job", ""});
            j->cancel();
            send_json(res, "{\"ok\":true}");
        });
    }

    // ------------------------------------------------------------ tickets (see ticket_lifetime)

    // The path is checked where every download's is, when the ticket is used.
    void issue_ticket(const httplib::Request& req, httplib::Response& res) {
        if (req.get_param_value("path").empty())
            return send_error(res, 400, error{error_code::invalid_argument, "a download ticket names a file", ""});
        const auto now = std::chrono::steady_clock::now();
        auto ticket = random_token();
        {
            std::lock_guard lock(tickets_mutex_);
            std::erase_if(tickets_, [&](const auto& t) { return t.second.expires <= now; });
            if (tickets_.size() >= max_tickets)
                return send_error(res, 503, error{error_code::io, "too many downloads are waiting to start", "try again in a minute"});
            tickets_.emplace(ticket, ticket_entry{req.get_param_value("path"), now + ticket_lifetime});
        }
        send_json(res, "{\"ok\":true,\"ticket\":\"" + ticket + "\"}");
    }

    // One use: the ticket is gone whether or not it fits.
    bool take_ticket(const std::string& ticket, const std::string& path) {
        std::lock_guard lock(tickets_mutex_);
        const auto it = tickets_.find(ticket);
        if (it == tickets_.end()) return false;
        const bool fits = it->second.path == path && std::chrono::steady_clock::now() < it->second.expires;
        tickets_.erase(it);
        return fits;
    }

    void list(const httplib::Request& req, httplib::Response& res) const {
        auto folder = path_param(req);
        if (!folder) return send_error(res, 403, folder.error());
        std::error_code ec;
        if (!fs::is_directory(*folder, ec))
            return send_error(res, 404, error{error_code::invalid_argument, "not a folder: " + req.get_param_value("path"), ""});
        struct entry {
            std::string name;
            bool folder;
            std::uint64_t size;
            bool outside;  // a link out of the served folder: listed, never followed
        };
        std::vector<entry> entries;
        for (fs::directory_iterator it(*folder, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
             it.increment(ec)) {
            const auto name = it->path().filename().string();
            if (name.starts_with(".")) continue;
            std::error_code ignored;
            const bool is_folder = it->is_directory(ignored);
            const auto size = is_folder ? 0 : it->file_size(ignored);
            const bool outside = !onnx::contained_path(root_, relative_to(it->path(), root_)).has_value();
            entries.push_back({name, is_folder, ignored ? 0 : size, outside});
        }
        std::sort(entries.begin(), entries.end(),
                  [](const entry& a, const entry& b) { return a.folder != b.folder ? a.folder : a.name < b.name; });
        report::json_writer json;
        json.begin_object().field("ok", true).field("path", relative_to(*folder, root_)).key("entries").begin_array();
        for (const auto& e : entries) json.object("name", e.name, "folder", e.folder, "size", e.size, "outside", e.outside);
        json.end_array().end_object();
        send_json(res, json.text());
    }

    result<fs::path> model_param(const httplib::Request& req) const {
        ONNXSTREAM_ASSIGN(auto model, path_param(req));
        std::error_code ec;
        if (!fs::is_regular_file(model, ec))
            return failure(error_code::invalid_argument, "no model file at '" + req.get_param_value("path") + "'",
                           "pick a .onnx file in the list");
        return model;
    }

    void inspect(const httplib::Request& req, httplib::Response& res) const {
        auto model = model_param(req);
        if (!model) return send_error(res, 400, model.error());
        auto r = ops::inspect(*model, {});
        if (!r) return send_error(res, 422, r.error());
        // Paths relative to the served folder: the page shows where each file was looked for.
        for (auto& f : r->data_files)
            if (f.path) f.path = relative_to(*f.path, root_);
        r->path = relative_to(r->path, root_);
        send_json(res, report::to_json(*r, page_wording()));
    }

    void analyze(const httplib::Request& req, httplib::Response& res) const {
        auto model = model_param(req);
        if (!model) return send_error(res, 400, model.error());
        auto r = ops::analyze(*model);
        if (!r) return send_error(res, 422, r.error());
        r->path = relative_to(r->path, root_);
        send_json(res, report::to_json(*r));
    }

    // Files dropped on the page arrive as a name and a size: find them under the folder.
    void find(const httplib::Request& req, httplib::Response& res) const {
        const auto name = req.get_param_value("name");
        std::uint64_t size = 0;
        try {
            size = std::stoull(req.get_param_value("size"));
        } catch (const std::exception&) {
            return send_error(res, 400, error{error_code::invalid_argument, "find needs a name and a size", ""});
        }
        report::json_writer json;
        json.begin_object().field("ok", true).key("matches").begin_array();
        std::error_code ec;
        std::size_t walked = 0;
        std::size_t found = 0;
        for (fs::recursive_directory_iterator it(root_, fs::directory_options::skip_permission_denied, ec), end;
             !ec && it != end && walked < max_walked && found < max_found; it.increment(ec), ++walked) {
            std::error_code ignored;
            if (it->is_symlink(ignored) || !it->is_regular_file(ignored)) continue;
            if (it->path().filename() != name || it->file_size(ignored) != size || ignored) continue;
            json.value(relative_to(it->path(), root_));
            ++found;
        }
        json.end_array().end_object();
        send_json(res, json.text());
    }

    void download(const httplib::Request& req, httplib::Response& res) const {
        auto file = path_param(req);
        if (!file) return send_error(res, 403, file.error());
        std::error_code ec;
        if (!fs::is_regular_file(*file, ec))
            return send_error(res, 404,
                              error{error_code::invalid_argument, "no file at '" + req.get_param_value("path") + "'", ""});
        const int fd = ::open(file->c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return send_error(res, 404, error{error_code::io, "cannot open " + req.get_param_value("path"), ""});
        const auto size = fs::file_size(*file, ec);
        auto shared = std::make_shared<int>(fd);
        std::string name = file->filename().string();
        for (auto& c : name)
            if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
        res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
        send_file_bytes(req, res, static_cast<std::uint64_t>(size), std::move(shared));
    }

    // The whole file, the one range asked for, or 416 (byte_ranges.hpp). The length is sent
    // as a header and the provider has none, so that httplib applies no Range of its own.
    static void send_file_bytes(const httplib::Request& req, httplib::Response& res, std::uint64_t size,
                                std::shared_ptr<int> fd) {
        const auto range = resolve_byte_range(req.get_header_value("Range"), size);
        res.set_header("Accept-Ranges", "bytes");
        if (range.answer == range_answer::unsatisfiable) {
            ::close(*fd);
            res.status = 416;
            res.set_header("Content-Range", "bytes */" + std::to_string(size));
            return;
        }
        res.status = range.answer == range_answer::slice ? 206 : 200;
        if (range.answer == range_answer::slice)
            res.set_header("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                                std::to_string(range.first + range.length - 1) + "/" + std::to_string(size));
        res.set_header("Content-Length", std::to_string(range.length));
        res.set_content_provider(
            "application/octet-stream",
            [fd, range](std::size_t offset, httplib::DataSink& sink) {
                if (offset >= range.length) {
                    sink.done();
                    return true;
                }
                std::array<char, 1 << 16> buffer{};
                const auto wanted = std::min<std::uint64_t>(range.length - offset, buffer.size());
                const auto n = ::pread(*fd, buffer.data(), static_cast<std::size_t>(wanted), static_cast<off_t>(range.first + offset));
                if (n <= 0) return false;
                return sink.write(buffer.data(), static_cast<std::size_t>(n));
            },
            [fd](bool) { ::close(*fd); });
    }

    // The only upload: a file dropped on the page that is not under the folder yet.
    void upload(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) const {
        auto folder = path_param(req, "dir");
        if (!folder) return send_error(res, 403, folder.error());
        const auto name = req.get_param_value("name");
        if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." || name.starts_with("."))
            return send_error(res, 400, error{error_code::invalid_argument, "upload needs a plain file name", ""});
        auto target = onnx::contained_path(*folder, name);
        if (!target) return send_error(res, 403, target.error());
        std::error_code ec;
        if (fs::exists(fs::symlink_status(*target, ec)))
            return send_error(res, 409,
                              error{error_code::output_exists, relative_to(*target, root_) + " already exists",
                                    "it was not replaced; pick it in the list"});
        const auto temporary = *folder / ("." + name + ".upload-" + random_token().substr(0, 8));
        const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            return send_error(res, 500, error{error_code::io, "cannot create a file in " + relative_to(*folder, root_), ""});
        bool ok = reader([&](const char* data, std::size_t length) {
            while (length > 0) {
                const auto n = ::write(fd, data, length);
                if (n <= 0) return false;
                data += n;
                length -= static_cast<std::size_t>(n);
            }
            return true;
        });
        ok = ::fsync(fd) == 0 && ok;
        ok = ::close(fd) == 0 && ok;
        if (ok && ::link(temporary.c_str(), target->c_str()) != 0) ok = false;  // never replaces a file
        fs::remove(temporary, ec);
        if (!ok)
            return send_error(res, 500, error{error_code::io, "the upload of " + name + " did not complete", "drop it again"});
        send_json(res, "{\"ok\":true,\"path\":" + report::json_quote(relative_to(*target, root_)) + "}");
    }

    void start_job(const httplib::Request& req, httplib::Response& res) {
        const auto* a = find_action(req.get_param_value("action"));
        if (a == nullptr) return send_error(res, 400, error{error_code::invalid_argument, "no such action", ""});
        auto model = model_param(req);
        if (!model) return send_error(res, 400, model.error());
        action_input input;
        input.root = root_;
        input.model = *model;
        input.writer = options_.writer;
        for (const auto& f : a->fields) {
            const std::string name(f.name);
            if (!req.has_param(name)) continue;
            input.fields.emplace(name, req.get_param_value(name));
            // Paths are checked before the job starts, so a refused one is an answer, not a failed job.
            if (f.kind == field_kind::path || f.kind == field_kind::model)
                if (auto checked = input.path_field(f.name); !checked) return send_error(res, 400, checked.error());
        }
        auto started = jobs_.start(*a, std::move(input));
        if (!started) return send_error(res, started.error().code == error_code::output_exists ? 409 : 400, started.error());
        send_json(res, "{\"ok\":true,\"id\":\"" + (*started)->id + "\"}");
    }

    void job_events(const httplib::Request& req, httplib::Response& res) {
        const auto j = jobs_.find(req.matches[1]);
        if (!j) return send_error(res, 404, error{error_code::invalid_argument, "no such job", ""});
        auto version = std::make_shared<std::uint64_t>(0);
        const auto root = root_;
        res.set_chunked_content_provider("text/event-stream", [j, version, root](std::size_t, httplib::DataSink& sink) {
            const auto now = j->wait_change(*version, std::chrono::milliseconds(*version == 0 ? 0 : 500));
            const bool finished = j->finished();
            const auto event = "data: " + j->event_json(root) + "\n\n";
            if (!sink.write(event.data(), event.size())) return false;
            *version = now;
            if (finished) sink.done();
            return true;
        });
    }

    struct ticket_entry {
        std::string path;
        std::chrono::steady_clock::time_point expires;
    };

    const serve_options& options_;
    admission_policy policy_;  // filled once the port is bound, before the first connection
    std::mutex tickets_mutex_;
    std::map<std::string, ticket_entry> tickets_;
    fs::path root_;
    job_table jobs_;
    httplib::Server server_;
    std::uint16_t port_ = 0;
};

}  // namespace

std::string random_token() {
    std::random_device device;
    std::string token;
    static constexpr char digits[] = "0123456789abcdef";
    for (int i = 0; i < 4; ++i) {
        auto word = device();
        for (int k = 0; k < 8; ++k, word >>= 4) token += digits[word & 0xFU];
    }
    return token;
}

bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

result<void> serve(const serve_options& options) {
    std::error_code ec;
    if (!fs::is_directory(options.root, ec))
        return failure(error_code::invalid_argument, "not a folder: " + options.root.string(), "give the folder to serve");
    ONNXSTREAM_ASSIGN(auto root, onnx::contained_path(options.root, ""));
    gui_server server(options, std::move(root));
    return server.run();
}

}  // namespace onnxstream::server
