#include <onnxstream/io/hashing.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/source_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;

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
