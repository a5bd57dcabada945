// A TensorProto's dims, read where they are in the model's bytes: one packed field (a run
// of varints) or a run of fields of the tensor message holding unpacked dims (field 1, a
// varint each) or packed runs, mixed with other fields. Nothing is decoded until a dim is
// asked for, nothing is allocated: a tensor with a million dims costs these 24 bytes, not
// 8 MB of int64s. The view can also show int64s its owner holds (a tensor a pass made),
// so that one type serves both.
//
// read_tensor counts the dims and validates their bytes once (every varint ends within
// its field); iteration then decodes without checks that could fail. A view never owns:
// the model's bytes (or the int64s) must outlive it, as tensor_info's name does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace onnxstream::onnx {

class tensor_dims {
public:
    enum class layout : std::uint8_t {
        packed,  // the bytes are one packed field's payload: varints back to back
        fields,  // the bytes are whole fields of a tensor message; the dims are its field 1
        values,  // the bytes are int64s in memory (what to_vector returns)
    };

    /// Decodes the dims one at a time, in file order (a forward iterator whose values are
    /// returned, not referenced). Two iterators of one view are equal when as many dims are
    /// left after them.
    class const_iterator {
    public:
        using value_type = std::int64_t;
        using difference_type = std::ptrdiff_t;
        using reference = std::int64_t;
        using pointer = void;
        using iterator_concept = std::forward_iterator_tag;
        using iterator_category = std::input_iterator_tag;

        const_iterator() = default;
        [[nodiscard]] std::int64_t operator*() const noexcept { return value_; }
        const_iterator& operator++() noexcept {
            if (left_ == 0 || --left_ == 0) return *this;
            // Most dims take one byte: read it here, the rest in next().
            if (cursor_ < run_end_ && (static_cast<std::uint8_t>(*cursor_) & 0x80U) == 0)
                value_ = static_cast<std::uint8_t>(*cursor_++);
            else value_ = next();
            return *this;
        }
        const_iterator operator++(int) noexcept {
            auto before = *this;
            ++*this;
            return before;
        }
        [[nodiscard]] friend bool operator==(const const_iterator& a, const const_iterator& b) noexcept {
            return a.left_ == b.left_;
        }

    private:
        friend class tensor_dims;
        const_iterator(const tensor_dims& dims, std::uint64_t left) noexcept;
        [[nodiscard]] std::int64_t next() noexcept;

        const std::byte* cursor_ = nullptr;
        // The end of the packed run being read: cursor_ < run_end_ inside one, never for values.
        const std::byte* run_end_ = nullptr;
        const std::byte* end_ = nullptr;
        bool values_ = false;     // layout::values
        std::uint64_t left_ = 0;  // dims left, the current one included
        std::int64_t value_ = 0;
    };

    /// No dims: a scalar.
    tensor_dims() = default;
    /// `count` dims laid out as `layout` in `bytes` (the caller has validated them: every
    /// varint ends within its field and `count` is how many dims there are).
    tensor_dims(std::span<const std::byte> bytes, layout how, std::uint64_t count) noexcept
        : data_(bytes.data()),
          extent_(static_cast<std::uint64_t>(bytes.size()) << 2 | static_cast<std::uint8_t>(how)),
          size_(count) {}
    /// The int64s of `values`, which must outlive the view.
    explicit tensor_dims(std::span<const std::int64_t> values) noexcept
        : tensor_dims(std::as_bytes(values), layout::values, values.size()) {}

    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] const_iterator begin() const noexcept { return {*this, size_}; }
    [[nodiscard]] const_iterator end() const noexcept { return {*this, 0}; }
    /// The first dim; the view must not be empty.
    [[nodiscard]] std::int64_t front() const noexcept { return *begin(); }

    /// A copy, for a caller that keeps or indexes a shape (graph passes, small tensors);
    /// 8 bytes per dim.
    [[nodiscard]] std::vector<std::int64_t> to_vector() const;

    /// Whether both views read the same bytes the same way (then they hold the same dims;
    /// the converse does not hold: a varint may be written longer than it needs).
    [[nodiscard]] bool same_encoding(const tensor_dims& other) const noexcept;

private:
    const std::byte* data_ = nullptr;
    std::uint64_t extent_ = 0;  // the bytes' length << 2 | the layout
    std::uint64_t size_ = 0;
};
static_assert(sizeof(tensor_dims) == 24);

/// The same dims in the same order, however each side lays them out.
[[nodiscard]] bool operator==(const tensor_dims& a, const tensor_dims& b) noexcept;
[[nodiscard]] bool operator==(const tensor_dims& a, std::span<const std::int64_t> b) noexcept;
/// Lexicographic, as std::vector<std::int64_t>'s order (a shorter prefix first).
[[nodiscard]] bool operator<(const tensor_dims& a, const tensor_dims& b) noexcept;

/// "[1, 3, 224, 224]", "[]" for a scalar, streamed from the view.
[[nodiscard]] std::string to_string(const tensor_dims& dims);

}  // namespace onnxstream::onnx
