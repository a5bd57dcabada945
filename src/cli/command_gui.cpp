#include "cli_common.hpp"
#include "platform.hpp"

#include <array>
#include <cstdio>
#include <filesystem>

#ifdef ONNXSTREAM_HAVE_GUI
#include <gui_module.hpp>

#ifdef ONNXSTREAM_GUI_MODULE_BUILT
#include <onnxstream/io/loadable_module.hpp>
#include <onnxstream/ops/graph_view.hpp>
#else
#include <job_worker.hpp>
#endif
#endif

namespace onnxstream::cli {
namespace {

constexpr std::string_view gui_help =
    "usage: onnxstream gui [DIR] [--port N] [--host ADDR] [--no-browser]\n"
    "\n"
    "Serves a web page for the models under DIR (default: the current folder) and prints its\n"
    "URL: browse, drop files, see what inspect and analyze say, run Merge, Split, Repack,\n"
    "Optimize, Verify and Diff with a progress bar and a Cancel button. Works on the files\n"
    "where they are: weights never travel to the browser. Every path stays inside DIR.\n"
    "The URL carries a random token after its '#' (the browser keeps it out of every request\n"
    "but the page's own); only this machine can connect unless --host says so.\n"
    "Stop it with Ctrl-C.\n"
    "\n"
    "  --port N       the port, 0 to 65535 (default, or 0: a free one)\n"
    "  --host ADDR    the address to listen on (default 127.0.0.1). Another address, such as\n"
    "                 0.0.0.0, makes the page reachable from the network: the token is then\n"
    "                 the only guard, and the page and this command say so\n"
    "  --no-browser   do not open a browser, only print the URL\n";

constexpr std::array gui_options{opt_help, opt_quiet, value_option("--port"), value_option("--host"),
                                 flag_option("--no-browser")};

#ifdef ONNXSTREAM_HAVE_GUI
#ifdef ONNXSTREAM_GUI_MODULE_BUILT
// What of the library only the module calls: referenced here (and kept by `used`), so
// that the linker takes it from the static library into the binary the module binds to.
[[gnu::used]] constexpr auto* graph_view_for_module = &ops::graph_view_json;

// The server, from the gui module (gui_module.hpp says why it is one), or why it is not there.
result<const server::gui_module_api*> gui_server() {
    constexpr const char* module_name = "onnxstream-gui.so";
    const auto found = io::load_module(
        module_name, onnxstream_gui_module_symbol,
        {ONNXSTREAM_MODULE_FROM_BINDIR, ONNXSTREAM_GUI_MODULE_INSTALLED, ONNXSTREAM_GUI_MODULE_BUILT});
    const char* hint =
        "reinstall onnxstream (cmake --install puts the module in LIBDIR/onnxstream), or run the "
        "onnxstream of the build folder, which has it beside it";
    std::string why;
    if (found.outcome == io::module_outcome::not_found) {
        why = std::string("its gui module (") + module_name + ") is neither beside it nor where it is installed";
    } else if (found.outcome == io::module_outcome::not_loaded) {
        why = "its gui module did not load (" + found.detail + ")";
    } else {
        using entry = const server::gui_module_api* (*)();
        const auto* api = found.entry != nullptr ? reinterpret_cast<entry>(found.entry)() : nullptr;
        if (api != nullptr && api->version == server::gui_module_version && api->serve != nullptr &&
            api->random_token != nullptr && api->is_loopback != nullptr && api->run_worker != nullptr)
            return api;
        why = found.path.string() + " is not the gui module of this build of onnxstream";
    }
    return failure(error_code::unsupported, "onnxstream cannot start the gui: " + why, hint);
}
#else
// The server, linked into the binary.
result<const server::gui_module_api*> gui_server() {
    static constexpr server::gui_module_api linked{.version = server::gui_module_version,
                                                   .serve = &server::serve,
                                                   .random_token = &server::random_token,
                                                   .is_loopback = &server::is_loopback,
                                                   .run_worker = &server::run_job_worker};
    return &linked;
}
#endif

#endif

}  // namespace

int run_gui(std::span<const std::string> argv, const command_context& context) {
    auto p = prepare("gui", gui_help, argv, gui_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() > 1) return usage_error("gui", "gui takes at most one DIR");
#if !defined(ONNXSTREAM_HAVE_GUI) && defined(_WIN32)
    (void)context;
    return fail(error{error_code::unsupported, "this Windows build of onnxstream was built without the gui",
                      "run the commands themselves ('onnxstream --help' lists them); a build with "
                      "cpp-httplib's header has it (docs/windows.md)"},
                false);
#elif !defined(ONNXSTREAM_HAVE_GUI)
    (void)context;
    return fail(error{error_code::unsupported, "this onnxstream was built without the gui (cpp-httplib was not found)",
                      "install it (apt-get install libcpp-httplib-dev, or scripts/install_deps.sh) and build again"},
                false);
#else
    const auto loaded = gui_server();
    if (!loaded) return fail(loaded.error(), false);
    const auto& gui = **loaded;
    server::serve_options options;
    options.root = args.positionals.empty() ? std::filesystem::path(".") : std::filesystem::path(args.positionals[0]);
    if (const auto host = args.value("--host")) options.host = *host;
    if (const auto port = args.value("--port")) {
        const auto parsed = parse_number(*port, "--port", 0, 65535);
        if (!parsed)
            return usage_error("gui", "--port takes a number from 0 to 65535 (0: a free one), not " + terminal_safe(*port));
        options.port = static_cast<std::uint16_t>(*parsed);
    }
    const bool network = !gui.is_loopback(options.host);
    if (network)
        print_text(stderr,
                   "onnxstream: warning: listening on %s: other machines on this network can reach the page\n"
                   "  by any of this machine's addresses; the token is the only guard: anyone with the URL can\n"
                   "  read and write files under the folder\n",
                   terminal_safe(options.host).c_str());
    options.token = gui.random_token();
    options.stop = context.cancel;
    options.writer = writer_from_environment(io::writer_backend::automatic);
    const bool browser = !args.flag("--no-browser");
    const bool quiet = p.flags.quiet;
    options.on_listening = [&](std::uint16_t port) {
        const auto shown_host = options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
        // The token rides in the fragment, which a browser sends to no server: the page reads
        // it and sends it in a header to this server alone (a cookie has no port, and would
        // go to every server on this machine).
        const bool any_address = options.host == "0.0.0.0" || options.host == "::" || options.host == "[::]";
        const auto url = "http://" + (any_address ? std::string("127.0.0.1") : shown_host) + ":" + std::to_string(port) +
                         "/#token=" + options.token;
        std::printf("%s\n", url.c_str());
        std::fflush(stdout);
        if (!quiet) std::fprintf(stderr, "onnxstream: serving %s; stop with Ctrl-C\n", options.root.string().c_str());
        if (browser && !platform::open_browser(url))
            std::fprintf(stderr, "onnxstream: no browser could be started; open the URL above in one\n");
    };
    // Ctrl-C is how the gui is meant to stop: no "interrupted" error then.
    platform::interrupt_is_the_normal_stop();
    auto served = gui.serve(options);
    if (!served) return fail(served.error(), false);
    // Windows: Ctrl-C stopped the server through `cancel` (platform.hpp); POSIX exits in
    // its signal thread and never gets here on one.
    if (context.cancel != nullptr && context.cancel->load()) return exit_interrupted;
    return exit_ok;
#endif
}

// Runs one page job for the gui server (job_worker.hpp): its request on stdin, its
// progress and result on stdout. Not for people, so not in the list of commands.
int run_gui_worker(std::span<const std::string> argv, const command_context& context) {
    (void)context;  // a cancel arrives as the end of stdin; a signal ends the worker as any command
    if (!argv.empty()) return usage_error("gui-worker", "gui-worker takes no arguments");
#ifndef ONNXSTREAM_HAVE_GUI
    return fail(error{error_code::invalid_argument, "this onnxstream was built without the gui", ""}, false);
#else
    const auto loaded = gui_server();
    if (!loaded) return fail(loaded.error(), false);
    return (*loaded)->run_worker();
#endif
}

}  // namespace onnxstream::cli
