#include <onnxstream/large_blocks.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace onnxstream {
namespace {

#if defined(__linux__)
// A mapped block's length: whole huge pages (the kernel places a mapping of such a length
// on a 2 MiB boundary, where a fault can map a huge page).
std::size_t mapped_length(std::size_t bytes) noexcept { return (bytes + large_block - 1) / large_block * large_block; }

// A fresh mapping of `length` bytes whose first `advised` bytes are marked for transparent
// huge pages (a hint: without them, or with them off, the block has small pages).
void* map_block(std::size_t length, std::size_t advised) noexcept {
    void* block = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return nullptr;
    if (advised != 0) ::madvise(block, advised, MADV_HUGEPAGE);
    return block;
}
#endif

}  // namespace

void* resize_block(void* block, std::size_t old_bytes, std::size_t new_bytes) noexcept {
    // NOLINTBEGIN(cppcoreguidelines-no-malloc): the storage of large_block_allocator and growable_array
#if defined(__linux__)
    const bool was_mapped = block != nullptr && old_bytes >= large_block;
    if (new_bytes >= large_block) {
        const auto length = mapped_length(new_bytes);
        if (was_mapped) {
            void* moved = ::mremap(block, mapped_length(old_bytes), length, MREMAP_MAYMOVE);
            if (moved == MAP_FAILED) return nullptr;
            ::madvise(moved, length, MADV_HUGEPAGE);
            return moved;
        }
        // All of it advised: mremap moves one mapping only, and a block that grows is
        // mostly filled past what it held.
        void* mapped = map_block(length, length);
        if (mapped == nullptr) return nullptr;
        if (block != nullptr) std::memcpy(mapped, block, std::min(old_bytes, new_bytes));
        std::free(block);
        return mapped;
    }
    if (was_mapped) {
        void* copy = std::malloc(new_bytes);
        if (copy == nullptr) return nullptr;
        std::memcpy(copy, block, new_bytes);
        ::munmap(block, mapped_length(old_bytes));
        return copy;
    }
#else
    (void)old_bytes;
#endif
    return std::realloc(block, new_bytes);
    // NOLINTEND(cppcoreguidelines-no-malloc)
}

void* allocate_block(std::size_t bytes) noexcept {
#if defined(__linux__)
    // Only its whole huge pages advised: such a block is mostly sized exactly (reserved,
    // assigned), and a huge page is resident as a whole once touched, so a huge tail would
    // add up to 2 MiB of untouched bytes to the peak. The tail keeps small pages. (It is
    // never remapped, which needs one mapping.)
    if (bytes >= large_block) return map_block(mapped_length(bytes), bytes / large_block * large_block);
#endif
    return std::malloc(bytes);  // NOLINT(cppcoreguidelines-no-malloc)
}

void free_block(void* block, std::size_t bytes) noexcept {
    if (block == nullptr) return;
#if defined(__linux__)
    if (bytes >= large_block) {
        ::munmap(block, mapped_length(bytes));
        return;
    }
#else
    (void)bytes;
#endif
    std::free(block);  // NOLINT(cppcoreguidelines-no-malloc)
}

}  // namespace onnxstream
