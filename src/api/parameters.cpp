#include <onnxstream/api/parameters.hpp>
#include <onnxstream/report/byte_size.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace onnxstream::api {

namespace fs = std::filesystem;

namespace {

bool on_word(std::string_view v) { return v == "1" || v == "true" || v == "on" || v == "True"; }
bool off_word(std::string_view v) { return v.empty() || v == "0" || v == "false" || v == "off" || v == "False"; }

std::string python_name(std::string_view name) {
    std::string out(name);
    std::replace(out.begin(), out.end(), '-', '_');
    return out;
}

std::string joined(std::span<const std::string_view> words) {
    std::string out;
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
        out += words[i];
    }
    return out;
}

error bad_value(const parameter& p, front_end who, std::string_view what, std::string_view value) {
    // The value is the user's own text, quoted as given (the renderers make it safe).
    return error{error_code::invalid_argument,
                 spelled(p, who) + " takes " + std::string(what) + ", not '" + std::string(value.substr(0, 200)) + "'"};
}

}  // namespace

void parameter_values::add(std::string_view name, std::string value) {
    auto it = values_.find(name);
    if (it == values_.end()) it = values_.emplace(std::string(name), std::vector<std::string>{}).first;
    it->second.push_back(std::move(value));
}

void parameter_values::set(std::string_view name, std::string value) {
    auto it = values_.find(name);
    if (it == values_.end()) it = values_.emplace(std::string(name), std::vector<std::string>{}).first;
    it->second.assign(1, std::move(value));
}

std::span<const std::string> parameter_values::get(std::string_view name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::span<const std::string>() : std::span<const std::string>(it->second);
}

std::string spelled(const parameter& p, front_end who) {
    switch (who) {
        case front_end::cli: return p.positional ? std::string(p.placeholder) : "--" + std::string(p.name);
        case front_end::page: return "the field '" + std::string(p.name) + "'";
        case front_end::python: return python_name(p.name) + "=";
    }
    return std::string(p.name);
}

parameter_reader::parameter_reader(std::span<const parameter> table, const parameter_values& values, front_end who,
                                   path_locator locate)
    : table_(table), values_(values), who_(who), locate_(std::move(locate)) {}

const parameter* parameter_reader::find(std::string_view name) const noexcept {
    for (const auto& p : table_)
        if (p.name == name) return &p;
    return nullptr;
}

const parameter& parameter_reader::row(std::string_view name) const {
    if (const auto* p = find(name)) return *p;
    throw std::logic_error("parameter '" + std::string(name) + "' is not in the command's table");
}

std::string parameter_reader::spelled(std::string_view name) const { return api::spelled(row(name), who_); }

result<void> parameter_reader::check_value(const parameter& p, std::string_view value) const {
    switch (p.kind) {
        case value_kind::flag:
            if (!on_word(value) && !off_word(value)) return failure(bad_value(p, who_, "on or off (1 or 0)", value));
            return {};
        case value_kind::size:
            if (!report::parse_size(value)) return failure(bad_value(p, who_, "a size such as 4096, 64K, 1M or 2G", value));
            return {};
        case value_kind::count: {
            // More threads than this only exhaust the process's limits (io_uring then cancels).
            constexpr std::uint64_t most = 1024;
            std::uint64_t n = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
            if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == value.data() + value.size() && n > most))
                return failure(error_code::invalid_argument, api::spelled(p, who_) + " must be at most " + std::to_string(most));
            if (ec != std::errc() || end != value.data() + value.size() || n == 0)
                return failure(bad_value(p, who_, "a whole number from 1 to 1024", value));
            return {};
        }
        case value_kind::number: {
            const std::string text(value);
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !(v > 0) || !std::isfinite(v))
                return failure(bad_value(p, who_, "a positive number such as 1e-4", value));
            return {};
        }
        case value_kind::choice:
            if (std::find(p.choices.begin(), p.choices.end(), value) == p.choices.end())
                return failure(bad_value(p, who_, joined(p.choices), value));
            return {};
        case value_kind::text:
        case value_kind::path:
        case value_kind::model: return {};
    }
    return {};
}

