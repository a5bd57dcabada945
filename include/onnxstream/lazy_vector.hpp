// A vector for lists that are almost always empty (a node's subgraphs, the attributes a
// pass dropped or set): one pointer, 8 bytes, and no heap block until the first element
// is added, where a std::vector takes 24 bytes in every one of a million nodes.
//
// It reads like the std::vector<T> it replaces (begin/end are pointers, empty ones null)
// and compares with one. Pointers into it are valid until it next grows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace onnxstream {

template <class T>
class lazy_vector {
public:
    using value_type = T;
    using size_type = std::size_t;
    using iterator = T*;
    using const_iterator = const T*;

    lazy_vector() noexcept = default;
    lazy_vector(const lazy_vector& other) : items_(other.empty() ? nullptr : std::make_unique<std::vector<T>>(*other.items_)) {}
    /// Takes the elements of `items` (none taken: no heap block).
    explicit lazy_vector(std::vector<T> items)
        : items_(items.empty() ? nullptr : std::make_unique<std::vector<T>>(std::move(items))) {}
    lazy_vector(lazy_vector&&) noexcept = default;
    lazy_vector& operator=(const lazy_vector& other) {
        if (this != &other) items_ = other.empty() ? nullptr : std::make_unique<std::vector<T>>(*other.items_);
        return *this;
    }
    lazy_vector& operator=(lazy_vector&&) noexcept = default;
    ~lazy_vector() = default;

    [[nodiscard]] std::size_t size() const noexcept { return items_ ? items_->size() : 0; }
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    [[nodiscard]] T* data() noexcept { return items_ ? items_->data() : nullptr; }
    [[nodiscard]] const T* data() const noexcept { return items_ ? items_->data() : nullptr; }
    [[nodiscard]] T* begin() noexcept { return data(); }
    [[nodiscard]] T* end() noexcept { return data() + size(); }
    [[nodiscard]] const T* begin() const noexcept { return data(); }
    [[nodiscard]] const T* end() const noexcept { return data() + size(); }
    /// `i` < size(), as for a vector.
    [[nodiscard]] T& operator[](std::size_t i) noexcept { return (*items_)[i]; }
    [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return (*items_)[i]; }

    void push_back(T item) {
        if (!items_) items_ = std::make_unique<std::vector<T>>();
        items_->push_back(std::move(item));
    }
    void clear() noexcept { items_.reset(); }

    friend bool operator==(const lazy_vector& a, const lazy_vector& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
    friend bool operator==(const lazy_vector& a, const std::vector<T>& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    std::unique_ptr<std::vector<T>> items_;  // null while empty
};

}  // namespace onnxstream
