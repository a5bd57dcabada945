// The C API (onnxstream.h) over the command table (api/commands.hpp): a key/value list
// becomes parameter_values, the outcome or the error becomes an opaque result. Every entry
// point catches everything: a C caller (or Python's ctypes) cannot unwind a C++ exception.
#include <onnxstream.h>

#include <onnxstream/api/commands.hpp>
#include <onnxstream/report/json.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>
#ifdef ONNXSTREAM_C_TEST_HOOKS
#include <stdexcept>
#include <string_view>
#endif

#ifndef ONNXSTREAM_VERSION
#define ONNXSTREAM_VERSION "unknown"
#endif

struct onnxstream_cancel {
    std::atomic<bool> requested{false};
};

struct onnxstream_result {
    int code = ONNXSTREAM_OK;
    bool passed = false;
    std::string report_json;
    std::string report_text;
    std::string message;
    std::string hint;
    std::vector<std::string> outputs;
};

namespace {

using namespace onnxstream;

// The numbers are part of the ABI: written out one by one, never derived from the enum's
// order, so that a code added to error_code in the middle changes none of them. No
// default: a new error_code without its number here does not compile (-Wswitch).
int number_of(error_code code) noexcept {
    switch (code) {
        case error_code::io: return ONNXSTREAM_ERROR_IO;
        case error_code::no_space: return ONNXSTREAM_ERROR_NO_SPACE;
        case error_code::malformed: return ONNXSTREAM_ERROR_MALFORMED;
        case error_code::limit_exceeded: return ONNXSTREAM_ERROR_LIMIT_EXCEEDED;
        case error_code::not_onnx: return ONNXSTREAM_ERROR_NOT_ONNX;
        case error_code::missing_data: return ONNXSTREAM_ERROR_MISSING_DATA;
        case error_code::truncated_data: return ONNXSTREAM_ERROR_TRUNCATED_DATA;
        case error_code::unsafe_location: return ONNXSTREAM_ERROR_UNSAFE_LOCATION;
        case error_code::invalid_tensor: return ONNXSTREAM_ERROR_INVALID_TENSOR;
        case error_code::size_mismatch: return ONNXSTREAM_ERROR_SIZE_MISMATCH;
        case error_code::checksum_mismatch: return ONNXSTREAM_ERROR_CHECKSUM_MISMATCH;
        case error_code::too_large: return ONNXSTREAM_ERROR_TOO_LARGE;
        case error_code::output_exists: return ONNXSTREAM_ERROR_OUTPUT_EXISTS;
        case error_code::output_is_input: return ONNXSTREAM_ERROR_OUTPUT_IS_INPUT;
        case error_code::interrupted: return ONNXSTREAM_ERROR_INTERRUPTED;
        case error_code::unsupported: return ONNXSTREAM_ERROR_UNSUPPORTED;
        case error_code::invalid_argument: return ONNXSTREAM_ERROR_INVALID_ARGUMENT;
    }
    return ONNXSTREAM_ERROR_INTERNAL;
}

constexpr error_code every_code[] = {error_code::io,
                                     error_code::no_space,
                                     error_code::malformed,
                                     error_code::limit_exceeded,
                                     error_code::not_onnx,
                                     error_code::missing_data,
                                     error_code::truncated_data,
                                     error_code::unsafe_location,
                                     error_code::invalid_tensor,
                                     error_code::size_mismatch,
                                     error_code::checksum_mismatch,
                                     error_code::too_large,
                                     error_code::output_exists,
                                     error_code::output_is_input,
                                     error_code::interrupted,
                                     error_code::unsupported,
                                     error_code::invalid_argument};

void fail(onnxstream_result& r, const error& e) {
    r.code = number_of(e.code);
    r.passed = false;
    r.message = e.describe();
    r.hint = report::worded_hint(e, api::api_wording());
    r.report_json = report::error_json(e, api::api_wording());
    r.report_text.clear();
    r.outputs.clear();
}

// A failure that is no onnxstream::error (an exception from below): the result says so
// without a report that could fail again.
void fail_internal(onnxstream_result& r, const char* what) noexcept {
    r.code = ONNXSTREAM_ERROR_INTERNAL;
    r.passed = false;
    try {
        r.message = std::string("internal error: ") + what;
        r.hint = "please report it, with the command and the model's inspect report";
        r.report_json = R"({"ok": false, "error": {"code": "internal", "message": "internal error"}})";
        r.report_text.clear();
        r.outputs.clear();
    } catch (...) {  // no memory for the words: the code alone says it
    }
}

// The key as the table names it: Python's keyword data_name is the parameter data-name.
std::string parameter_name(const char* key) {
    std::string name(key);
    std::replace(name.begin(), name.end(), '_', '-');
    return name;
}

result<const api::command_spec*> command_named(const char* name) {
    if (name == nullptr) return failure(error_code::invalid_argument, "no command given");
    if (const auto* c = api::find_command(parameter_name(name))) return c;
    std::string list;
    for (const auto& c : api::commands()) {
        if ((c.surfaces & api::surface::python) == 0) continue;
        list += (list.empty() ? "" : ", ") + std::string(c.name);
    }
    return failure(error_code::invalid_argument,
                   "unknown command '" + std::string(name).substr(0, 100) + "' (the commands: " + list + ")");
}

// Passes the library's events on to a C callback: one at a time (the writer's threads may
// report), and only when the work has moved on by a thousandth of the stage or the stage
// changed, so that a caller in an interpreter is not called per 64 KiB slice.
class progress_relay {
public:
    progress_relay(onnxstream_progress_fn fn, void* user, std::atomic<bool>& stop) : fn_(fn), user_(user), stop_(stop) {}

