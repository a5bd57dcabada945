// io::spill_file: appended bytes and ranges of other files read back through open_source,
// at the offsets append returned; the file has no name in its folder.
#include <onnxstream/io/spill_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

std::span<const std::byte> bytes_of(const std::string& text) { return std::as_bytes(std::span(text.data(), text.size())); }

}  // namespace

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
        CHECK(entries == 1);  // input.bin only
    }
}
