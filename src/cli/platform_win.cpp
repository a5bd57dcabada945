// Windows: a console control handler in place of the sigwait thread. Windows runs the
// handler on a thread of its own, so it may take the outputs' lock and exit like the POSIX
// signal thread does: Ctrl-C, Ctrl-Break, closing the window or logging off wait for a
// commit in progress, remove every temporary output and exit with 130 (as after SIGINT).
#include "platform.hpp"

#include <onnxstream/io/output_file.hpp>

#include <windows.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <io.h>

namespace onnxstream::cli::platform {
namespace {

std::atomic<bool>* cancel_requested = nullptr;

BOOL WINAPI on_console_event(DWORD event) {
    if (cancel_requested != nullptr) cancel_requested->store(true);
    onnxstream::io::abandon_all_outputs();
    const char* name = event == CTRL_C_EVENT ? "Ctrl-C" : event == CTRL_BREAK_EVENT ? "Ctrl-Break" : "the console closing";
    char message[256];
    const int length = std::snprintf(message, sizeof message,
                                     "onnxstream: error: interrupted by %s\n  no incomplete output was left behind; "
                                     "run the command again to finish it\n",
                                     name);
    if (length > 0) {
        DWORD written = 0;
        ::WriteFile(::GetStdHandle(STD_ERROR_HANDLE), message, static_cast<DWORD>(std::strlen(message)), &written, nullptr);
    }
    ::ExitProcess(130);
}

}  // namespace

void install_signal_handlers(std::atomic<bool>& cancel) {
    cancel_requested = &cancel;
    ::SetConsoleCtrlHandler(on_console_event, TRUE);
}

void raise_open_file_limit() {
    // The CRT's descriptors (which the io layer hands around) stop at 512 by default.
    (void)::_setmaxstdio(8192);
}

std::vector<std::string> command_line(int argc, char** argv) {
    (void)::_setmode(::_fileno(stdout), _O_BINARY);
    // The arguments stay in the ANSI code page: std::filesystem::path converts narrow
    // strings with the C runtime's locale, which msvcrt cannot set to UTF-8, so UTF-8
    // arguments would name the wrong files (tried: "é" became "Ã©"). Names outside the
    // code page need every string-to-path conversion made UTF-8 first (README).
    return {argv, argv + argc};
}

}  // namespace onnxstream::cli::platform
