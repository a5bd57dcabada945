// The write plan: what one output file will hold, as data. A list of operations, in
// output order, each either `emit` (bytes the planner computed: tags, length prefixes,
// new fields) or `copy` (a slice of a source file: weights, untouched metadata). Every
// operation knows its output offset, so the total size is known before the first byte is
// written and a writer may execute operations in any order.
//
// Holes are allowed between operations (alignment padding): the output file is created
// at its full size, so they read as zeros.
#pragma once

#include <onnxstream/io/write_operation.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxstream::plan {

using io::no_check;
using io::operation_kind;
using operation = io::write_operation;

class write_plan {
public:
    /// Appends bytes at the end of the plan (merged with a preceding emit).
    void emit(std::span<const std::byte> bytes);
    /// Appends a copy of `length` bytes of `source` at `offset` (merged with a preceding
    /// copy that ends where this one starts, unless either carries a check).
    void copy(std::uint32_t source, std::uint64_t offset, std::uint64_t length, std::uint32_t check_index = no_check);
    /// Appends `length` bytes computed by `conversion` from the `2 * length` float32 bytes
    /// of `source` at `offset` (never merged: each is one tensor's values). A check hashes
    /// the float32 input.
    void convert(std::uint32_t source, std::uint64_t offset, std::uint64_t length, onnx::float_conversion conversion,
                 std::uint32_t check_index = no_check);
    /// Leaves `length` zero bytes (a hole) at the end.
    void skip(std::uint64_t length) { size_ += length; }
    /// Pads with a hole until the size is a multiple of `alignment` (0 or 1: nothing).
    void align(std::uint64_t alignment);
    /// Reads the name of message `m` of the model a plan is made from, for label_message.
    using namer = std::function<std::string_view(std::uint32_t m)>;

    /// Names what the plan writes from here on (a tensor), for progress reports.
    void label(std::string name);
    /// Names what the plan writes from here on by message `m`, whose name `set_namer`'s
    /// function reads when label_at asks: a plan of a million tensors, which a progress
    /// report names a few times a second, reads no name for the others.
    void label_message(std::uint32_t m);
    /// The function label_message's names are read with (set before label_at asks for one).
    void set_namer(namer read_name) { namer_ = std::move(read_name); }
    /// The last label at or before `offset` (empty when none). A view of the plan or of
    /// the model's bytes: valid until the plan changes.
    [[nodiscard]] std::string_view label_at(std::uint64_t offset) const;
    /// Starts the next window of a plan written in windows (plan::rewrite_stream): forgets
    /// the operations and their bytes, keeps the size (operations go on at the same output
    /// offset), the checks and the last label.
    void next_window();
    /// Appends the operations and labels of `window`, a later window of the same plan (its
    /// labels by message read as names: the plan may outlive what the window's namer reads).
    void append(const write_plan& window);
    /// Registers a check; attach it to a copy with the returned index.
    [[nodiscard]] std::uint32_t add_check(io::stream_check value);

    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] std::span<const operation> operations() const noexcept { return operations_; }
    [[nodiscard]] std::span<const std::byte> pool() const noexcept { return pool_; }
    [[nodiscard]] std::span<const io::stream_check> checks() const noexcept { return checks_; }
    [[nodiscard]] std::span<const std::byte> emitted(const operation& op) const noexcept {
        return std::span(pool_).subspan(op.input_offset, op.length);
    }
    /// Total bytes that come from copies.
    [[nodiscard]] std::uint64_t copied_bytes() const noexcept;

    /// One line per operation (`emit @0 +12` / `copy @12 +4096 from 1:0`), for tests.
    [[nodiscard]] std::string describe() const;

private:
    std::vector<operation> operations_;
    std::vector<std::byte> pool_;
    std::vector<io::stream_check> checks_;
    // A label: a name, or a message whose name the namer reads (`message` not no_message).
    static constexpr std::uint32_t no_message = std::numeric_limits<std::uint32_t>::max();
    struct label_entry {
        std::uint64_t offset = 0;
        std::string name;
        std::uint32_t message = no_message;
    };
    void add_label(std::uint64_t offset, std::string name, std::uint32_t message);
    [[nodiscard]] std::string_view text(const label_entry& entry) const;

    std::vector<label_entry> labels_;  // by offset
    namer namer_;
    std::uint64_t size_ = 0;
};

}  // namespace onnxstream::plan
