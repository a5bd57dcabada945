// What the fuzz targets share: a `require` that aborts with a message (a failed invariant is
// a finding, like a crash), a deterministic stream of choices drawn from the input, a
// scratch folder that lives as long as the process, and an in-memory executor for write
// plans, so a plan can be checked without touching a disk.
#pragma once

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/plan/write_plan.hpp>

#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace onnxstream::fuzz {

[[noreturn]] inline void failed(const char* what, const char* file, int line) {
    std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", what, file, line);
    std::abort();
}

#define ONNXSTREAM_REQUIRE(condition) \
    ((condition) ? static_cast<void>(0) : ::onnxstream::fuzz::failed(#condition, __FILE__, __LINE__))
#define ONNXSTREAM_FAIL(what) ::onnxstream::fuzz::failed(what, __FILE__, __LINE__)

inline std::span<const std::byte> as_bytes(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return {};
    return std::as_bytes(std::span(data, size));
}

/// A deterministic sequence of numbers seeded from the input's hash (splitmix64).
class choices {
public:
    explicit choices(std::span<const std::byte> input) : state_(io::xxh3_of(input)) {}
    explicit choices(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        state_ += 0x9E3779B97F4A7C15ULL;
        std::uint64_t z = state_;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    /// True once in `n` draws on average.
    bool one_in(std::uint64_t n) { return n != 0 && next() % n == 0; }

private:
    std::uint64_t state_;
};

/// A folder private to this process, under /dev/shm when it exists (fsync is free there),
/// removed at exit. libFuzzer ends without running atexit handlers, so the folders of
/// processes that are gone are removed here too.
inline const std::filesystem::path& scratch_folder() {
    static const std::filesystem::path folder = [] {
        std::error_code ec;
        std::filesystem::path base = "/dev/shm";
        if (!std::filesystem::is_directory(base, ec)) base = std::filesystem::temp_directory_path(ec);
        const std::string prefix = "onnxstream-fuzz-";
        for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
            const auto name = it->path().filename().string();
            if (name.rfind(prefix, 0) != 0) continue;
            std::error_code ignored;
            if (!std::filesystem::exists("/proc/" + name.substr(prefix.size()), ignored))
                std::filesystem::remove_all(it->path(), ignored);
        }
        ec.clear();
        auto path = base / (prefix + std::to_string(::getpid()));
        std::filesystem::remove_all(path, ec);
        std::filesystem::create_directories(path, ec);
        if (ec) failed("cannot create the scratch folder", __FILE__, __LINE__);
        return path;
    }();
    // Registered once `folder` is built, so that it runs before `folder` is destroyed.
    static const bool cleanup_registered = std::atexit([] {
                                               std::error_code ignored;
                                               std::filesystem::remove_all(scratch_folder(), ignored);
                                           }) == 0;
    (void)cleanup_registered;
    return folder;
}

inline void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) failed(("cannot write " + path.string()).c_str(), __FILE__, __LINE__);
}

/// Makes a folder of the scratch folder holding the two data files the model targets'
/// inputs may name, model.onnx.data and weights.data (4 KiB each, the same pattern). It
/// writes them on every call: a target calls it once and keeps the path.
inline std::filesystem::path folder_with_data_files(const std::string& name) {
    const auto p = scratch_folder() / name;
    std::filesystem::create_directories(p);
    std::vector<std::byte> data(4096);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 13 + 1);
    write_file(p / "model.onnx.data", data);
    write_file(p / "weights.data", data);
    return p;
}

/// A command leaves no temporary file (a dot file) in `dir`, whether it failed or not.
inline void require_no_leftovers(const std::filesystem::path& dir, const char* after) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const auto name = entry.path().filename().string();
        if (!name.empty() && name.front() == '.') {
            std::fprintf(stderr, "a temporary file is left after %s: %s\n", after, name.c_str());
            failed("temporary files are removed", __FILE__, __LINE__);
        }
    }
}

/// Executes `plan` into memory, `sources[i]` being the bytes of source i. Checks what a
/// writer relies on: operations in output order without overlap, inside the plan's size,
/// emits inside the pool, copies inside their source.
inline std::vector<std::byte> execute_in_memory(const plan::write_plan& plan,
                                                std::span<const std::span<const std::byte>> sources) {
    std::vector<std::byte> out(static_cast<std::size_t>(plan.size()));
    std::uint64_t cursor = 0;
    for (const auto& op : plan.operations()) {
        ONNXSTREAM_REQUIRE(op.output_offset >= cursor);
        ONNXSTREAM_REQUIRE(op.length <= plan.size() && op.output_offset <= plan.size() - op.length);
        std::span<const std::byte> from;
        if (op.kind == plan::operation_kind::emit) {
            ONNXSTREAM_REQUIRE(op.length <= plan.pool().size() && op.input_offset <= plan.pool().size() - op.length);
            from = plan.emitted(op);
        } else {
            ONNXSTREAM_REQUIRE(op.source < sources.size());
            const auto source = sources[op.source];
            ONNXSTREAM_REQUIRE(op.length <= source.size() && op.input_offset <= source.size() - op.length);
            from = source.subspan(static_cast<std::size_t>(op.input_offset), static_cast<std::size_t>(op.length));
        }
        if (!from.empty()) std::memcpy(out.data() + op.output_offset, from.data(), from.size());
        cursor = op.output_offset + op.length;
    }
    return out;
}

}  // namespace onnxstream::fuzz
