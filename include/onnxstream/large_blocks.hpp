// Large blocks: storage of 2 MiB or more placed where transparent huge pages can back it.
// Filling a fresh array of a million 32-byte rows costs eight thousand page faults on
// small pages, each a trip into the kernel that zeroes 4 KiB; on huge pages it costs
// sixteen. A million small tensors fill several such arrays (the tree, the sites, the
// bindings, the edits, the planner's sizes): on this project's VM, where a fault costs
// about 7 us, taking them off small pages cut merge's CPU by a fifth.
#pragma once

#include <cstddef>
#include <limits>
#include <new>
#include <vector>

namespace onnxstream {

/// The size from which a block is mapped on its own (Linux), in whole units of it.
inline constexpr std::size_t large_block = 2U << 20;

/// `block` (null, or what this returned for `old_bytes`) grown or shrunk to `new_bytes`
/// (> 0), its first min(old_bytes, new_bytes) bytes kept; null when memory ran out
/// (`block` is then untouched). Blocks of at least large_block bytes are mapped on their
/// own on Linux, in whole 2 MiB units marked for transparent huge pages (a hint: with them
/// off the block has small pages), and moved by remapping their pages, so growing never
/// holds two copies. Smaller ones, and every block elsewhere, come from realloc (aligned
/// for any fundamental type).
[[nodiscard]] void* resize_block(void* block, std::size_t old_bytes, std::size_t new_bytes) noexcept;
/// A block of `bytes` (> 0) that is never resized, or null when memory ran out: as
/// resize_block's, but only its whole 2 MiB units are marked for huge pages.
[[nodiscard]] void* allocate_block(std::size_t bytes) noexcept;
/// Frees what resize_block or allocate_block returned for `bytes`.
void free_block(void* block, std::size_t bytes) noexcept;

/// An allocator whose blocks come from allocate_block: for the arrays that grow with the
/// model (a row per tensor, node or message). Stateless: any two compare equal.
template <class T>
struct large_block_allocator {
    static_assert(alignof(T) <= alignof(std::max_align_t), "resize_block aligns for fundamental types only");
    using value_type = T;

    large_block_allocator() noexcept = default;
    template <class U>
    large_block_allocator(const large_block_allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding

    [[nodiscard]] T* allocate(std::size_t n) {
        if (n == 0) n = 1;
        if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
        void* block = allocate_block(n * sizeof(T));
        if (block == nullptr) throw std::bad_alloc();
        return static_cast<T*>(block);
    }
    void deallocate(T* p, std::size_t n) noexcept { free_block(p, (n == 0 ? 1 : n) * sizeof(T)); }

    template <class U>
    bool operator==(const large_block_allocator<U>&) const noexcept {
        return true;
    }
};

/// A std::vector whose storage is a large block once it reaches one.
template <class T>
using large_vector = std::vector<T, large_block_allocator<T>>;

}  // namespace onnxstream
