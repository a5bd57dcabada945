// What the entry point asks of the operating system, one implementation per platform
// (platform_posix.cpp, platform_win.cpp).
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace onnxstream::cli::platform {

/// Turns the first terminating signal (POSIX) or console event (Windows: Ctrl-C, Ctrl-Break,
/// the window closing) into a clean exit: `cancel` is set, a commit in progress finishes,
/// every temporary output is removed, and the process exits with 128 + the signal (130 for
/// Ctrl-C on both).
void install_signal_handlers(std::atomic<bool>& cancel);

/// For a command whose normal end is Ctrl-C (gui): from now on a terminating signal or
/// console event still ends the process as above (130 for Ctrl-C), but says nothing.
/// On Windows, Ctrl-C and Ctrl-Break then only set `cancel`: the command watches it, stops
/// its jobs (whose workers remove their temporaries) and returns exit_interrupted itself.
void interrupt_is_the_normal_stop();

/// Opens `url` with the system's default handler for it (xdg-open; Windows: the shell's
/// association), without waiting for the browser. False when that could not even start;
/// a handler that fails later says so on stderr.
bool open_browser(const std::string& url);

/// Takes the open-file limit the hard limit allows (POSIX; nothing to do on Windows).
void raise_open_file_limit();

/// Whether whatever reads stdout has gone (`| head` that stopped reading): POSIX asks the
/// pipe itself, since the write that failed may have set errno long before; Windows
/// answers from errno alone (false here).
[[nodiscard]] bool stdout_reader_gone();

/// Has the allocator map every large block on its own, so that freeing it gives the
/// memory back (glibc; nothing to do elsewhere).
void map_large_allocations();

/// The program's arguments: argv; on Windows the wide command line converted to UTF-8,
/// whatever the ANSI code page (platform_win.cpp). Also puts stdout in binary mode on
/// Windows, so that printed bytes match Linux's.
[[nodiscard]] std::vector<std::string> command_line(int argc, char** argv);

}  // namespace onnxstream::cli::platform
