// One T made on first use, for what almost no element of a large array has (a node's
// subgraphs, the attributes a pass dropped or set): one pointer, 8 bytes, and no heap block
// until it is needed.
#pragma once

#include <memory>
#include <utility>

namespace onnxstream {

/// One T made on first use, for what almost no element of a large array has: a pointer,
/// 8 bytes. Copies copy the T.
template <class T>
class lazy_box {
public:
    lazy_box() noexcept = default;
    lazy_box(const lazy_box& other) : item_(other.item_ ? std::make_unique<T>(*other.item_) : nullptr) {}
    lazy_box(lazy_box&&) noexcept = default;
    lazy_box& operator=(const lazy_box& other) {
        if (this != &other) item_ = other.item_ ? std::make_unique<T>(*other.item_) : nullptr;
        return *this;
    }
    lazy_box& operator=(lazy_box&&) noexcept = default;
    ~lazy_box() = default;

    /// The T, or null while none was made.
    [[nodiscard]] const T* get() const noexcept { return item_.get(); }
    /// The T, made now if need be.
    [[nodiscard]] T& make() {
        if (!item_) item_ = std::make_unique<T>();
        return *item_;
    }

private:
    std::unique_ptr<T> item_;
};

}  // namespace onnxstream
