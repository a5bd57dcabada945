#include <onnxstream/caffe/net.hpp>

#include <cmath>
#include <cstdio>

namespace onnxstream::caffe {

param param::integer(std::string_view key, std::int64_t v) { return {std::string(key), std::to_string(v), {}}; }

param param::real(std::string_view key, double v) {
    // 9 significant digits round-trip a float; Caffe reads its parameters as float.
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    return {std::string(key), text, {}};
}

param param::flag(std::string_view key, bool v) { return {std::string(key), v ? "true" : "false", {}}; }

param param::word(std::string_view key, std::string_view enum_value) { return {std::string(key), std::string(enum_value), {}}; }

param param::message(std::string_view key, std::vector<param> children) { return {std::string(key), {}, std::move(children)}; }

std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte == 0x7f) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\%03o", static_cast<unsigned>(byte));
            out += escape;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::uint64_t blob::count() const noexcept {
    std::uint64_t n = 1;
    for (const auto d : shape) n *= static_cast<std::uint64_t>(d);
    return n;
}

}  // namespace onnxstream::caffe
