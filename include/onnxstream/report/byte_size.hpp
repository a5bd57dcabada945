// Byte sizes as text, both ways: what a front end shows (`human_bytes`) and what a person
// types as an option or a form field (`parse_size`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onnxstream::report {

/// "512 B", "12.3 KiB", "1.50 GiB" (powers of 1024).
[[nodiscard]] std::string human_bytes(std::uint64_t bytes);

/// `4096`, `64K`, `1M`, `2G`, `1T`, with `B`, `KB`/`KiB`-style suffixes too, in any case;
/// powers of 1024. Empty when `text` is no such size or does not fit in 64 bits.
[[nodiscard]] std::optional<std::uint64_t> parse_size(std::string_view text) noexcept;

}  // namespace onnxstream::report
