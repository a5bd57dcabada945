// A node's input or output names: a vector of name ids in 16 bytes that holds up to three
// ids in place, so the common node (one to three inputs, one output) allocates nothing. A
// model may have millions of nodes; a std::vector would cost 24 bytes plus a heap block
// (32 bytes with its header) for every list.
//
// It reads like the std::vector<name_id> it replaces: begin/end are pointers (so it
// converts to std::span<const name_id>), and it compares with a vector. Pointers into it are valid until
// it next changes size.
#pragma once

#include <onnxstream/graph/name_table.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace onnxstream::graph {

class name_list {
public:
    using value_type = name_id;
    using size_type = std::size_t;
    using iterator = name_id*;
    using const_iterator = const name_id*;
    static constexpr std::size_t inline_capacity = 3;

    name_list() noexcept = default;
    name_list(std::initializer_list<name_id> ids) { assign(ids.begin(), ids.size()); }
    name_list(std::span<const name_id> ids) { assign(ids.data(), ids.size()); }     // NOLINT(google-explicit-constructor)
    name_list(const std::vector<name_id>& ids) { assign(ids.data(), ids.size()); }  // NOLINT(google-explicit-constructor)
    name_list(const name_list& other) { assign(other.data(), other.size()); }
    name_list(name_list&& other) noexcept : size_(other.size_) {
        std::memcpy(words_, other.words_, sizeof words_);
        other.size_ = 0;
    }
    name_list& operator=(const name_list& other) {
        if (this != &other) {
            name_list copy(other);
            swap(copy);
        }
        return *this;
    }
    name_list& operator=(name_list&& other) noexcept {
        name_list taken(std::move(other));
        swap(taken);
        return *this;
    }
    ~name_list() {
        if (on_heap()) delete[] heap();
    }
    void swap(name_list& other) noexcept {
        std::swap(size_, other.size_);
        std::swap(words_, other.words_);
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] name_id* data() noexcept { return on_heap() ? heap() : words_; }
    [[nodiscard]] const name_id* data() const noexcept { return on_heap() ? heap() : words_; }
    [[nodiscard]] name_id* begin() noexcept { return data(); }
    [[nodiscard]] name_id* end() noexcept { return data() + size_; }
    [[nodiscard]] const name_id* begin() const noexcept { return data(); }
    [[nodiscard]] const name_id* end() const noexcept { return data() + size_; }
    /// `i` < size(), as for a vector.
    [[nodiscard]] name_id& operator[](std::size_t i) noexcept { return data()[i]; }
    [[nodiscard]] name_id operator[](std::size_t i) const noexcept { return data()[i]; }
    [[nodiscard]] name_id& front() noexcept { return data()[0]; }
    [[nodiscard]] name_id front() const noexcept { return data()[0]; }
    [[nodiscard]] name_id& back() noexcept { return data()[size_ - 1]; }
    [[nodiscard]] name_id back() const noexcept { return data()[size_ - 1]; }

    void push_back(name_id id) {
        const auto at = size_;
        set_size(at + 1U);
        data()[at] = id;
    }
    void pop_back() { set_size(size_ - 1U); }
    /// New entries are `fill` (the empty name by default, an absent optional input).
    void resize(std::size_t count, name_id fill = empty_name) {
        const auto old = size_;
        set_size(count);
        if (count > old) std::fill(data() + old, data() + count, fill);
    }
    void clear() { set_size(0); }

    friend bool operator==(const name_list& a, const name_list& b) noexcept {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
    friend bool operator==(const name_list& a, const std::vector<name_id>& b) noexcept {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    // Up to inline_capacity ids live in `words_`; beyond, `words_[1..2]` hold the pointer
    // to a heap array whose capacity follows from the size (the next power of two), so no
    // capacity field is needed.
    [[nodiscard]] bool on_heap() const noexcept { return size_ > inline_capacity; }
    [[nodiscard]] static std::size_t capacity_for(std::size_t count) noexcept {
        return count <= inline_capacity ? inline_capacity : std::bit_ceil(count);
    }
    [[nodiscard]] name_id* heap() const noexcept {
        name_id* p = nullptr;
        std::memcpy(&p, &words_[1], sizeof p);
        return p;
    }
    void set_heap(name_id* p) noexcept { std::memcpy(&words_[1], &p, sizeof p); }
    void assign(const name_id* ids, std::size_t count) {
        set_size(count);
        std::copy_n(ids, count, data());
    }
    // Gives the list `count` entries, keeping the first min(size, count) (new ones are
    // unset) and moving them between the inline words and the heap as needed.
    void set_size(std::size_t count) {
        if (count > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("name_list too long");
        const std::size_t old = size_;
        if (capacity_for(count) == capacity_for(old)) {
            size_ = static_cast<std::uint32_t>(count);
            return;
        }
        if (count <= inline_capacity) {  // from the heap back in place
            name_id* const old_heap = heap();
            std::copy_n(old_heap, count, words_);
            delete[] old_heap;
        } else {
            auto* const fresh = new name_id[capacity_for(count)];
            if (on_heap()) {
                name_id* const old_heap = heap();
                std::copy_n(old_heap, std::min(old, count), fresh);
                delete[] old_heap;
            } else {
                std::copy_n(words_, std::min(old, inline_capacity), fresh);
            }
            set_heap(fresh);
        }
        size_ = static_cast<std::uint32_t>(count);
    }

    std::uint32_t size_ = 0;
    name_id words_[inline_capacity]{};
};
static_assert(sizeof(name_list) == 16);

}  // namespace onnxstream::graph
