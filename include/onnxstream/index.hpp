// Typed indices: a number that says which array it indexes. `index<node_tag>` and
// `index<tensor_tag>` are both 32 bits, but one cannot be passed where the other is
// expected, nor used to subscript the other's array: an `indexed_vector<Id, T>` only
// takes an `Id`. Construction from a bare number is explicit (`node_id{3}`), reading it
// back is `.value`; `none` is the invalid index of every kind (and, as a plain number,
// onnx::no_index, so message indices that stay bare compare with it as before).
#pragma once

#include <onnxstream/large_blocks.hpp>

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

namespace onnxstream {

/// The invalid index of every kind. It converts to any `index<Tag>` and, for the indices
/// that are still plain numbers (message indices), to std::uint32_t's largest value.
struct none_t {
    constexpr operator std::uint32_t() const noexcept { return std::numeric_limits<std::uint32_t>::max(); }
};
inline constexpr none_t none{};

template <class Tag>
struct index {
    std::uint32_t value = none;

    constexpr index() noexcept = default;
    constexpr explicit index(std::uint32_t v) noexcept : value(v) {}
    constexpr index(none_t) noexcept : value(none) {}  // NOLINT(google-explicit-constructor): `x = none`

    /// The index `n` of an array of that size (checked by the caller: sizes fit 32 bits).
    static constexpr index at(std::size_t n) noexcept { return index(static_cast<std::uint32_t>(n)); }

    [[nodiscard]] constexpr bool valid() const noexcept { return value != std::uint32_t{none}; }
    constexpr bool operator==(const index&) const noexcept = default;
    constexpr auto operator<=>(const index&) const noexcept = default;
    constexpr bool operator==(none_t) const noexcept { return !valid(); }
};

/// A vector subscripted by one kind of index only. Its storage is a large block once it
/// reaches one (a row per node or tensor of a big model); a bool is a bit, and a million
/// of them fit in 128 KB.
template <class Id, class T>
class indexed_vector {
public:
    using storage = std::conditional_t<std::is_same_v<T, bool>, std::vector<bool>, large_vector<T>>;
    using value_type = T;
    using iterator = typename storage::iterator;
    using const_iterator = typename storage::const_iterator;

    indexed_vector() = default;
    explicit indexed_vector(std::size_t count, const T& fill = T{}) : items_(count, fill) {}

    [[nodiscard]] decltype(auto) operator[](Id id) { return items_[id.value]; }
    [[nodiscard]] decltype(auto) operator[](Id id) const { return items_[id.value]; }

    [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
    [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
    /// The id the next push_back gets.
    [[nodiscard]] Id next_id() const noexcept { return Id::at(items_.size()); }
    [[nodiscard]] bool contains(Id id) const noexcept { return id.valid() && id.value < items_.size(); }

    Id push_back(T item) {
        items_.push_back(std::move(item));
        return Id::at(items_.size() - 1);
    }
    void assign(std::size_t count, const T& fill) { items_.assign(count, fill); }
    void resize(std::size_t count) { items_.resize(count); }
    void reserve(std::size_t count) { items_.reserve(count); }
    void clear() noexcept { items_.clear(); }

    [[nodiscard]] decltype(auto) back() { return items_.back(); }
    [[nodiscard]] decltype(auto) back() const { return items_.back(); }
    [[nodiscard]] auto begin() noexcept { return items_.begin(); }
    [[nodiscard]] auto end() noexcept { return items_.end(); }
    [[nodiscard]] auto begin() const noexcept { return items_.begin(); }
    [[nodiscard]] auto end() const noexcept { return items_.end(); }

    /// The ids 0 .. size()-1, for `for (const auto id : items.ids())`.
    class id_range {
    public:
        class iterator {
        public:
            using value_type = Id;
            using difference_type = std::ptrdiff_t;
            constexpr iterator() noexcept = default;
            constexpr explicit iterator(std::uint32_t at) noexcept : at_(at) {}
            constexpr Id operator*() const noexcept { return Id(at_); }
            constexpr iterator& operator++() noexcept {
                ++at_;
                return *this;
            }
            constexpr iterator operator++(int) noexcept { return iterator(at_++); }
            constexpr bool operator==(const iterator&) const noexcept = default;

        private:
            std::uint32_t at_ = 0;
        };
        constexpr explicit id_range(std::uint32_t end) noexcept : end_(end) {}
        [[nodiscard]] constexpr iterator begin() const noexcept { return iterator(0); }
        [[nodiscard]] constexpr iterator end() const noexcept { return iterator(end_); }

    private:
        std::uint32_t end_;
    };
    /// The ids of the items there are now (items pushed while iterating are not visited).
    [[nodiscard]] id_range ids() const noexcept { return id_range(static_cast<std::uint32_t>(items_.size())); }

    [[nodiscard]] const storage& items() const noexcept { return items_; }
    bool operator==(const indexed_vector&) const = default;

private:
    storage items_;
};

}  // namespace onnxstream

template <class Tag>
struct std::hash<onnxstream::index<Tag>> {
    std::size_t operator()(onnxstream::index<Tag> id) const noexcept { return std::hash<std::uint32_t>{}(id.value); }
};
