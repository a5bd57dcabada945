// mapped_file on its own: what it maps is the file open at the descriptor (not what the
// path names by then), an empty file maps to nothing, and a bad descriptor is an error.
// The SIGBUS guard on files cut short while mapped is tested with source_file in
// test_hostile_inputs.cpp, where the catalogue entries that need it live. copy_in_except
// (private copies of every page but the bulk payloads) keeps every byte the same.
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/source_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

std::string text_of(const io::mapped_file& m) { return {reinterpret_cast<const char*>(m.bytes().data()), m.bytes().size()}; }

struct descriptor {
    int fd;
    explicit descriptor(const std::filesystem::path& p) : fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {}
    ~descriptor() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

TEST_CASE("the mapping holds the file's bytes and stays valid after the descriptor is closed") {
    temp_folder dir;
    const std::string content = "header\0\x01\x02 weights" + std::string(10000, 'w');
    const auto path = dir.write("model.onnx", content);
    io::mapped_file mapped;
    {
        const descriptor d(path);
        REQUIRE(d.fd >= 0);
        auto m = io::mapped_file::map(d.fd, content.size(), path);
        REQUIRE(m);
        mapped = std::move(m).value();
    }
    CHECK(text_of(mapped) == content);
    CHECK(mapped.intact());
    mapped.release(0, 4096);  // advice only: the bytes stay readable
    CHECK(text_of(mapped) == content);
}

TEST_CASE("the file open at the descriptor is mapped, whatever its path names by then") {
    temp_folder dir;
    const auto path = dir.write("model.onnx", "the checked file");
    const descriptor d(path);
    REQUIRE(d.fd >= 0);
    std::filesystem::remove(path);
    dir.write("model.onnx", "a file swapped in after the check");
    const auto m = io::mapped_file::map(d.fd, 16, path);
    REQUIRE(m);
    CHECK(text_of(*m) == "the checked file");
}

TEST_CASE("an empty file maps to an empty span; moving hands the bytes over") {
    temp_folder dir;
    const auto path = dir.write("empty.onnx", "");
    const descriptor d(path);
    auto m = io::mapped_file::map(d.fd, 0, path);
    REQUIRE(m);
    CHECK(m->bytes().empty());
    CHECK(m->intact());

    const auto other = dir.write("other.onnx", "abc");
    const descriptor e(other);
    auto full = io::mapped_file::map(e.fd, 3, other);
    REQUIRE(full);
    const auto* data = full->bytes().data();
    io::mapped_file moved(std::move(full).value());
    CHECK(moved.bytes().data() == data);
    CHECK(text_of(moved) == "abc");
}

TEST_CASE("a descriptor that is not open is an error naming the file, not a crash") {
    const auto m = io::mapped_file::map(-1, 10, "missing.onnx");
    REQUIRE_FALSE(m);
    CHECK(m.error().code == error_code::io);
    CHECK(m.error().message.find("missing.onnx") != std::string::npos);
}

namespace {

std::string patterned(std::size_t size) {
    std::string text(size, '\0');
    for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
    return text;
}

bool same(std::span<const std::byte> mapped, const std::string& expected) {
    return mapped.size() == expected.size() && std::memcmp(mapped.data(), expected.data(), expected.size()) == 0;
}

std::size_t page_size() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

}  // namespace

TEST_CASE("copy_in_except keeps every byte, in private pages and in the bulk pages alike") {
    temp_folder dir;
    const auto page = page_size();
    const auto content = patterned(40 * page + 123);
    const auto path = dir.write("model.onnx", content);
    auto file = io::source_file::open(path, true);
    REQUIRE(file);
    // Two bulk ranges, neither page-aligned, and one too small to hold a whole page.
    const std::vector<io::byte_range> bulk{{page + 17, 10 * page}, {15 * page + 1, page / 2}, {20 * page - 5, 15 * page}};
    REQUIRE(file->copy_in_except(bulk));
    CHECK(same(file->bytes(), content));
    CHECK(file->mapping().intact());
    CHECK(file->check_unchanged());

    SUBCASE("release drops bulk pages but never the private ones (they would read as zeros)") {
        file->mapping().release(0, content.size());
        CHECK(same(file->bytes(), content));
    }
    SUBCASE("a windowed hash of a bulk range equals the hash of its bytes") {
        const auto range = file->bytes().subspan(page, 30 * page);
        CHECK(io::xxh3_of(file->mapping(), range) == io::xxh3_of(std::as_bytes(std::span(content).subspan(page, 30 * page))));
        CHECK(same(file->bytes(), content));
    }
    SUBCASE("a second call changes nothing") {
        REQUIRE(file->copy_in_except({}));
        CHECK(same(file->bytes(), content));
    }
}

TEST_CASE("copy_in_except with no bulk range copies the whole file, and ignores ranges past the end") {
    temp_folder dir;
    const auto content = patterned(3 * page_size() + 1);
    const auto path = dir.write("small.onnx", content);
    auto file = io::source_file::open(path, true);
    REQUIRE(file);
    const std::vector<io::byte_range> bulk{{content.size() - 10, 100}};
    REQUIRE(file->copy_in_except(bulk));
    CHECK(same(file->bytes(), content));
}

TEST_CASE("copy_in_except of a file cut short before the copy fails and marks the mapping") {
    temp_folder dir;
    const auto page = page_size();
    const auto content = patterned(8 * page);
    const auto path = dir.write("cut.onnx", content);
    auto file = io::source_file::open(path, true);
    REQUIRE(file);
    REQUIRE(::truncate(path.c_str(), static_cast<off_t>(page)) == 0);
    const std::vector<io::byte_range> bulk{{2 * page, 2 * page}};
    const auto copied = file->copy_in_except(bulk);
    REQUIRE_FALSE(copied);
    CHECK(copied.error().code == error_code::io);
    CHECK_FALSE(file->mapping().intact());
    CHECK_FALSE(file->check_unchanged());
}

#if defined(__linux__)
namespace {

// Whether the page that holds `at` is mapped into this process now (/proc/self/pagemap's
// "present" bit): what RSS counts, unlike the page cache that mincore reports.
bool page_mapped(const std::byte* at) {
    const descriptor pagemap("/proc/self/pagemap");
    REQUIRE(pagemap.fd >= 0);
    std::uint64_t entry = 0;
    const auto index = reinterpret_cast<std::uintptr_t>(at) / page_size();
    REQUIRE(::pread(pagemap.fd, &entry, sizeof entry, static_cast<off_t>(index * sizeof entry)) == sizeof entry);
    return (entry >> 63U) != 0;
}

}  // namespace

TEST_CASE("release_behind drops what a walk read once it moves on, forward or back, by a window") {
    temp_folder dir;
    constexpr std::uint64_t MiB = 1ULL << 20;
    const auto content = patterned(static_cast<std::size_t>(24 * MiB));
    const auto path = dir.write("walked.onnx", content);
    auto file = io::source_file::open(path, true);
    REQUIRE(file);
    const auto* bytes = file->bytes().data();
    std::uint64_t sum = 0;
    const auto read = [&](std::uint64_t at) {
        sum += static_cast<std::uint64_t>(bytes[at]);
        CHECK(page_mapped(bytes + at));
    };
    io::release_behind walk(file->mapping());
    walk.reached(20 * MiB, 20 * MiB + 100);
    read(20 * MiB);
    walk.reached(1 * MiB, 1 * MiB + 100);  // back: what was read ahead goes
    CHECK_FALSE(page_mapped(bytes + 20 * MiB));
    read(1 * MiB);
    walk.reached(4 * MiB);  // forward, less than a window: kept
    CHECK(page_mapped(bytes + 1 * MiB));
    read(4 * MiB);
    walk.reached(1 * MiB + io::release_behind::window);  // a window on: everything before goes
    CHECK_FALSE(page_mapped(bytes + 1 * MiB));
    CHECK_FALSE(page_mapped(bytes + 4 * MiB));
    read(12 * MiB);
    walk.finish(content.size());
    CHECK_FALSE(page_mapped(bytes + 12 * MiB));
    CHECK(same(file->bytes(), content));  // released pages read the same

    // Backwards in small steps: what lies more than a window (and the folios around it)
    // above the walk has gone.
    io::release_behind down(file->mapping());
    for (auto at = content.size() - 4096; at >= 64 * 1024; at -= 64 * 1024) {
        down.reached(at, at + 100);
        read(at);
    }
    constexpr auto margin = io::release_behind::window + 2 * io::release_behind::folio;
    for (std::uint64_t at = 64 * 1024 + margin; at < content.size(); at += 64 * 1024) CHECK_FALSE(page_mapped(bytes + at));
    down.finish(content.size());
    CHECK(sum > 0);
}
#endif