result<void> parameter_reader::check() const {
    for (const auto& [name, given_values] : values_.all()) {
        const auto* p = find(name);
        if (p == nullptr || (who_ == front_end::python && !p->on(surface::python)) ||
            (who_ == front_end::page && !p->on(surface::page))) {
            std::vector<std::string_view> known;
            std::string list;
            for (const auto& row : table_) {
                const bool shown = who_ == front_end::cli    ? row.on(surface::cli)
                                   : who_ == front_end::page ? row.on(surface::page)
                                                             : row.on(surface::python);
                if (!shown || row.hidden) continue;
                list += (list.empty() ? "" : ", ") + (who_ == front_end::python ? python_name(row.name) : std::string(row.name));
            }
            const std::string shown_name = who_ == front_end::python ? python_name(name) : std::string(name);
            return failure(error_code::invalid_argument,
                           "unknown parameter '" + shown_name.substr(0, 100) + "' (this command takes: " + list + ")");
        }
        if (given_values.size() > 1 && !p->repeatable && who_ != front_end::cli)
            return failure(error_code::invalid_argument, api::spelled(*p, who_) + " is given more than once");
        for (const auto& v : given_values) ONNXSTREAM_TRY(check_value(*p, v));
    }
    for (const auto& p : table_) {
        const bool applies = who_ == front_end::cli    ? p.on(surface::cli)
                             : who_ == front_end::page ? p.on(surface::page)
                                                       : p.on(surface::python);
        if (p.required && applies && !given(p.name) && p.default_value.empty())
            return failure(error_code::invalid_argument,
                           "missing " + api::spelled(p, who_) +
                               (p.kind == value_kind::choice ? " (" + joined(p.choices) + ")" : std::string()));
    }
    return {};
}

bool parameter_reader::given(std::string_view name) const {
    const auto& p = row(name);
    const auto v = values_.get(p.name);
    if (v.empty()) return false;
    // A flag given as "0" is not given; an empty text value counts as not given too (a
    // form's empty field).
    return p.kind == value_kind::flag ? on_word(v.back()) : !v.back().empty();
}

std::string_view parameter_reader::text(std::string_view name) const {
    const auto& p = row(name);
    const auto v = values_.get(p.name);
    if (!v.empty() && !v.back().empty()) return v.back();
    return p.default_value;
}

std::vector<std::string> parameter_reader::texts(std::string_view name) const {
    const auto& p = row(name);
    std::vector<std::string> out;
    for (const auto& v : values_.get(p.name))
        if (!v.empty()) out.push_back(v);
    if (out.empty() && !p.default_value.empty()) out.emplace_back(p.default_value);
    return out;
}

bool parameter_reader::flag(std::string_view name) const {
    const auto& p = row(name);
    const auto v = values_.get(p.name);
    return !v.empty() ? on_word(v.back()) : on_word(p.default_value);
}

result<std::uint64_t> parameter_reader::size(std::string_view name) const {
    const auto& p = row(name);
    const auto v = text(name);
    if (v.empty()) return std::uint64_t{0};
    if (const auto bytes = report::parse_size(v)) return *bytes;
    return failure(bad_value(p, who_, "a size such as 4096, 64K, 1M or 2G", v));
}

result<unsigned> parameter_reader::count(std::string_view name) const {
    const auto& p = row(name);
    const auto v = text(name);
    if (v.empty()) return 0U;
    ONNXSTREAM_TRY(check_value(p, v));
    unsigned n = 0;
    std::from_chars(v.data(), v.data() + v.size(), n);
    return n;
}

result<double> parameter_reader::number(std::string_view name) const {
    const auto& p = row(name);
    const auto v = text(name);
    if (v.empty()) return 0.0;
    ONNXSTREAM_TRY(check_value(p, v));
    return std::strtod(std::string(v).c_str(), nullptr);
}

result<std::string_view> parameter_reader::choice(std::string_view name) const {
    const auto& p = row(name);
    const auto v = text(name);
    if (v.empty()) return std::string_view();
    ONNXSTREAM_TRY(check_value(p, v));
    return v;
}

result<fs::path> parameter_reader::path(std::string_view name) const {
    const auto& p = row(name);
    const auto v = text(name);
    if (v.empty()) return fs::path();
    if (!locate_) return fs::path(std::string(v));
    auto located = locate_(p.name, v);
    if (!located) {
        auto e = std::move(located).error();
        e.message = api::spelled(p, who_) + ": " + e.message;
        return failure(std::move(e));
    }
    return located;
}

result<std::vector<fs::path>> parameter_reader::paths(std::string_view name) const {
    const auto& p = row(name);
    std::vector<fs::path> out;
    for (const auto& v : texts(name)) {
        if (!locate_) {
            out.emplace_back(v);
            continue;
        }
        auto located = locate_(p.name, v);
        if (!located) {
            auto e = std::move(located).error();
            e.message = api::spelled(p, who_) + ": " + e.message;
            return failure(std::move(e));
        }
        out.push_back(std::move(located).value());
    }
    return out;
}

std::vector<std::string> parameter_reader::list(std::string_view name) const {
    std::vector<std::string> items;
    std::string_view rest = text(name);
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (const auto item = rest.substr(0, comma); !item.empty()) items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return items;
}

}  // namespace onnxstream::api
