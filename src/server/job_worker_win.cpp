// The server's side of a job's worker on Windows (job_worker.hpp): CreateProcessW of this
// very executable with two pipes, in a job object that kills it when the server's handle
// to the job closes, so that a server that ends in any way takes its workers with it.
// The worker inherits its pipes and stderr only (PROC_THREAD_ATTRIBUTE_HANDLE_LIST). It is
// in a process group of its own, which the console's Ctrl-C does not reach: the server
// hears it and cancels its jobs (job_table::stop_all), each worker then removing its
// temporaries and saying nothing.
#include "job_worker.hpp"

#include "../io/handle_win.hpp"

#include <windows.h>

#include <fcntl.h>
#include <io.h>

#include <cstdio>
#include <system_error>
#include <thread>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

// Descriptors are HANDLEs, as in the io layer.
using io::win::to_descriptor;
using io::win::to_handle;

error start_failure(DWORD code) {
    return os_failure("cannot start a job's worker", {static_cast<int>(code), std::system_category()}, "try again");
}

// Our own executable's path (any length).
std::wstring own_path() {
    std::wstring path(MAX_PATH, L'\0');
    for (;;) {
        const DWORD length = ::GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size()));
        if (length == 0) return {};
        if (length < path.size()) {
            path.resize(length);
            return path;
        }
        path.resize(path.size() * 2);
    }
}

// A pipe whose `child` end alone is inheritable.
bool make_pipe(HANDLE& read_end, HANDLE& write_end, bool child_reads) {
    SECURITY_ATTRIBUTES inheritable{sizeof(SECURITY_ATTRIBUTES), nullptr, TRUE};
    if (!::CreatePipe(&read_end, &write_end, &inheritable, 0)) return false;
    ::SetHandleInformation(child_reads ? write_end : read_end, HANDLE_FLAG_INHERIT, 0);
    return true;
}

}  // namespace

result<worker_process> worker_process::spawn(const fs::path& root, const job_request& request) {
    HANDLE child_input = nullptr;
    HANDLE input = nullptr;
    if (!make_pipe(child_input, input, true)) return failure(start_failure(::GetLastError()));
    const unique_fd child_input_held(to_descriptor(child_input));
    unique_fd input_held(to_descriptor(input));
    HANDLE output = nullptr;
    HANDLE child_output = nullptr;
    if (!make_pipe(output, child_output, false)) return failure(start_failure(::GetLastError()));
    unique_fd output_held(to_descriptor(output));
    const unique_fd child_output_held(to_descriptor(child_output));
    // stderr, when the server has one: an inheritable copy for the worker's messages.
    HANDLE child_error = nullptr;
    const HANDLE own_error = ::GetStdHandle(STD_ERROR_HANDLE);
    if (own_error != nullptr && own_error != INVALID_HANDLE_VALUE)
        if (!::DuplicateHandle(::GetCurrentProcess(), own_error, ::GetCurrentProcess(), &child_error, 0, TRUE,
                               DUPLICATE_SAME_ACCESS))
            child_error = nullptr;
    const unique_fd child_error_held(to_descriptor(child_error));

    HANDLE inherited[3] = {child_input, child_output, child_error};
    const DWORD inherited_count = child_error != nullptr ? 3 : 2;
    SIZE_T attributes_size = 0;
    (void)::InitializeProcThreadAttributeList(nullptr, 1, 0, &attributes_size);
    std::vector<std::byte> attributes_storage(attributes_size);
    auto* attributes = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(attributes_storage.data());
    if (!::InitializeProcThreadAttributeList(attributes, 1, 0, &attributes_size)) return failure(start_failure(::GetLastError()));
    struct list_guard {
        LPPROC_THREAD_ATTRIBUTE_LIST list;
        ~list_guard() { ::DeleteProcThreadAttributeList(list); }
    } guard{attributes};
    if (!::UpdateProcThreadAttribute(attributes, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherited,
                                     inherited_count * sizeof(HANDLE), nullptr, nullptr))
        return failure(start_failure(::GetLastError()));

    STARTUPINFOEXW startup{};
    startup.StartupInfo.cb = sizeof startup;
    startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    startup.StartupInfo.hStdInput = child_input;
    startup.StartupInfo.hStdOutput = child_output;
    startup.StartupInfo.hStdError = child_error;
    startup.lpAttributeList = attributes;
    const auto executable = own_path();
    if (executable.empty()) return failure(start_failure(::GetLastError()));
    // A path holds no '"', so quoting it is enough.
    std::wstring command_line = L"\"" + executable + L"\" gui-worker";

    worker_process worker;
    worker.job_ = ::CreateJobObjectW(nullptr, nullptr);
    if (worker.job_ != nullptr) {
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        (void)::SetInformationJobObject(worker.job_, JobObjectExtendedLimitInformation, &limits, sizeof limits);
    }
    PROCESS_INFORMATION started{};
    if (!::CreateProcessW(executable.c_str(), command_line.data(), nullptr, nullptr, TRUE,
                          CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT,
                          nullptr, nullptr, &startup.StartupInfo, &started))
        return failure(start_failure(::GetLastError()));
    worker.process_ = started.hProcess;
    // In the job before it runs a single instruction. A system that refuses (an older one
    // inside a job of its own) still has TerminateProcess and the server's cancel.
    if (worker.job_ != nullptr && !::AssignProcessToJobObject(worker.job_, started.hProcess)) {
        ::CloseHandle(worker.job_);
        worker.job_ = nullptr;
    }
    ::ResumeThread(started.hThread);
    ::CloseHandle(started.hThread);
    worker.input_ = std::move(input_held);
    worker.output_ = std::move(output_held);

    std::string bytes = encode_frame({"job", root.string(), std::string(request.operation->name), request.model,
                                      std::to_string(static_cast<int>(request.writer))});
    for (const auto& [name, value] : request.fields) bytes += encode_frame({"field", name, value});
    bytes += encode_frame({"go"});
    // A worker that died before reading shows as its end of the stream and its status.
    std::string_view left = bytes;
    while (!left.empty()) {
        DWORD wrote = 0;
        if (!::WriteFile(to_handle(worker.input_.get()), left.data(),
                         static_cast<DWORD>(std::min<std::size_t>(left.size(), std::size_t{1} << 30)), &wrote, nullptr) ||
            wrote == 0)
            break;
        left.remove_prefix(wrote);
    }
    return worker;
}

