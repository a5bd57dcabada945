// The schema rows of every (message kind, field number) the tree's parser and the bulk
// scan ask about, looked up once into a table: they ask about every field, millions of
// times for a large graph. Private to message_tree.cpp and message_tree_scan.cpp.
#pragma once

#include <onnxstream/onnx/schema.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace onnxstream::onnx::detail {

class schema_rows {
public:
    // Every field number schema.cpp knows is below this (test_message_tree checks): the
    // parser's per-number tables have one slot each.
    static constexpr std::uint32_t numbers = 32;

    [[nodiscard]] static const schema_rows& get() noexcept {
        static const schema_rows table;
        return table;
    }

    /// find_field(kind, n), from the table.
    [[nodiscard]] const field_schema* at(message_kind kind, std::uint32_t n) const noexcept {
        return n < numbers ? rows_[static_cast<std::size_t>(kind)][n] : nullptr;
    }
    /// The kind of message field `n` of a `kind` message holds, or null when the parser
    /// does not descend into it.
    [[nodiscard]] const field_schema* child(message_kind kind, std::uint32_t n) const noexcept {
        const auto* row = at(kind, n);
        return row != nullptr && row->holds == field_holds::child ? row : nullptr;
    }

private:
    schema_rows() noexcept {
        for (std::size_t k = 0; k < kinds; ++k)
            for (std::uint32_t n = 0; n < numbers; ++n) rows_[k][n] = find_field(static_cast<message_kind>(k), n);
    }

    static constexpr std::size_t kinds = static_cast<std::size_t>(message_kind::value_info) + 1;
    std::array<std::array<const field_schema*, numbers>, kinds> rows_{};
};

}  // namespace onnxstream::onnx::detail
