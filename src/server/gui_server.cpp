#include "gui_server.hpp"

#include "actions.hpp"
#include "admission.hpp"
#include "byte_ranges.hpp"
#ifndef _WIN32
#include "connection_gate.hpp"
#endif
#include "jobs.hpp"
#include "page.hpp"
#include "served_folder.hpp"

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/ops/graph_view.hpp>
#include <onnxstream/ops/inspect.hpp>
#include <onnxstream/report/json.hpp>

#include <httplib.h>

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

// As the page names a file of the folder: "" for the folder itself.
std::string path_in_folder(const fs::path& path, const fs::path& root) {
    std::error_code ignored;
    const auto rel = fs::relative(path, root, ignored);
    return rel == "." ? std::string() : rel.generic_string();
}

class gui_server {
public:
    gui_server(const serve_options& options, served_folder folder)
        : options_(options), folder_(std::move(folder)), root_(folder_.path()), jobs_(folder_) {}

    result<void> run() {
#ifndef _WIN32
        // Every connection passes the gate before httplib reads from it (connection_gate.hpp
        // says why), and carries one request, so that every request does. Windows has no
        // gate (it finds sockets in /proc): httplib's own pool serves, admission() is applied
        // to each parsed request, and the read timeout bounds a stalled head.
        server_.new_task_queue = [this] {
            return new connection_gate(policy_, [](const error& e) { return report::error_json(e, page_wording()); });
        };
#endif
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

    // A path the page names, as given: every use opens it beneath the folder (served_folder).
    static std::string path_param(const httplib::Request& req, const char* name = "path") { return req.get_param_value(name); }

    // A relative path as the page shows it: '/'-separated, no "." parts, "" for the folder.
    static std::string normal_relative(const std::string& relative) {
        auto normal = fs::path(relative).lexically_normal().generic_string();
        while (!normal.empty() && normal.back() == '/') normal.pop_back();
        return normal == "." ? std::string() : normal;
    }

    static int status_of(const error& e) {
        switch (e.code) {
            case error_code::unsafe_location: return 403;
            case error_code::missing_data: return 404;
            case error_code::output_exists: return 409;
            case error_code::io: return 500;
            default: return 400;
        }
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
        server_.Get("/graph.js", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(page_graph_js()), "text/javascript; charset=utf-8");
        });
        server_.Get("/app.css", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(page_css()), "text/css; charset=utf-8");
        });
        server_.Get("/api/actions", [](const httplib::Request&, httplib::Response& res) { send_json(res, actions_json()); });
        server_.Get("/api/list", [this](const httplib::Request& req, httplib::Response& res) { list(req, res); });
        server_.Get("/api/inspect", [this](const httplib::Request& req, httplib::Response& res) { inspect(req, res); });
        server_.Get("/api/graph", [this](const httplib::Request& req, httplib::Response& res) { graph(req, res); });
        server_.Get("/api/output", [this](const httplib::Request& req, httplib::Response& res) { default_output(req, res); });
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
                return send_error(res, 503,
                                  error{error_code::io, "too many downloads are waiting to start", "try again in a minute"});
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
        const auto relative = path_param(req);
        auto opened = folder_.open_beneath(relative, O_RDONLY | O_DIRECTORY);
        if (!opened) {
            auto e = std::move(opened).error();
            if (e.code == error_code::invalid_argument || e.code == error_code::missing_data)
                return send_error(res, 404, error{error_code::invalid_argument, "not a folder: " + relative, ""});
            return send_error(res, status_of(e), e);
        }
        auto listed = list_folder(std::move(*opened));
        if (!listed) return send_error(res, 500, error{error_code::io, "cannot list " + relative, ""});
        struct entry {
            std::string name;
            bool folder;
            std::uint64_t size;
            bool outside;  // a link: listed, never followed (it may lead out of the folder)
        };
        std::vector<entry> entries;
        for (const auto& e : *listed)
            if (!e.name.starts_with("."))
                entries.push_back({e.name, e.kind == entry_kind::folder, e.size, e.kind == entry_kind::link});
        std::sort(entries.begin(), entries.end(),
                  [](const entry& a, const entry& b) { return a.folder != b.folder ? a.folder : a.name < b.name; });
        report::json_writer json;
        json.begin_object().field("ok", true).field("path", normal_relative(relative)).key("entries").begin_array();
        for (const auto& e : entries) json.object("name", e.name, "folder", e.folder, "size", e.size, "outside", e.outside);
        json.end_array().end_object();
        send_json(res, json.text());
    }

    // The model the page names, pinned beneath the folder for the library to open.
    result<pinned_path> model_param(const httplib::Request& req) const {
        auto pinned = folder_.pin(path_param(req), pin_kind::existing);
        if (!pinned && pinned.error().code != error_code::unsafe_location)
            return failure(error_code::invalid_argument, "no model file at '" + req.get_param_value("path") + "'",
                           "pick a .onnx file in the list");
        return pinned;
    }

    // Paths the library reports for a pinned model: as the page names them, relative to the folder.
    std::string shown_relative(const fs::path& path, const pinned_path& pin) const {
        const pinned_path* pins[] = {&pin};
        return path_in_folder(fs::path(show_pinned(path.string(), pins, false)), root_);
    }

    void inspect(const httplib::Request& req, httplib::Response& res) const {
        auto model = model_param(req);
        if (!model) return send_error(res, 400, model.error());
        const pinned_path* pins[] = {&*model};
        auto r = ops::inspect(model->path, {});
        if (!r) {
            auto e = std::move(r).error();
            e.message = show_pinned(e.message, pins, false);
            e.hint = show_pinned(e.hint, pins, false);
            return send_error(res, 422, e);
        }
        // Paths relative to the served folder: the page shows where each file was looked for.
        for (auto& f : r->data_files)
            if (f.path) f.path = shown_relative(*f.path, *model);
        r->path = path_in_folder(model->shown, root_);
        send_json(res, show_pinned(report::to_json(*r, page_wording()), pins, true));
    }

    // The graphs as the page draws them (ops::graph_view_pieces): built whole before the
    // first byte goes (a graph too large to show is an error, never half a document), then
    // sent piece by piece, each freed once sent: never joined into one string.
    void graph(const httplib::Request& req, httplib::Response& res) const {
        auto model = model_param(req);
        if (!model) return send_error(res, 400, model.error());
        const pinned_path* pins[] = {&*model};
        auto r = ops::graph_view_pieces(model->path, {});
        if (!r) {
            auto e = std::move(r).error();
            e.message = show_pinned(e.message, pins, false);
            e.hint = show_pinned(e.hint, pins, false);
            return send_error(res, 422, e);
        }
        // The document holds no path of ours: data file locations are as the model writes them.
        auto pieces = std::make_shared<std::vector<std::string>>(std::move(*r));
        std::size_t total = 0;
        for (const auto& p : *pieces) total += p.size();
        res.set_content_provider(total, "application/json",
                                 [pieces, next = std::size_t{0}, at = std::size_t{0}](std::size_t offset, std::size_t,
                                                                                      httplib::DataSink& sink) mutable {
                                     // Pieces go once, in order: a request for a range is not served.
                                     if (offset != at) return false;
                                     if (next == pieces->size()) return true;
                                     auto& piece = (*pieces)[next++];
                                     at += piece.size();
                                     const bool sent = sink.write(piece.data(), piece.size());
                                     std::string().swap(piece);
                                     return sent;
                                 });
    }

    // The output an action writes when its output field is left empty (actions.cpp
    // default_output_name), for the form to show: {"ok": true, "output": "m.merged.onnx"}.
    void default_output(const httplib::Request& req, httplib::Response& res) const {
        auto model = model_param(req);
        if (!model) return send_error(res, 400, model.error());
        const auto* a = find_action(req.get_param_value("action"));
        if (a == nullptr) return send_error(res, 400, error{error_code::invalid_argument, "no such action", ""});
        std::map<std::string, std::string, std::less<>> fields;
        for (const auto& [name, value] : req.params)
            if (name != "path" && name != "action") fields.insert_or_assign(name, value);
        report::json_writer json;
        json.begin_object().field("ok", true);
        json.field("output", default_output_name(*a, path_in_folder(model->shown, root_), fields)).end_object();
        send_json(res, json.text());
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
        // A walk beneath the folder: each folder is opened from the served one without
        // following a link, so a folder swapped for a link while walking is skipped, never entered.
        std::vector<std::string> stack{""};
        std::size_t walked = 0;
        std::size_t found = 0;
        while (!stack.empty() && walked < max_walked && found < max_found) {
            const auto current = std::move(stack.back());
            stack.pop_back();
            auto opened = folder_.open_beneath(current, O_RDONLY | O_DIRECTORY);
            if (!opened) continue;
            auto listed = list_folder(std::move(*opened));
            if (!listed) continue;
            for (const auto& e : *listed) {
                if (++walked > max_walked || found >= max_found) break;
                const auto relative = current.empty() ? e.name : current + "/" + e.name;
                if (e.kind == entry_kind::folder) {
                    stack.push_back(relative);
                } else if (e.kind == entry_kind::file && e.name == name && e.size == size) {
                    json.value(relative);
                    ++found;
                }
            }
        }
        json.end_array().end_object();
        send_json(res, json.text());
    }

    void download(const httplib::Request& req, httplib::Response& res) const {
        // Opened beneath the folder with no link followed, then checked on the descriptor:
        // the bytes sent are the file's that was checked.
        const auto relative = path_param(req);
        auto opened = folder_.open_beneath(relative, O_RDONLY | O_NONBLOCK);
        if (!opened) {
            auto e = std::move(opened).error();
            if (e.code == error_code::unsafe_location) return send_error(res, 403, e);
            return send_error(res, 404, error{error_code::invalid_argument, "no file at '" + relative + "'", ""});
        }
        const auto file_size = regular_file_size(opened->get());
        if (!file_size) return send_error(res, 404, error{error_code::invalid_argument, "no file at '" + relative + "'", ""});
        const auto size = *file_size;
        auto shared = std::make_shared<unique_fd>(std::move(*opened));
        std::string name = fs::path(relative).filename().string();
        for (auto& c : name)
            if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
        res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
        send_file_bytes(req, res, static_cast<std::uint64_t>(size), std::move(shared));
    }

    // The whole file, the one range asked for, or 416 (byte_ranges.hpp). The length is sent
    // as a header and the provider has none, so that httplib applies no Range of its own.
    static void send_file_bytes(const httplib::Request& req, httplib::Response& res, std::uint64_t size,
                                std::shared_ptr<unique_fd> fd) {
        const auto range = resolve_byte_range(req.get_header_value("Range"), size);
        res.set_header("Accept-Ranges", "bytes");
        if (range.answer == range_answer::unsatisfiable) {
            *fd = unique_fd();
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
                const auto n = read_at(fd->get(), buffer.data(), static_cast<std::size_t>(wanted), range.first + offset);
                if (n <= 0) return false;
                return sink.write(buffer.data(), static_cast<std::size_t>(n));
            },
            [fd](bool) { *fd = unique_fd(); });
    }

    // The only upload: a file dropped on the page that is not under the folder yet. It is
    // written as every output is (io::output_file): a temporary in the pinned folder with
    // no name where the file system allows it, so that Ctrl-C, or any signal the CLI
    // turns into a clean exit (abandon_all_outputs), leaves nothing behind; committed
    // only when every byte arrived, and never over an existing file.
    void upload(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) const {
        const auto dir = path_param(req, "dir");
        const auto name = req.get_param_value("name");
        if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." || name.starts_with("."))
            return send_error(res, 400, error{error_code::invalid_argument, "upload needs a plain file name", ""});
        const auto relative = dir.empty() ? name : dir + "/" + name;
        auto target = folder_.pin(relative, pin_kind::destination);
        if (!target) {
            auto e = std::move(target).error();
            return send_error(res, e.code == error_code::unsafe_location ? 403 : 400, e);
        }
        const auto shown = path_in_folder(target->shown, root_);
        const auto exists = [&] {
            return send_error(
                res, 409,
                error{error_code::output_exists, shown + " already exists", "it was not replaced; pick it in the list"});
        };
        auto created = io::output_file::create(target->path, 0, {.overwrite = false, .preallocate = false});
        if (!created) {
            if (created.error().code == error_code::output_exists) return exists();
            return send_error(res, 500, error{error_code::io, "cannot create a file in " + normal_relative(dir), ""});
        }
        std::uint64_t offset = 0;
        const bool received = reader([&](const char* data, std::size_t length) {
            while (length > 0) {
                const auto n = write_at(created->descriptor(), data, length, offset);
                if (n <= 0) return false;
                data += n;
                offset += static_cast<std::uint64_t>(n);
                length -= static_cast<std::size_t>(n);
            }
            return true;
        });
        if (!received) {
            created->discard();
            return send_error(res, 500, error{error_code::io, "the upload of " + name + " did not complete", "drop it again"});
        }
        if (auto committed = created->commit(); !committed) {
            if (committed.error().code == error_code::output_exists) return exists();
            return send_error(res, 500, error{error_code::io, "the upload of " + name + " did not complete", "drop it again"});
        }
        send_json(res, "{\"ok\":true,\"path\":" + report::json_quote(shown) + "}");
    }

    void start_job(const httplib::Request& req, httplib::Response& res) {
        const auto* a = find_action(req.get_param_value("action"));
        if (a == nullptr) return send_error(res, 400, error{error_code::invalid_argument, "no such action", ""});
        job_request request;
        request.operation = a;
        request.model = path_param(req);
        request.writer = options_.writer;
        for (const auto* f : a->fields) {
            const std::string name(f->name);
            if (req.has_param(name)) request.fields.emplace(name, req.get_param_value(name));
        }
        auto started = jobs_.start(std::move(request));
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
    served_folder folder_;
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
    ONNXSTREAM_ASSIGN(auto folder, served_folder::open(options.root));
    gui_server server(options, std::move(folder));
    return server.run();
}

}  // namespace onnxstream::server
