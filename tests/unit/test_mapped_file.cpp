// mapped_file on its own: what it maps is the file open at the descriptor (not what the
// path names by then), an empty file maps to nothing, and a bad descriptor is an error.
// The SIGBUS guard on files cut short while mapped is tested with source_file in
// test_hostile_inputs.cpp, where the catalogue entries that need it live.
#include <onnxstream/io/mapped_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

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
