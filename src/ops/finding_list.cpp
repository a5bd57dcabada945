#include <onnxstream/ops/finding_list.hpp>

#include <onnxstream/proto/varint.hpp>

#include <span>

namespace onnxstream::ops {

using passes::finding;
using passes::finding_kind;

std::vector<std::string> finding_list::view::names() const {
    std::vector<std::string> out;
    out.reserve(name_count);
    for_each_name([&out](std::string_view name) { out.emplace_back(name); });
    return out;
}

finding finding_list::view::to_finding() const {
    finding f;
    f.kind = kind;
    f.scope = scope;
    f.op_type = op_type;
    f.names = names();
    f.nodes = nodes;
    f.bytes = bytes;
    f.count = count;
    f.detail = detail;
    return f;
}

void finding_list::add(const finding& f) { add(f.kind, f.scope, f.op_type, f.names, f.nodes, f.bytes, f.count, f.detail); }

void finding_list::count(const finding& f) {
    for (auto* t : {&totals_[static_cast<std::size_t>(f.kind)], &counted_[static_cast<std::size_t>(f.kind)].totals}) {
        t->count += f.count;
        t->nodes += f.nodes;
        t->bytes += f.bytes;
    }
    ++counted_[static_cast<std::size_t>(f.kind)].findings;
}

void finding_list::append(const finding_list& other) {
    if (&other == this) {  // its views would move as it grows
        const finding_list copy = other;
        append(copy);
        return;
    }
    other.for_each([this](const view& v) {
        begin(v.kind, v.scope, v.op_type, v.detail, v.nodes, v.bytes, v.count, v.name_count);
        v.for_each_name([this](std::string_view name) { write_text(name); });
    });
    add_counted(other);
}

void finding_list::add_counted(const finding_list& other) {
    for (std::size_t k = 0; k < counted_.size(); ++k) {
        const auto& more = other.counted_[k];
        counted_[k].findings += more.findings;
        for (auto* t : {&totals_[k], &counted_[k].totals}) {
            t->count += more.totals.count;
            t->nodes += more.totals.nodes;
            t->bytes += more.totals.bytes;
        }
    }
}

void finding_list::take(std::vector<finding>& findings) {
    for (const auto& f : findings) add(f);
    findings.clear();
    findings.shrink_to_fit();  // a pass's million findings are not kept twice
}

void finding_list::reserve(std::uint64_t findings, std::uint64_t bytes_each) {
    data_.reserve(data_.size() + findings * bytes_each);
}

std::uint64_t finding_list::memory_size() const noexcept {
    std::uint64_t bytes = data_.capacity();
    for (const auto& text : shared_) bytes += 2 * (sizeof(std::string) + text.capacity()) + 48;  // vector, map node
    return bytes;
}

void finding_list::begin(finding_kind kind, std::string_view scope, std::string_view op_type, std::string_view detail,
                         std::uint64_t nodes, std::uint64_t bytes, std::uint64_t count, std::uint64_t name_count) {
    data_ += static_cast<char>(kind);
    write_shared(scope, true);
    write_shared(op_type, false);
    write_shared(detail, false);
    write_varint(nodes);
    write_varint(bytes);
    write_varint(count);
    write_varint(name_count);
    auto& t = totals_[static_cast<std::size_t>(kind)];
    t.count += count;
    t.nodes += nodes;
    t.bytes += bytes;
    ++size_;
}

void finding_list::write_varint(std::uint64_t value) {
    const auto encoded = proto::encode_varint(value);
    for (const auto b : encoded.view()) data_ += static_cast<char>(b);
}

void finding_list::write_text(std::string_view text) {
    write_varint(text.size());
    data_.append(text);
}

// Even: the id of a shared text, times two. Odd: an inline text of (value - 1) / 2 bytes.
void finding_list::write_shared(std::string_view text, bool always) {
    if (const auto it = shared_ids_.find(text); it != shared_ids_.end()) {
        write_varint(std::uint64_t{it->second} * 2);
        return;
    }
    if (always || shared_.size() < max_shared) {
        const auto id = static_cast<std::uint32_t>(shared_.size());
        shared_.emplace_back(text);
        shared_ids_.emplace(text, id);
        write_varint(std::uint64_t{id} * 2);
        return;
    }
    write_varint(text.size() * 2 + 1);
    data_.append(text);
}

// The buffer is only ever written by this class: every varint in it is whole.
std::uint64_t finding_list::read_varint(std::uint64_t& at) const {
    const auto bytes = std::as_bytes(std::span(data_.data(), data_.size())).subspan(at);
    const auto decoded = proto::decode_varint(bytes);
    at += decoded->size;
    return decoded->value;
}

std::string_view finding_list::read_text(std::uint64_t& at) const {
    const auto length = read_varint(at);
    const std::string_view text(data_.data() + at, length);
    at += length;
    return text;
}

std::string_view finding_list::read_shared(std::uint64_t& at, std::uint32_t& key) const {
    const auto value = read_varint(at);
    if (value % 2 == 0) {
        key = static_cast<std::uint32_t>(value / 2);
        return shared_[key];
    }
    key = no_key;
    const std::string_view text(data_.data() + at, (value - 1) / 2);
    at += text.size();
    return text;
}

finding_list::view finding_list::at(std::uint64_t position) const {
    view v;
    v.list_ = this;
    v.position = position;
    std::uint64_t at = position;
    v.kind = static_cast<finding_kind>(data_[at++]);
    v.scope = read_shared(at, v.scope_key);
    std::uint32_t unused_key = 0;
    v.op_type = read_shared(at, unused_key);
    v.detail = read_shared(at, unused_key);
    v.nodes = read_varint(at);
    v.bytes = read_varint(at);
    v.count = read_varint(at);
    v.name_count = read_varint(at);
    v.names_ = at;
    for (std::uint64_t i = 0; i < v.name_count; ++i) at += read_varint(at);
    v.end_ = at;
    return v;
}

// Two passes, counting then placing: 8 bytes a finding, however many groups.
finding_list::groups finding_list::group(std::size_t categories, std::span<const std::size_t> category_of_kind) const {
    groups g;
    g.categories = categories;
    const auto group_of = [&](const view& v) {
        return std::uint64_t{v.scope_key} * categories + category_of_kind[static_cast<std::size_t>(v.kind)];
    };
    const auto shown = [&](const view& v) {
        return v.scope_key != no_key && category_of_kind[static_cast<std::size_t>(v.kind)] < categories;
    };
    std::uint64_t total = 0;
    for_each([&](const view& v) {
        if (!shown(v)) return;
        ++g.ranges[group_of(v)].second;
        ++total;
    });
    std::uint64_t next = 0;
    for (auto& [group, range] : g.ranges) {
        const auto count = range.second;
        range = {next, next};
        next += count;
    }
    g.positions.resize(total);
    for_each([&](const view& v) {
        if (!shown(v)) return;
        g.positions[g.ranges[group_of(v)].second++] = v.position;
    });
    return g;
}

std::span<const std::uint64_t> finding_list::groups::of(std::uint32_t scope_key, std::size_t category) const {
    if (scope_key == no_key) return {};
    const auto it = ranges.find(std::uint64_t{scope_key} * categories + category);
    if (it == ranges.end()) return {};
    return std::span(positions).subspan(it->second.first, it->second.second - it->second.first);
}

std::uint32_t finding_list::key_of_scope(std::string_view scope) const {
    const auto it = shared_ids_.find(scope);
    return it == shared_ids_.end() ? no_key : it->second;
}

}  // namespace onnxstream::ops
