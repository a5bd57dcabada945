// The findings of an analyze report, stored compactly. A model of a million unused
// initializers has a million findings, which as `passes::finding` structs (three strings
// and a vector of strings each) cost ~280 bytes apiece; here each is a run of varints in
// one byte buffer: its kind, its scope, op_type and detail as numbers into a small table
// of the texts findings repeat (a scope path is shared by every finding in it, a detail is
// usually a constant), its counts, and its names inline (length, then bytes). The list
// owns every byte: it outlives the model it was made from.
//
// Reading is sequential (`for_each`), or from a position `for_each` gave (`at`); a view
// is valid until the list is next changed or destroyed.
#pragma once

#include <onnxstream/passes/finding.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace onnxstream::ops {

/// Findings of one kind added up.
struct finding_totals {
    std::uint64_t count = 0;  // findings of this kind (each counting `finding::count`)
    std::uint64_t nodes = 0;  // nodes they would remove
    std::uint64_t bytes = 0;  // initializer bytes they would remove
};

class finding_list {
public:
    /// One finding as stored: views into the list.
    struct view {
        passes::finding_kind kind = passes::finding_kind::dead_node;
        std::uint32_t scope_key = 0;  // equal for equal scopes (and only for them)
        std::string_view scope;
        std::string_view op_type;
        std::string_view detail;
        std::uint64_t nodes = 0;
        std::uint64_t bytes = 0;
        std::uint64_t count = 1;
        std::uint64_t name_count = 0;
        std::uint64_t position = 0;  // where it starts: `at(position)` reads it again

        /// Calls `visit(name)` for each name, in order.
        template <class Visit>
        void for_each_name(Visit&& visit) const {
            std::uint64_t at = names_;
            for (std::uint64_t i = 0; i < name_count; ++i) visit(list_->read_text(at));
        }
        /// The names as strings (for tests and small reports).
        [[nodiscard]] std::vector<std::string> names() const;
        /// The finding as a struct of its own.
        [[nodiscard]] passes::finding to_finding() const;

    private:
        friend class finding_list;
        const finding_list* list_ = nullptr;
        std::uint64_t names_ = 0;  // position of the first name
        std::uint64_t end_ = 0;    // position of the next finding
    };

    /// Adds a copy of `f`.
    void add(const passes::finding& f);
    /// Counts `f` without keeping it, for a report that shows only how many there were
    /// (`counted`); `totals` includes it.
    void count(const passes::finding& f);
    /// What `count` counted of `kind`: `findings` of them, with these totals.
    struct counted_findings {
        std::uint64_t findings = 0;
        finding_totals totals;
    };
    [[nodiscard]] counted_findings counted(passes::finding_kind kind) const noexcept {
        return counted_[static_cast<std::size_t>(kind)];
    }
    /// Counts what `other` counted (its kept findings are not added: see `append`).
    void add_counted(const finding_list& other);
    /// The same from parts (no `finding` struct needed): `names` is any range of texts.
    template <class Names>
    void add(passes::finding_kind kind, std::string_view scope, std::string_view op_type, const Names& names, std::uint64_t nodes,
             std::uint64_t bytes, std::uint64_t count, std::string_view detail) {
        begin(kind, scope, op_type, detail, nodes, bytes, count, std::size(names));
        for (const auto& name : names) write_text(name);
    }
    /// Adds a copy of every finding of `other`, in order.
    void append(const finding_list& other);
    /// Adds every finding of `findings` and empties it.
    void take(std::vector<passes::finding>& findings);
    /// Room for `findings` more findings of about `bytes_each` bytes.
    void reserve(std::uint64_t findings, std::uint64_t bytes_each);

    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// Bytes held (the buffer and the table of shared texts).
    [[nodiscard]] std::uint64_t memory_size() const noexcept;

    /// The finding starting at `position` (a view's `position`).
    [[nodiscard]] view at(std::uint64_t position) const;
    /// Calls `visit(view)` for every finding, in the order they were added.
    template <class Visit>
    void for_each(Visit&& visit) const {
        for (std::uint64_t position = 0; position < data_.size();) {
            const auto v = at(position);
            visit(v);
            position = v.end_;
        }
    }
    /// The scope_key findings in `scope` have, or none when no finding is in it.
    [[nodiscard]] std::uint32_t key_of_scope(std::string_view scope) const;
    static constexpr std::uint32_t no_key = ~std::uint32_t{0};

    /// The findings' positions by scope and by the category their kind is shown in: what a
    /// report shows scope by scope, category by category, each group in the order added.
    struct groups {
        std::vector<std::uint64_t> positions;
        std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> ranges;  // group: [begin, end)
        std::size_t categories = 0;
        /// The positions of the findings of `scope_key` in `category`, in order.
        [[nodiscard]] std::span<const std::uint64_t> of(std::uint32_t scope_key, std::size_t category) const;
    };
    /// `category_of(kind)` says where a kind is shown: a number below `categories`, or
    /// `categories` and above for a kind not shown.
    template <class CategoryOf>
    [[nodiscard]] groups grouped(std::size_t categories, CategoryOf&& category_of) const {
        std::array<std::size_t, std::tuple_size_v<decltype(totals_)>> of_kind{};
        for (std::size_t k = 0; k < of_kind.size(); ++k) of_kind[k] = category_of(static_cast<passes::finding_kind>(k));
        return group(categories, of_kind);
    }

    [[nodiscard]] finding_totals totals(passes::finding_kind kind) const noexcept {
        return totals_[static_cast<std::size_t>(kind)];
    }

private:
    [[nodiscard]] groups group(std::size_t categories, std::span<const std::size_t> category_of_kind) const;
    void begin(passes::finding_kind kind, std::string_view scope, std::string_view op_type, std::string_view detail,
               std::uint64_t nodes, std::uint64_t bytes, std::uint64_t count, std::uint64_t name_count);
    void write_varint(std::uint64_t value);
    void write_text(std::string_view text);
    // A scope is always shared (its key compares scopes); op_types and details while there is room.
    void write_shared(std::string_view text, bool always);
    [[nodiscard]] std::uint64_t read_varint(std::uint64_t& at) const;
    [[nodiscard]] std::string_view read_text(std::uint64_t& at) const;
    [[nodiscard]] std::string_view read_shared(std::uint64_t& at, std::uint32_t& key) const;

    std::string data_;
    std::uint64_t size_ = 0;
    // Texts findings repeat (scopes, op_types, details), numbered in the order first seen.
    // Bounded: past `max_shared` texts, a new one is written inline in its finding.
    static constexpr std::size_t max_shared = 1U << 16;
    std::vector<std::string> shared_;
    std::map<std::string, std::uint32_t, std::less<>> shared_ids_;
    std::array<finding_totals, static_cast<std::size_t>(passes::finding_kind::skipped) + 1> totals_{};
    std::array<counted_findings, static_cast<std::size_t>(passes::finding_kind::skipped) + 1> counted_{};
};

}  // namespace onnxstream::ops
