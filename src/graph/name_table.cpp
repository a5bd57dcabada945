#include <onnxstream/graph/name_table.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>

namespace onnxstream::graph {

name_table::name_table() { (void)intern(""); }

std::size_t name_table::slot_of(std::string_view text, std::size_t hash) const {
    const auto h = static_cast<std::uint32_t>(hash);
    const auto tag = tag_of(hash) << tag_shift;
    const auto same = [&](std::uint32_t id) {
        return (texts_[id] & ~(unpacked_flag | place_mask)) == tag && this->text(static_cast<name_id>(id)) == text;
    };
    auto i = home(h);
    while (slots_[i].id != unused && (slots_[i].hash != h || !same(slots_[i].id)))
        if (++i == slots_.size()) i = 0;
    return i;
}

void name_table::rehash(std::size_t size) {
    // A slot's place is a 32-bit hash scaled to the size (home): the size must fit 32 bits.
    if (size > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("name_table: too many names");
    large_vector<slot> old(size);
    old.swap(slots_);
    for (const auto& s : old) {
        if (s.id == unused) continue;
        auto i = home(s.hash);
        while (slots_[i].id != unused)
            if (++i == slots_.size()) i = 0;
        slots_[i] = s;
    }
}

std::size_t name_table::slots_for(std::size_t names) noexcept { return std::max<std::size_t>(min_slots, names + names / 3 + 1); }

void name_table::reserve(std::size_t names) {
    texts_.reserve(names);
    if (const auto wanted = slots_for(names); wanted > slots_.size()) rehash(wanted);
}

std::optional<std::uint64_t> name_table::packed_lasting(std::string_view text) {
    const auto address = reinterpret_cast<std::uintptr_t>(text.data());
    if (!based_) {
        base_ = address - std::min<std::uintptr_t>(address, max_offset / 2);
        based_ = true;
    }
    if (address < base_ || address - base_ > max_offset || text.size() > max_length) return std::nullopt;
    return std::uint64_t{address - base_} << length_bits | text.size();
}

name_id name_table::add(std::string_view text, bool lasting, std::size_t hash) {
    const auto id = static_cast<std::uint32_t>(texts_.size());
    const auto packed = lasting ? packed_lasting(text) : std::nullopt;
    const auto tag = tag_of(hash) << tag_shift;
    if (packed) {
        texts_.push_back(tag | *packed);
    } else {
        texts_.push_back(unpacked_flag | tag | unpacked_.size());
        unpacked_.push_back(lasting ? text : std::string_view(copies_.emplace_back(text)));
    }
    if (texts_.size() > max_load(slots_.size())) rehash(std::max(slots_for(texts_.size()), 2 * slots_.size()));
    slots_[slot_of(text, hash)] = {static_cast<std::uint32_t>(hash), id};
    return static_cast<name_id>(id);
}

name_id name_table::intern(std::string_view text) {
    const auto hash = std::hash<std::string_view>{}(text);
    if (!slots_.empty()) {
        if (const auto i = slot_of(text, hash); slots_[i].id != unused) return static_cast<name_id>(slots_[i].id);
    }
    return add(text, false, hash);
}

name_id name_table::intern_lasting(std::string_view text) {
    const auto hash = std::hash<std::string_view>{}(text);
    if (!slots_.empty()) {
        if (const auto i = slot_of(text, hash); slots_[i].id != unused) return static_cast<name_id>(slots_[i].id);
    }
    return add(text, true, hash);
}

std::optional<name_id> name_table::find(std::string_view text) const {
    if (slots_.empty()) return std::nullopt;
    if (const auto i = slot_of(text, std::hash<std::string_view>{}(text)); slots_[i].id != unused)
        return static_cast<name_id>(slots_[i].id);
    return std::nullopt;
}

name_id name_table::fresh(std::string_view base) {
    if (!base.empty() && !find(base)) return intern(base);
    const std::string stem = base.empty() ? std::string("value") : std::string(base);
    for (std::uint64_t n = 1;; ++n) {
        const auto candidate = stem + "_" + std::to_string(n);
        if (!find(candidate)) return intern(candidate);
    }
}

}  // namespace onnxstream::graph
