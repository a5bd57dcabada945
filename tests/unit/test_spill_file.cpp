// spill_file: appended bytes come back at the offsets append returned, an encoded message
// is written with its slices copied from the sources (large ones in pieces), and the file
// has no name in the folder at any time. The message bytes expected here are written out
// by hand from the protobuf encoding (tag, length, payload).
#include <onnxstream/io/source_file.hpp>
#include <onnxstream/io/spill_file.hpp>
#include <onnxstream/proto/encoded_message.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

std::span<const std::byte> bytes_of(std::string_view text) { return std::as_bytes(std::span(text.data(), text.size())); }

// The whole file, through read_at (the writers read a spill file by descriptor, unmapped).
std::string contents(const io::source_file& file) {
    std::string out(file.size(), '\0');
    REQUIRE(file.read_at(0, std::as_writable_bytes(std::span(out.data(), out.size()))));
    return out;
}

std::size_t entries_in(const std::filesystem::path& folder) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(folder)) ++n;
    return n;
}

// POSIX: a spill file never has a name (O_TMPFILE, or unlinked at once). Windows: a hidden
// name while it is open, deleted when it is closed (spill_file_win.cpp).
#if defined(_WIN32)
constexpr std::size_t open_spill_entries = 1;
#else
constexpr std::size_t open_spill_entries = 0;
#endif

}  // namespace

TEST_CASE("appended bytes read back at their offsets; the file never has a name in the folder") {
    temp_folder dir;
    auto spill = io::spill_file::create(dir.path());
    REQUIRE(spill);
    CHECK(entries_in(dir.path()) == open_spill_entries);
    const auto first = spill->append(bytes_of("folded weights"));
    REQUIRE(first);
    CHECK(*first == 0);
    const std::string big(3 << 20, 'z');  // larger than one write buffer
    const auto second = spill->append(bytes_of(big));
    REQUIRE(second);
    CHECK(*second == 14);
    CHECK(spill->size() == 14 + big.size());
    CHECK(entries_in(dir.path()) == open_spill_entries);

    const auto source = spill->open_source();
    REQUIRE(source);
    CHECK(source->size() == spill->size());
    const auto text = contents(*source);
    CHECK(text.substr(0, 14) == "folded weights");
    CHECK(text.substr(14) == big);
}

TEST_CASE("an encoded message is spilled with its slices copied from the sources") {
    temp_folder dir;
    std::string payload(5 << 20, '\0');  // a slice larger than the copy pieces
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7 % 251);
    const auto data = io::source_file::open(dir.write("weights.bin", "head" + payload), true);
    REQUIRE(data);
    const io::source_file* sources[] = {&*data};

    proto::encoded_message message;
    message.text_field(8, "w");                    // 0x42 0x01 'w'
    message.slice_field(9, 0, 4, payload.size());  // 0x4a, length varint, the slice
    auto spill = io::spill_file::create(dir.path());
    REQUIRE(spill);
    REQUIRE(spill->append(bytes_of("x")));
    const auto at = proto::append_to_spill(message, *spill, sources);
    REQUIRE(at);
    CHECK(*at == 1);
    CHECK(spill->size() == 1 + message.size());

    const auto back = spill->open_source();
    REQUIRE(back);
    const auto written = contents(*back).substr(1);
    // 5 MiB = 5242880 = varint 0x80 0x80 0xc0 0x02.
    CHECK(written.substr(0, 8) == std::string("\x42\x01w\x4a\x80\x80\xc0\x02", 8));
    CHECK(written.substr(8) == payload);
}

TEST_CASE("an encoded message cleared encodes the next one as a fresh message does") {
    proto::encoded_message reused;
    reused.text_field(8, "first");
    reused.slice_field(9, 0, 4, 16);
    REQUIRE(reused.has_slices());
    reused.clear();
    CHECK(reused.size() == 0);
    CHECK(reused.pool().empty());
    CHECK(reused.pieces().empty());
    CHECK_FALSE(reused.has_slices());
    proto::encoded_message fresh;
    for (auto* m : {&reused, &fresh}) {
        m->text_field(1, "w");
        m->varint_field(2, 300);
    }
    CHECK(reused.size() == fresh.size());
    CHECK(std::ranges::equal(reused.pool(), fresh.pool()));
    REQUIRE(reused.pieces().size() == fresh.pieces().size());
    for (std::size_t i = 0; i < fresh.pieces().size(); ++i) {
        CHECK(reused.pieces()[i].source == fresh.pieces()[i].source);
        CHECK(reused.pieces()[i].offset == fresh.pieces()[i].offset);
        CHECK(reused.pieces()[i].length == fresh.pieces()[i].length);
    }
}

TEST_CASE("a folder that does not exist is an error, not a crash") {
    temp_folder dir;
    const auto spill = io::spill_file::create(dir.path() / "missing");
    REQUIRE_FALSE(spill);
    CHECK(spill.error().code == error_code::io);
}

TEST_CASE("spill_file: appends land at the offsets returned and read back") {
    temp_folder dir;
    std::string big(3 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i % 251);
    auto input = io::source_file::open(dir.write("input.bin", big), false);
    REQUIRE(input);

    auto spill = io::spill_file::create(dir.path());
    REQUIRE(spill);
    const auto first = spill->append(bytes_of("header"));
    REQUIRE(first);
    CHECK(*first == 0);
    // A range larger than one read piece (1 MiB), from an offset inside the file.
    const auto second = spill->append_range(*input, 1000, big.size() - 2000);
    REQUIRE(second);
    CHECK(*second == 6);
    CHECK(spill->size() == 6 + big.size() - 2000);
    CHECK(std::filesystem::is_directory(dir.path()));

    auto reader = spill->open_source();
    REQUIRE(reader);
    REQUIRE(reader->size() == spill->size());
    std::vector<std::byte> back(static_cast<std::size_t>(reader->size()));
    REQUIRE(reader->read_at(0, back));
    const std::string text(reinterpret_cast<const char*>(back.data()), back.size());
    CHECK(text.substr(0, 6) == "header");
    CHECK(text.substr(6) == big.substr(1000, big.size() - 2000));
}

TEST_CASE("spill_file: no file is left in the folder, and a range past the source's end fails") {
    temp_folder dir;
    auto input = io::source_file::open(dir.write("input.bin", "0123456789"), false);
    REQUIRE(input);
    {
        auto spill = io::spill_file::create(dir.path());
        REQUIRE(spill);
        REQUIRE(spill->append(bytes_of("abc")));
        CHECK_FALSE(spill->append_range(*input, 4, 20));
        std::size_t entries = 0;
        for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
        CHECK(entries == 1 + open_spill_entries);  // input.bin (and on Windows the open spill file)
    }
    CHECK(entries_in(dir.path()) == 1);  // closed: input.bin only
}
