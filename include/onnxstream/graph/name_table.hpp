// Value names, interned: every name a model uses (node inputs and outputs, initializers,
// graph inputs, outputs and value_info, at every depth, training graphs included) gets a
// small number, so passes compare and rewire numbers instead of strings. Id 0 is the
// empty name, which ONNX uses for an absent optional input or output.
//
// `fresh` makes names no part of the model uses yet: passes that add values (folded
// weights, inlined branches) never collide with an existing name, anywhere.
#pragma once

#include <onnxstream/large_blocks.hpp>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onnxstream::graph {

/// A name's number in its table: a type of its own, so that it cannot be passed where a
/// node, tensor or value index is expected. Not an `index<Tag>` (index.hpp), whose default
/// is `none`: a name id made with `{}` is 0, the empty name, as ONNX's absent input is.
enum class name_id : std::uint32_t {};
/// The empty name (an absent optional input or output).
inline constexpr name_id empty_name{};

class name_table {
public:
    name_table();
    name_table(const name_table&) = delete;
    name_table& operator=(const name_table&) = delete;
    name_table(name_table&&) noexcept = default;
    name_table& operator=(name_table&&) noexcept = default;

    /// Room for `names` names in all, so that a table filled with about that many is
    /// sized once (its arrays are not regrown, leaving freed blocks behind).
    void reserve(std::size_t names);

    /// The id of `text`, adding a copy of it when new.
    [[nodiscard]] name_id intern(std::string_view text);
    /// The same for text that outlives the table (a model's mapped bytes): added without a
    /// copy.
    [[nodiscard]] name_id intern_lasting(std::string_view text);
    /// The id of `text` if the table holds it.
    [[nodiscard]] std::optional<name_id> find(std::string_view text) const;
    [[nodiscard]] std::string_view text(name_id id) const {
        const auto packed = texts_[static_cast<std::uint32_t>(id)];
        const auto place = packed & place_mask;
        if ((packed & unpacked_flag) != 0) return unpacked_[static_cast<std::size_t>(place)];
        return {reinterpret_cast<const char*>(base_ + (place >> length_bits)),  // NOLINT(performance-no-int-to-ptr)
                static_cast<std::size_t>(place & max_length)};
    }
    [[nodiscard]] std::size_t size() const noexcept { return texts_.size(); }

    /// A name not in the table yet (`base`, else `base_1`, `base_2`, ...), added to it.
    [[nodiscard]] name_id fresh(std::string_view base);

    /// Starts loading the slot a lookup of `text` reads first into the cache, and returns
    /// nothing: a caller that knows names it interns a little later (the graph model's
    /// build, nodes ahead) overlaps the table's cache misses, one a new name otherwise.
    void prefetch(std::string_view text) const noexcept {
        if (slots_.empty()) return;
        __builtin_prefetch(&slots_[home(static_cast<std::uint32_t>(std::hash<std::string_view>{}(text)))]);
    }

private:
    [[nodiscard]] std::size_t slot_of(std::string_view text, std::size_t hash) const;
    name_id add(std::string_view text, bool lasting, std::size_t hash);

    // By id, 8 bytes each (a million names are common), from the top bit down:
    //   unpacked_flag  set: the text is in `unpacked_` (a copy, or a lasting text too far
    //                  from base_ or too long to pack), at the place the low bits give
    //   tag            14 more bits of the text's hash (see `slots_`)
    //   offset         a lasting text's address, from base_ (35 bits: 32 GiB)
    //   length         its length (14 bits: names are short; a longer one is unpacked)
    static constexpr unsigned length_bits = 14;
    static constexpr unsigned offset_bits = 35;
    static constexpr unsigned tag_bits = 14;
    static constexpr unsigned tag_shift = length_bits + offset_bits;
    static constexpr std::uint64_t max_length = (std::uint64_t{1} << length_bits) - 1;
    static constexpr std::uint64_t max_offset = (std::uint64_t{1} << offset_bits) - 1;
    static constexpr std::uint64_t place_mask = (std::uint64_t{1} << tag_shift) - 1;
    static constexpr std::uint64_t unpacked_flag = std::uint64_t{1} << (tag_shift + tag_bits);
    static_assert(tag_shift + tag_bits == 63);
    [[nodiscard]] static std::uint64_t tag_of(std::size_t hash) noexcept {
        return (static_cast<std::uint64_t>(hash) >> 32U) & ((std::uint64_t{1} << tag_bits) - 1);
    }
    [[nodiscard]] std::optional<std::uint64_t> packed_lasting(std::string_view text);
    large_vector<std::uint64_t> texts_;
    std::vector<std::string_view> unpacked_;  // into `copies_` or into lasting text
    std::deque<std::string> copies_;          // a deque: views into it stay valid as it grows
    std::uintptr_t base_ = 0;                 // set by the first lasting text, half the offset range below it
    bool based_ = false;
    // text -> id: an open-addressing table at most three quarters full, probed linearly
    // from the text's home: its 32-bit hash scaled to the table's size, which is sized to
    // the names, not to a power of two (at most half full in a power of two took 16 to 32
    // bytes of slots a name; three quarters full in any size takes about 11). A slot keeps
    // the low 32 bits of its text's hash beside the id, and texts_ 14 bits more (the tag):
    // a probe compares texts only when all 46 agree, and growing rehashes without reading a
    // text. Why so many: texts are mostly views of a model's mapped pages, which may have
    // been released, and each text read faults a large folio (up to 2 MiB) back in. 32 bits
    // alone, of which the slot's home already fixes ~20 of a million names, let a few
    // hundred names of a million-node graph meet a stranger with the same bits, and those
    // reads mapped 20 MiB of the file again.
    static constexpr std::uint32_t unused = ~std::uint32_t{0};
    struct slot {
        std::uint32_t hash = 0;
        std::uint32_t id = unused;
    };
    static constexpr std::size_t min_slots = 64;
    /// The slots for `names` names, three quarters full.
    [[nodiscard]] static std::size_t slots_for(std::size_t names) noexcept;
    /// rehash refuses more than 2^32 slots: the product does not overflow.
    [[nodiscard]] static std::size_t max_load(std::size_t slots) noexcept { return slots * 3 / 4; }
    [[nodiscard]] std::size_t home(std::uint32_t hash) const noexcept {
        return static_cast<std::size_t>((std::uint64_t{hash} * slots_.size()) >> 32U);
    }
    void rehash(std::size_t size);
    large_vector<slot> slots_;
};

}  // namespace onnxstream::graph
