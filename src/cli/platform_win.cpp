// Windows: a console control handler in place of the sigwait thread. Windows runs the
// handler on a thread of its own, so it may take the outputs' lock and exit like the POSIX
// signal thread does: Ctrl-C, Ctrl-Break, closing the window or logging off wait for a
// commit in progress, remove every temporary output and exit with 130 (as after SIGINT).
#include "platform.hpp"

#include <onnxstream/io/output_file.hpp>

#include <windows.h>
// after windows.h, which it needs
#include <shellapi.h>

#include <fcntl.h>
#include <io.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace onnxstream::cli::platform {
namespace {

std::atomic<bool>* cancel_requested = nullptr;
std::atomic<bool> quiet_stop{false};

BOOL WINAPI on_console_event(DWORD event) {
    if (cancel_requested != nullptr) cancel_requested->store(true);
    // The gui stops itself on Ctrl-C: its jobs' workers must be asked to stop and waited
    // for (killed with the process, they would leave their named temporaries).
    if (quiet_stop.load() && cancel_requested != nullptr && (event == CTRL_C_EVENT || event == CTRL_BREAK_EVENT)) return TRUE;
    onnxstream::io::abandon_all_outputs();
    if (quiet_stop.load()) ::ExitProcess(130);
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

void interrupt_is_the_normal_stop() { quiet_stop.store(true); }

void install_signal_handlers(std::atomic<bool>& cancel) {
    cancel_requested = &cancel;
    ::SetConsoleCtrlHandler(on_console_event, TRUE);
}

void map_large_allocations() {}

bool stdout_reader_gone() { return false; }

void raise_open_file_limit() {
    // The CRT's descriptors (which the io layer hands around) stop at 512 by default.
    (void)::_setmaxstdio(8192);
}

std::vector<std::string> command_line(int argc, char** argv) {
    (void)::_setmode(::_fileno(stdout), _O_BINARY);
    // The wide command line, whatever the ANSI code page, each argument in UTF-8: the
    // program's narrow strings are UTF-8 (src/io/utf8_crt_win.cpp), so they reach the
    // wide file APIs unchanged.
    int count = 0;
    wchar_t** wide = ::CommandLineToArgvW(::GetCommandLineW(), &count);
    if (wide == nullptr) return {argv, argv + argc};
    std::vector<std::string> arguments;
    arguments.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        const int size = ::WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, nullptr, 0, nullptr, nullptr);
        std::string text(size > 0 ? static_cast<std::size_t>(size) : 1, '\0');
        if (size > 0) ::WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, text.data(), size, nullptr, nullptr);
        text.pop_back();  // the terminating NUL
        arguments.push_back(std::move(text));
    }
    ::LocalFree(wide);
    return arguments;
}

bool open_browser(const std::string& url) {
    const int size = ::MultiByteToWideChar(CP_UTF8, 0, url.c_str(), -1, nullptr, 0);
    if (size <= 0) return false;
    std::wstring wide(static_cast<std::size_t>(size), L'\0');
    ::MultiByteToWideChar(CP_UTF8, 0, url.c_str(), -1, wide.data(), size);
    // The shell's handler for http: (the default browser). Above 32 means it started.
    const auto started = reinterpret_cast<std::intptr_t>(
        ::ShellExecuteW(nullptr, L"open", wide.c_str(), nullptr, nullptr, SW_SHOWNORMAL));
    return started > 32;
}

}  // namespace onnxstream::cli::platform
