// Large blocks: a large_vector keeps its values across small and large storage, and on
// Linux a large block is a mapping of its own whose whole 2 MiB units (and only those) are
// marked for transparent huge pages, as /proc/self/smaps shows.
#include <onnxstream/large_blocks.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <sstream>
#include <string>

using namespace onnxstream;

#if defined(__linux__)
namespace {

// The VmFlags of the mapping that holds `address`, or "" when smaps lists none.
std::string flags_of_mapping_at(const void* address) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t begin = 0;
        std::uintptr_t end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> begin >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
            inside = at >= begin && at < end;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8) + " ";
    }
    return "";
}

}  // namespace
#endif

TEST_CASE("a large vector keeps its values across small and large blocks, growth and copies") {
    constexpr std::uint64_t step = 2654435761U;
    large_vector<std::uint64_t> values;
    constexpr std::size_t count = 3 * large_block / sizeof(std::uint64_t) + 5;
    for (std::uint64_t i = 0; i < count; ++i) values.push_back(i * step);  // doubles through both kinds
    REQUIRE(values.size() == count);
    bool same = true;
    for (std::uint64_t i = 0; i < count; ++i) same = same && values[i] == i * step;
    CHECK(same);
    const auto copy = values;
    CHECK(copy == values);
    values.resize(7);
    values.shrink_to_fit();  // back to a small block
    CHECK(values.size() == 7);
    CHECK(values[6] == 6 * step);
    large_vector<std::uint32_t> assigned;
    assigned.assign(large_block, 0xA5A5A5A5U);  // 8 MiB in one allocation
    CHECK(assigned.front() == 0xA5A5A5A5U);
    CHECK(assigned.back() == 0xA5A5A5A5U);
}

TEST_CASE("allocate_block and resize_block keep what they hold and free what they gave") {
    auto* small = static_cast<std::byte*>(allocate_block(100));
    REQUIRE(small != nullptr);
    std::memset(small, 0x5A, 100);
    free_block(small, 100);

    constexpr std::size_t bytes = large_block + 4096 + 17;
    auto* block = static_cast<std::uint8_t*>(resize_block(nullptr, 0, 1000));
    REQUIRE(block != nullptr);
    for (std::size_t i = 0; i < 1000; ++i) block[i] = static_cast<std::uint8_t>(i * 7);
    block = static_cast<std::uint8_t*>(resize_block(block, 1000, bytes));  // small to mapped
    REQUIRE(block != nullptr);
    block[bytes - 1] = 0xEE;
    block = static_cast<std::uint8_t*>(resize_block(block, bytes, 3 * bytes));  // remapped
    REQUIRE(block != nullptr);
    CHECK(block[bytes - 1] == 0xEE);
    block = static_cast<std::uint8_t*>(resize_block(block, 3 * bytes, 500));  // back to small
    REQUIRE(block != nullptr);
    bool same = true;
    for (std::size_t i = 0; i < 500; ++i) same = same && block[i] == static_cast<std::uint8_t>(i * 7);
    CHECK(same);
    free_block(block, 500);
}

TEST_CASE("memory that cannot be had is a null block or std::bad_alloc, and the block in hand is kept") {
    constexpr std::size_t exabyte = std::size_t{1} << 60;  // past any address space here
    constexpr auto most = std::numeric_limits<std::size_t>::max();
    CHECK(allocate_block(exabyte) == nullptr);
    CHECK(allocate_block(most) == nullptr);  // rounded to whole 2 MiB units it wraps to 0, which mmap refuses
    CHECK(resize_block(nullptr, 0, most) == nullptr);

    auto* small = static_cast<std::uint8_t*>(resize_block(nullptr, 0, 100));
    REQUIRE(small != nullptr);
    std::memset(small, 0x11, 100);
    CHECK(resize_block(small, 100, exabyte) == nullptr);
    CHECK((small[0] == 0x11 && small[99] == 0x11));
    free_block(small, 100);

    constexpr std::size_t bytes = large_block + 1;
    auto* mapped = static_cast<std::uint8_t*>(resize_block(nullptr, 0, bytes));
    REQUIRE(mapped != nullptr);
    mapped[bytes - 1] = 0x22;
    CHECK(resize_block(mapped, bytes, exabyte) == nullptr);  // a remap that fails
    CHECK(mapped[bytes - 1] == 0x22);
    free_block(mapped, bytes);

    large_vector<char> values(10, 'x');
    CHECK_THROWS_AS(values.reserve(exabyte), std::bad_alloc);
    CHECK(values.size() == 10);
    CHECK(values[9] == 'x');
    CHECK_THROWS_AS(static_cast<void>(large_block_allocator<std::uint64_t>{}.allocate(most / 4)), std::bad_array_new_length);
}

TEST_CASE("a large block's whole 2 MiB units are marked for huge pages, its tail is not") {
#if !defined(__linux__)
    // Elsewhere a large block comes from malloc (under wine the Linux paths below exist,
    // but they describe wine's process, not these blocks).
    MESSAGE("not Linux: a large block is a malloc'd one");
#else
    if (!std::filesystem::exists("/proc/self/smaps") || !std::filesystem::exists("/sys/kernel/mm/transparent_hugepage")) {
        MESSAGE("no smaps or no transparent huge pages here: nothing to look at");
        return;
    }
    constexpr std::size_t bytes = 2 * large_block + 3 * 4096;
    auto* block = static_cast<std::byte*>(allocate_block(bytes));
    REQUIRE(block != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(block) % 4096 == 0);
    const auto head = flags_of_mapping_at(block);
    const auto last_whole = flags_of_mapping_at(block + 2 * large_block - 1);
    const auto tail = flags_of_mapping_at(block + 2 * large_block);
    INFO("head: " << head << " tail: " << tail);
    CHECK(head.find(" hg ") != std::string::npos);
    CHECK(last_whole.find(" hg ") != std::string::npos);
    CHECK_FALSE(tail.empty());
    CHECK(tail.find(" hg ") == std::string::npos);
    free_block(block, bytes);

    // A block that grows is marked whole: mremap moves one mapping only.
    auto* grown = static_cast<std::byte*>(resize_block(nullptr, 0, bytes));
    REQUIRE(grown != nullptr);
    CHECK(flags_of_mapping_at(grown + 2 * large_block).find(" hg ") != std::string::npos);
    free_block(grown, bytes);
#endif
}
