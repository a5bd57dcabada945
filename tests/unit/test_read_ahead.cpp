// source_file::read_ahead and read_ahead_window (io/chunked_read.hpp), which the writers'
// small copies of sources that are not mapped and convert's scan of small tensors read
// through: what a window serves is exactly what read_at reads, at every boundary.
#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/source_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

std::string pattern(std::size_t size) {
    std::string s(size, '\0');
    for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131 + i / 251) & 0xFF);
    return s;
}

std::string text_of(std::span<const std::byte> bytes) { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

}  // namespace

TEST_CASE("read_ahead reads what fits before the end, and fails as read_at does when the minimum is not there") {
    temp_folder dir;
    const auto content = pattern(1000);
    auto source = io::source_file::open(dir.write("data.bin", content), false);
    REQUIRE(source);
    std::vector<std::byte> buffer(4096);
    auto got = source->read_ahead(900, buffer, 16);
    REQUIRE(got);
    CHECK(*got == 100);
    CHECK(text_of(std::span(buffer).first(100)) == content.substr(900));
    auto short_read = source->read_ahead(990, buffer, 16);
    REQUIRE_FALSE(short_read);
    CHECK(short_read.error().code == error_code::truncated_data);
    auto exact = source->read_ahead(0, std::span(buffer).first(10), 10);
    REQUIRE(exact);
    CHECK(*exact == 10);
}

TEST_CASE("the window serves every small read with read_at's bytes, across its end and between sources") {
    temp_folder dir;
    constexpr auto window = io::read_ahead_window::window_bytes;
    const auto first = pattern(window * 2 + 777);
    const auto second = pattern(5000).substr(100) + "tail";
    auto a = io::source_file::open(dir.write("a.bin", first), false);
    auto b = io::source_file::open(dir.write("b.bin", second), false);
    REQUIRE(a);
    REQUIRE(b);
    io::read_ahead_window reads;
    // Consecutive 16-byte tensors, a read straddling the window's end, then one at the file's end.
    for (std::size_t offset = 0; offset + 16 <= first.size(); offset += 16 * 997) {
        auto got = reads.read(*a, 0, offset, 16);
        REQUIRE(got);
        CHECK(text_of(*got) == first.substr(offset, 16));
    }
    auto straddling = reads.read(*a, 0, window - 5, 64);
    REQUIRE(straddling);
    CHECK(text_of(*straddling) == first.substr(window - 5, 64));
    auto last = reads.read(*a, 0, first.size() - 3, 3);
    REQUIRE(last);
    CHECK(text_of(*last) == first.substr(first.size() - 3));
    // Another source at the same offset is read from that source, and back again.
    auto other = reads.read(*b, 1, first.size() - 3 - 10, 3);
    REQUIRE_FALSE(other);  // b is shorter: its own end, not a's window
    auto from_b = reads.read(*b, 1, 40, 100);
    REQUIRE(from_b);
    CHECK(text_of(*from_b) == second.substr(40, 100));
    auto back = reads.read(*a, 0, 40, 100);
    REQUIRE(back);
    CHECK(text_of(*back) == first.substr(40, 100));
    // Backwards, and a whole window at once.
    auto earlier = reads.read(*a, 0, 8, 8);
    REQUIRE(earlier);
    CHECK(text_of(*earlier) == first.substr(8, 8));
    auto whole = reads.read(*a, 0, 1, window);
    REQUIRE(whole);
    CHECK(text_of(*whole) == first.substr(1, window));
}

TEST_CASE("a read past the end fails with truncated_data, and the window then reads afresh") {
    temp_folder dir;
    const auto content = pattern(300);
    auto source = io::source_file::open(dir.write("d.bin", content), false);
    REQUIRE(source);
    io::read_ahead_window reads;
    auto past = reads.read(*source, 0, 290, 16);
    REQUIRE_FALSE(past);
    CHECK(past.error().code == error_code::truncated_data);
    auto ok = reads.read(*source, 0, 284, 16);
    REQUIRE(ok);
    CHECK(text_of(*ok) == content.substr(284, 16));
}
