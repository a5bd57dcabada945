// error values: the stable code names (what --json prints and front ends match on), how
// describe() places the field path and the offset, and os_failure's mapping of errno.
#include <onnxstream/error.hpp>

#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

using namespace onnxstream;

TEST_CASE("every error code has its own stable name, spelled like the enumerator") {
    const std::pair<error_code, const char*> names[] = {
        {error_code::io, "io"},
        {error_code::no_space, "no_space"},
        {error_code::malformed, "malformed"},
        {error_code::limit_exceeded, "limit_exceeded"},
        {error_code::not_onnx, "not_onnx"},
        {error_code::missing_data, "missing_data"},
        {error_code::truncated_data, "truncated_data"},
        {error_code::unsafe_location, "unsafe_location"},
        {error_code::invalid_tensor, "invalid_tensor"},
        {error_code::size_mismatch, "size_mismatch"},
        {error_code::checksum_mismatch, "checksum_mismatch"},
        {error_code::too_large, "too_large"},
        {error_code::output_exists, "output_exists"},
        {error_code::output_is_input, "output_is_input"},
        {error_code::interrupted, "interrupted"},
        {error_code::unsupported, "unsupported"},
        {error_code::invalid_argument, "invalid_argument"},
    };
    std::set<std::string> seen;
    for (const auto& [code, name] : names) {
        CHECK(std::string(to_string(code)) == name);
        seen.insert(to_string(code));
    }
    CHECK(seen.size() == std::size(names));
    // The enum's last value is invalid_argument: a code past it is named, not undefined.
    CHECK(std::string(to_string(static_cast<error_code>(static_cast<int>(error_code::invalid_argument) + 1))) == "unknown");
}

TEST_CASE("describe: the message, then the field path, then the byte offset, each only when known") {
    error e(error_code::malformed, "length past the end", "the file is cut short");
    CHECK(e.describe() == "length past the end");
    e.field_path = "graph.initializer[12].raw_data";
    CHECK(e.describe() == "length past the end (at graph.initializer[12].raw_data)");
    e.offset = 0;
    CHECK(e.describe() == "length past the end (at graph.initializer[12].raw_data) [byte 0]");
    e.field_path.clear();
    e.offset = 18446744073709551614ULL;
    CHECK(e.describe() == "length past the end [byte 18446744073709551614]");
    CHECK(e.hint == "the file is cut short");
    CHECK(error{}.offset == error::no_offset);
}

TEST_CASE("os_failure: the C library's message for errno, no_space for ENOSPC, io for the rest") {
    const auto missing = os_failure("cannot open model.onnx", std::error_code(ENOENT, std::generic_category()), "check the path");
    CHECK(missing.code == error_code::io);
    CHECK(missing.message == std::string("cannot open model.onnx: ") + std::strerror(ENOENT));
    CHECK(missing.hint == "check the path");
    CHECK(missing.os_error.value() == ENOENT);

    // errno values as the io layer passes them: in the system's category on POSIX, in the
    // generic one on Windows, whose system category holds Win32 codes (handle_win.hpp).
#if defined(_WIN32)
    const auto& category = std::generic_category();
#else
    const auto& category = std::system_category();
#endif
    const auto full = os_failure("write out.onnx", std::error_code(ENOSPC, category));
    CHECK(full.code == error_code::no_space);
    CHECK(full.message == std::string("write out.onnx: ") + std::strerror(ENOSPC));
    CHECK(full.hint.empty());
    CHECK(full.offset == error::no_offset);
}