long long worker_process::read_output(char* buffer, std::size_t size, std::chrono::milliseconds wait) {
    // Anonymous pipes have no overlapped reads: ask what is there, and sleep in small steps.
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
        DWORD available = 0;
        if (!::PeekNamedPipe(to_handle(output_.get()), nullptr, 0, nullptr, &available, nullptr))
            return ::GetLastError() == ERROR_BROKEN_PIPE ? 0 : -1;
        if (available > 0) {
            DWORD got = 0;
            const auto wanted = static_cast<DWORD>(std::min<std::size_t>({size, available, std::size_t{1} << 30}));
            if (!::ReadFile(to_handle(output_.get()), buffer, wanted, &got, nullptr))
                return ::GetLastError() == ERROR_BROKEN_PIPE ? 0 : -1;
            return got;
        }
        if (std::chrono::steady_clock::now() >= until) return nothing_yet;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

worker_process::worker_process(worker_process&& other) noexcept
    : process_(std::exchange(other.process_, nullptr)),
      job_(std::exchange(other.job_, nullptr)),
      killed_(other.killed_),
      input_(std::move(other.input_)),
      output_(std::move(other.output_)) {}

worker_process::~worker_process() {
    if (process_ != nullptr) {
        kill();
        (void)wait();
    }
    if (job_ != nullptr) ::CloseHandle(job_);
}

void worker_process::cancel() noexcept { input_ = unique_fd(); }

void worker_process::kill() noexcept {
    if (process_ != nullptr && ::TerminateProcess(process_, 1)) killed_ = true;
}

worker_end worker_process::wait() {
    worker_end end;
    if (process_ == nullptr) return end;
    ::WaitForSingleObject(process_, INFINITE);
    DWORD code = 0;
    const bool known = ::GetExitCodeProcess(process_, &code) != 0;
    ::CloseHandle(process_);
    process_ = nullptr;
    if (killed_) {
        end.crashed = true;
        end.cause = "ended by the server";
    } else if (known && code >= 0xC0000000U) {
        // An NTSTATUS error: an access violation (0xc0000005), a stack overflow, an abort.
        char text[32];
        std::snprintf(text, sizeof text, "exception 0x%08lx", static_cast<unsigned long>(code));
        end.crashed = true;
        end.cause = text;
    } else if (known) {
        end.exit_status = static_cast<int>(code);
    }
    return end;
}

void prepare_worker_side() {
    // Frames are bytes: no CR added to a '\n', no Ctrl-Z read as the end.
    (void)::_setmode(0, _O_BINARY);
    (void)::_setmode(1, _O_BINARY);
}

}  // namespace onnxstream::server
