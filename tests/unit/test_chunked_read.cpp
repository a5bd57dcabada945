// io::for_each_chunk: every byte of the range once, in order, in pieces no larger than the
// buffer; early stops and failures from the visitor; a range past the end of the file.
#include <onnxstream/io/chunked_read.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

std::string pattern(std::size_t size) {
    std::string text(size, '\0');
    for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i * 7) % 26);
    return text;
}

io::source_file open(const temp_folder& dir, const std::string& content) {
    auto file = io::source_file::open(dir.write("data.bin", content), false);
    REQUIRE(file);
    return std::move(file).value();
}

}  // namespace

TEST_CASE("for_each_chunk: the range in order, in pieces of at most the buffer") {
    temp_folder dir;
    const auto content = pattern(10000);
    const auto file = open(dir, content);
    std::vector<std::byte> buffer(4096);
    std::string seen;
    std::vector<std::size_t> sizes;
    const auto read = io::for_each_chunk(
        file, 100, 9000,
        [&](std::span<const std::byte> piece) {
            sizes.push_back(piece.size());
            seen.append(reinterpret_cast<const char*>(piece.data()), piece.size());
        },
        std::span(buffer));
    REQUIRE(read);
    CHECK(seen == content.substr(100, 9000));
    CHECK(sizes == std::vector<std::size_t>{4096, 4096, 808});
}

TEST_CASE("for_each_chunk: an empty range calls nothing; the default buffer covers a small range at once") {
    temp_folder dir;
    const auto file = open(dir, pattern(300));
    int calls = 0;
    REQUIRE(io::for_each_chunk(file, 10, 0, [&](std::span<const std::byte>) { ++calls; }));
    CHECK(calls == 0);
    REQUIRE(io::for_each_chunk(file, 0, 300, [&](std::span<const std::byte> piece) {
        ++calls;
        CHECK(piece.size() == 300);
    }));
    CHECK(calls == 1);
}

TEST_CASE("for_each_chunk: false stops early and succeeds; a failure from the visitor is returned") {
    temp_folder dir;
    const auto file = open(dir, pattern(1000));
    int calls = 0;
    REQUIRE(io::for_each_chunk(
        file, 0, 1000, [&](std::span<const std::byte>) { return ++calls < 2; }, std::size_t{100}));
    CHECK(calls == 2);
    calls = 0;
    const auto failed = io::for_each_chunk(
        file, 0, 1000,
        [&](std::span<const std::byte>) -> result<void> {
            if (++calls == 3) return failure(error_code::unsupported, "stop here");
            return {};
        },
        std::size_t{100});
    REQUIRE_FALSE(failed);
    CHECK(failed.error().message == "stop here");
    CHECK(calls == 3);
}

TEST_CASE("for_each_chunk: a range past the end of the file fails after the bytes that exist") {
    temp_folder dir;
    const auto file = open(dir, pattern(500));
    std::size_t seen = 0;
    const auto read = io::for_each_chunk(
        file, 0, 800, [&](std::span<const std::byte> piece) { seen += piece.size(); }, std::size_t{256});
    REQUIRE_FALSE(read);
    CHECK(seen == 256);
}