    void operator()(const ops::progress_event& e) {
        const std::lock_guard lock(mutex_);
        const auto& unit = e.unit.empty() ? bytes_ : e.unit;
        const bool new_stage = e.stage != stage_ || unit != unit_;
        const std::uint64_t step = std::max<std::uint64_t>(e.total / 1000, 1);
        if (!new_stage && e.done != e.total && e.done < last_done_ + step) return;
        if (new_stage) {
            stage_ = e.stage;
            unit_ = unit;
        }
        last_done_ = e.done;
        if (fn_(user_, stage_.c_str(), e.done, e.total, unit_.c_str()) != 0) stop_.store(true);
    }

private:
    onnxstream_progress_fn fn_;
    void* user_;
    std::atomic<bool>& stop_;
    std::mutex mutex_;
    std::string stage_;
    std::string unit_;
    std::uint64_t last_done_ = 0;
    const std::string bytes_ = "bytes";
};

void run(onnxstream_result& r, const char* command, const char* const* keys, const char* const* values, std::size_t count,
         onnxstream_progress_fn progress, void* user, onnxstream_cancel* cancel) {
#ifdef ONNXSTREAM_C_TEST_HOOKS
    // Only in tests/capi's onnxstream_capi_internal_test: what a bug below the table would
    // throw, from where a command runs, so that the catch in onnxstream_run is tested.
    if (command != nullptr) {
        const std::string_view name(command);
        if (name == "test-throw") throw std::runtime_error("thrown by the test hook");
        if (name == "test-throw-bad-alloc") throw std::bad_alloc();
        if (name == "test-throw-unknown") throw 42;
    }
#endif
    const auto spec = command_named(command);
    if (!spec) return fail(r, spec.error());
    if (count > 0 && (keys == nullptr || values == nullptr))
        return fail(r, error{error_code::invalid_argument, "keys and values are NULL but count is not 0"});
    api::parameter_values given;
    for (std::size_t i = 0; i < count; ++i) {
        if (keys[i] == nullptr || values[i] == nullptr)
            return fail(r, error{error_code::invalid_argument, "parameter " + std::to_string(i) + " has a NULL key or value"});
        given.add(parameter_name(keys[i]), values[i]);
    }
    onnxstream_cancel own_flag;
    auto& stop = cancel != nullptr ? cancel->requested : own_flag.requested;
    // Cancelled before it began: nothing to start, nothing to clean.
    if (stop.load()) return fail(r, error{error_code::interrupted, "cancelled before it started"});
    api::run_context context;
    context.cancel = &stop;
    context.wording = &api::api_wording();
    std::optional<progress_relay> relay;
    if (progress != nullptr) {
        relay.emplace(progress, user, stop);
        context.on_progress = [&relay](const ops::progress_event& e) { (*relay)(e); };
    }
    auto outcome = api::run_command(**spec, given, api::front_end::python, context);
    if (!outcome) return fail(r, outcome.error());
    r.code = ONNXSTREAM_OK;
    r.passed = outcome->passed;
    r.report_json = std::move(outcome->report_json);
    r.report_text = std::move(outcome->report_text);
    for (const auto& path : outcome->outputs) r.outputs.push_back(path.string());
}

const char* text_or_empty(const onnxstream_result* r, std::string onnxstream_result::*field) noexcept {
    return r == nullptr ? "" : (r->*field).c_str();
}

}  // namespace

