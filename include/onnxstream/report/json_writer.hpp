// A small streaming JSON writer for reports (--json, the gui page): objects, arrays, and scalars, with
// commas placed automatically. Strings from models are untrusted bytes: invalid UTF-8 is
// replaced with U+FFFD so the document is always valid JSON, and what a terminal would act
// on is escaped as `safe_text.hpp` says, so the document is as safe to print as it is.
//
// The document is kept whole (`text()`), or, given a sink, handed to it piece by piece as
// it grows (a report of a million findings is never one string): the caller then calls
// `flush()` at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::report {

class json_writer {
public:
    json_writer() = default;
    /// A writer that hands the text to `sink` in pieces of about `piece` bytes, in order.
    explicit json_writer(std::function<void(std::string_view)> sink, std::size_t piece = 1U << 16);

    json_writer& begin_object();
    json_writer& end_object();
    json_writer& begin_array();
    json_writer& end_array();
    json_writer& key(std::string_view name);
    json_writer& value(std::string_view text);
    json_writer& value(const char* text) { return value(std::string_view(text)); }
    json_writer& value(const std::string& text) { return value(std::string_view(text)); }
    json_writer& value(std::uint64_t number);
    json_writer& value(std::int64_t number);
    json_writer& value(unsigned number) { return value(static_cast<std::uint64_t>(number)); }
    json_writer& value(int number) { return value(static_cast<std::int64_t>(number)); }
    json_writer& value(double number);
    json_writer& value(bool flag);
    json_writer& null();
    template <class T>
    json_writer& value(const std::optional<T>& maybe) {
        return maybe ? value(*maybe) : null();
    }
    template <class T>
    json_writer& field(std::string_view name, const T& v) {
        key(name);
        return value(v);
    }

    /// An object of fields in one call: `object("name", n, "size", s)` writes
    /// {"name": n, "size": s}. Arguments alternate a key and its value.
    template <class... KeysAndValues>
    json_writer& object(const KeysAndValues&... keys_and_values) {
        static_assert(sizeof...(KeysAndValues) % 2 == 0, "object() takes key, value pairs");
        begin_object();
        fields(keys_and_values...);
        return end_object();
    }

    /// The document (with a sink: what was not handed to it yet).
    [[nodiscard]] const std::string& text() const noexcept { return out_; }
    /// With a sink: hands it what is left. Without: nothing.
    void flush();

private:
    json_writer& fields() { return *this; }
    template <class T, class... Rest>
    json_writer& fields(std::string_view name, const T& v, const Rest&... rest) {
        field(name, v);
        return fields(rest...);
    }

    void separate();
    std::string out_;
    std::function<void(std::string_view)> sink_;
    std::size_t piece_ = 0;
    std::vector<bool> first_;  // per open container: nothing written in it yet
    bool after_key_ = false;
};

/// `text` as a JSON string literal (quotes included), for a report: a byte that is not
/// UTF-8 becomes U+FFFD (JSON holds only Unicode text), so what is shown may differ.
[[nodiscard]] std::string json_quote(std::string_view text);

/// `text` as a JSON string literal that holds exactly its bytes, for a document that names
/// things others look up (a safetensors header, an index.json): nothing when `text` is not
/// valid UTF-8, which no JSON string can hold and a replacement would turn into another name.
[[nodiscard]] std::optional<std::string> exact_json_quote(std::string_view text);

}  // namespace onnxstream::report
