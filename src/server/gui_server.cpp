#include "gui_server.hpp"

#include "actions.hpp"
#include "jobs.hpp"
#include "page.hpp"
#include "served_folder.hpp"

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/ops/analyze.hpp>
#include <onnxstream/ops/inspect.hpp>
#include <onnxstream/report/json.hpp>

#include <httplib.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t max_found = 50;
constexpr std::size_t max_walked = 200000;

bool same_token(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

std::string cookie_value(const httplib::Request& req, const std::string& name) {
    const auto cookies = req.get_header_value("Cookie");
    std::size_t at = 0;
    while (at < cookies.size()) {
        auto end = cookies.find(';', at);
        if (end == std::string::npos) end = cookies.size();
        auto part = std::string_view(cookies).substr(at, end - at);
        while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
        if (part.size() > name.size() && part.substr(0, name.size()) == name && part[name.size()] == '=')
            return std::string(part.substr(name.size() + 1));
        at = end + 1;
    }
    return {};
}

std::string relative_to(const fs::path& path, const fs::path& root) {
    std::error_code ignored;
    const auto rel = fs::relative(path, root, ignored);
    return rel == "." ? std::string() : rel.generic_string();
}

class gui_server {
public:
    gui_server(const serve_options& options, served_folder folder)
        : options_(options), folder_(std::move(folder)), root_(folder_.path()), jobs_(folder_) {}

    result<void> run() {
        server_.new_task_queue = [] { return new httplib::ThreadPool(24); };
        server_.set_keep_alive_timeout(2);
        server_.set_read_timeout(30);
        server_.set_write_timeout(30);
        server_.set_payload_max_length(std::numeric_limits<std::size_t>::max());
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

    bool host_allowed(std::string_view host) const {
        const std::string port = ":" + std::to_string(port_);
        for (const std::string& name : {std::string("127.0.0.1"), std::string("localhost"), std::string("[::1]"), options_.host})
            if (host == name + port) return true;
        return false;
    }

    bool admit(const httplib::Request& req, httplib::Response& res) {
        res.set_header("Cache-Control", "no-store");
        res.set_header("Referrer-Policy", "no-referrer");
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("X-Frame-Options", "DENY");
        // DNS rebinding: a foreign name resolving to this address must not reach the API.
        if (!host_allowed(req.get_header_value("Host"))) {
            send_error(res, 403, error{error_code::invalid_argument, "this server only answers to its own address", ""});
            return false;
        }
        // Cross-site requests: a browser names the page that sent them.
        const auto origin = req.get_header_value("Origin");
        if (!origin.empty() && (!origin.starts_with("http://") || !host_allowed(std::string_view(origin).substr(7)))) {
            send_error(res, 403, error{error_code::invalid_argument, "requests from other sites are refused", ""});
            return false;
        }
        if (req.method == "POST" && req.get_header_value("Sec-Fetch-Site") == "cross-site") {
            send_error(res, 403, error{error_code::invalid_argument, "requests from other sites are refused", ""});
            return false;
        }
        const auto cookie = cookie_name();
        std::string given = req.get_param_value("token");
        if (given.empty()) given = req.get_header_value("X-Onnxstream-Token");
        if (given.empty()) given = cookie_value(req, cookie);
        if (!same_token(given, options_.token)) {
            send_error(res, 403,
                       error{error_code::invalid_argument, "a valid token is required",
                             "open the URL that 'onnxstream gui' printed (it carries the token)"});
            return false;
        }
        if (cookie_value(req, cookie) != options_.token)
            res.set_header("Set-Cookie", cookie + "=" + options_.token + "; Path=/; HttpOnly; SameSite=Strict");
        return true;
    }

    std::string cookie_name() const { return "onnxstream_token_" + std::to_string(port_); }

    static void send_error(httplib::Response& res, int status, const error& e) {
        res.status = status;
        res.set_content(report::error_json(e, page_wording()), "application/json");
    }

    static void send_json(httplib::Response& res, const std::string& body) { res.set_content(body, "application/json"); }

    // A path the page names, as given: every use opens it beneath the folder (served_folder).
    static std::string path_param(const httplib::Request& req, const char* name = "path") {
        return req.get_param_value(name);
    }

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
        server_.Get("/app.css", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(page_css()), "text/css; charset=utf-8");
        });
        server_.Get("/api/actions", [](const httplib::Request&, httplib::Response& res) { send_json(res, actions_json()); });
        server_.Get("/api/list", [this](const httplib::Request& req, httplib::Response& res) { list(req, res); });
        server_.Get("/api/inspect", [this](const httplib::Request& req, httplib::Response& res) { inspect(req, res); });
        server_.Get("/api/analyze", [this](const httplib::Request& req, httplib::Response& res) { analyze(req, res); });
        server_.Get("/api/find", [this](const httplib::Request& req, httplib::Response& res) { find(req, res); });
        server_.Get("/api/file", [this](const httplib::Request& req, httplib::Response& res) { download(req, res); });
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

    void list(const httplib::Request& req, httplib::Response& res) const {
        const auto relative = path_param(req);
        auto opened = folder_.open_beneath(relative, O_RDONLY | O_DIRECTORY);
        if (!opened) {
            auto e = std::move(opened).error();
            if (e.code == error_code::invalid_argument || e.code == error_code::missing_data)
                return send_error(res, 404, error{error_code::invalid_argument, "not a folder: " + relative, ""});
            return send_error(res, status_of(e), e);
        }
        DIR* listing = ::fdopendir(opened->get());
        if (listing == nullptr) return send_error(res, 500, error{error_code::io, "cannot list " + relative, ""});
        (void)opened->release();  // the listing owns it now
        struct entry {
            std::string name;
            bool folder;
            std::uint64_t size;
            bool outside;  // a link: listed, never followed (it may lead out of the folder)
        };
        std::vector<entry> entries;
        while (const dirent* d = ::readdir(listing)) {
            const std::string name = d->d_name;
            if (name.starts_with(".")) continue;
            struct stat st {};
            if (::fstatat(::dirfd(listing), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            const bool link = S_ISLNK(st.st_mode);
            const bool is_folder = S_ISDIR(st.st_mode);
            const auto size = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
            entries.push_back({name, is_folder, size, link});
        }
        ::closedir(listing);
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
        return relative_to(fs::path(show_pinned(path.string(), pins, false)), root_);
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
        r->path = relative_to(model->shown, root_);
        send_json(res, show_pinned(report::to_json(*r, page_wording()), pins, true));
    }

    void analyze(const httplib::Request& req, httplib::Response& res) const {
        auto model = model_param(req);
        if (!model) return send_error(res, 400, model.error());
        const pinned_path* pins[] = {&*model};
        auto r = ops::analyze(model->path);
        if (!r) {
            auto e = std::move(r).error();
            e.message = show_pinned(e.message, pins, false);
            e.hint = show_pinned(e.hint, pins, false);
            return send_error(res, 422, e);
        }
        r->path = relative_to(model->shown, root_);
        send_json(res, show_pinned(report::to_json(*r), pins, true));
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
        // A walk by descriptor: each folder is opened from its parent without following a
        // link, so a folder swapped for a link while walking is skipped, never entered.
        struct pending {
            unique_fd folder;
            std::string relative;
        };
        std::vector<pending> stack;
        if (auto top = folder_.open_beneath("", O_RDONLY | O_DIRECTORY)) stack.push_back({std::move(*top), ""});
        std::size_t walked = 0;
        std::size_t found = 0;
        while (!stack.empty() && walked < max_walked && found < max_found) {
            auto current = std::move(stack.back());
            stack.pop_back();
            DIR* listing = ::fdopendir(current.folder.get());
            if (listing == nullptr) continue;
            (void)current.folder.release();
            while (const dirent* d = ::readdir(listing)) {
                if (++walked > max_walked || found >= max_found) break;
                const std::string entry = d->d_name;
                if (entry == "." || entry == "..") continue;
                const auto relative = current.relative.empty() ? entry : current.relative + "/" + entry;
                struct stat st {};
                if (::fstatat(::dirfd(listing), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
                if (S_ISDIR(st.st_mode)) {
                    unique_fd sub(::openat(::dirfd(listing), d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                    if (sub.get() >= 0) stack.push_back({std::move(sub), relative});
                } else if (S_ISREG(st.st_mode) && entry == name && static_cast<std::uint64_t>(st.st_size) == size) {
                    json.value(relative);
                    ++found;
                }
            }
            ::closedir(listing);
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
        struct stat st {};
        if (::fstat(opened->get(), &st) != 0 || !S_ISREG(st.st_mode))
            return send_error(res, 404, error{error_code::invalid_argument, "no file at '" + relative + "'", ""});
        const auto size = static_cast<std::uint64_t>(st.st_size);
        auto shared = std::make_shared<int>(opened->release());
        std::string name = fs::path(relative).filename().string();
        for (auto& c : name)
            if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
        res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
        res.set_content_provider(
            static_cast<std::size_t>(size), "application/octet-stream",
            [shared](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                std::array<char, 1 << 16> buffer{};
                const auto n = ::pread(*shared, buffer.data(), std::min(length, buffer.size()), static_cast<off_t>(offset));
                if (n <= 0) return false;
                return sink.write(buffer.data(), static_cast<std::size_t>(n));
            },
            [shared](bool) { ::close(*shared); });
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
        const auto shown = relative_to(target->shown, root_);
        const auto exists = [&] {
            return send_error(res, 409,
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
                const auto n = ::pwrite(created->descriptor(), data, length, static_cast<off_t>(offset));
                if (n < 0 && errno == EINTR) continue;
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
        for (const auto& f : a->fields) {
            const std::string name(f.name);
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

    const serve_options& options_;
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