extern "C" {

int onnxstream_api_version(void) { return ONNXSTREAM_API_VERSION; }

const char* onnxstream_version(void) { return ONNXSTREAM_VERSION; }

const char* onnxstream_error_name(int code) {
    if (code == ONNXSTREAM_OK) return "ok";
    if (code == ONNXSTREAM_ERROR_INTERNAL) return "internal";
    for (const auto c : every_code)
        if (number_of(c) == code) return to_string(c);
    return "unknown";
}

const char* onnxstream_commands_json(void) {
    try {
        static const std::string table = api::commands_json();
        return table.c_str();
    } catch (...) {
        return nullptr;
    }
}

onnxstream_cancel* onnxstream_cancel_new(void) { return new (std::nothrow) onnxstream_cancel; }

void onnxstream_cancel_set(onnxstream_cancel* cancel) {
    if (cancel != nullptr) cancel->requested.store(true);
}

int onnxstream_cancel_is_set(const onnxstream_cancel* cancel) { return cancel != nullptr && cancel->requested.load() ? 1 : 0; }

void onnxstream_cancel_free(onnxstream_cancel* cancel) { delete cancel; }

int onnxstream_run(const char* command, const char* const* keys, const char* const* values, size_t count,
                   onnxstream_progress_fn progress, void* user, onnxstream_cancel* cancel, onnxstream_result** out) {
    if (out != nullptr) *out = nullptr;
    auto* r = new (std::nothrow) onnxstream_result;
    if (r == nullptr) return ONNXSTREAM_ERROR_INTERNAL;
    try {
        run(*r, command, keys, values, count, progress, user, cancel);
    } catch (const std::bad_alloc&) {
        fail_internal(*r, "out of memory");
    } catch (const std::exception& e) {
        fail_internal(*r, e.what());
    } catch (...) {
        fail_internal(*r, "an unknown exception");
    }
    const int code = r->code;
    if (out != nullptr) *out = r;
    else delete r;
    return code;
}

int onnxstream_result_ok(const onnxstream_result* r) { return r != nullptr && r->code == ONNXSTREAM_OK ? 1 : 0; }

const char* onnxstream_result_report_json(const onnxstream_result* r) {
    return text_or_empty(r, &onnxstream_result::report_json);
}

const char* onnxstream_result_report_text(const onnxstream_result* r) {
    return text_or_empty(r, &onnxstream_result::report_text);
}

int onnxstream_result_passed(const onnxstream_result* r) { return r != nullptr && r->passed ? 1 : 0; }

size_t onnxstream_result_output_count(const onnxstream_result* r) { return r == nullptr ? 0 : r->outputs.size(); }

const char* onnxstream_result_output(const onnxstream_result* r, size_t index) {
    if (r == nullptr || index >= r->outputs.size()) return "";
    return r->outputs[index].c_str();
}

int onnxstream_result_error_code(const onnxstream_result* r) { return r == nullptr ? ONNXSTREAM_ERROR_INTERNAL : r->code; }

const char* onnxstream_result_error_message(const onnxstream_result* r) {
    return r == nullptr ? "out of memory" : r->message.c_str();
}

const char* onnxstream_result_error_hint(const onnxstream_result* r) { return text_or_empty(r, &onnxstream_result::hint); }

void onnxstream_result_free(onnxstream_result* r) { delete r; }

}  // extern "C"
