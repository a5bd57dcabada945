// What the POSIX and the Windows mapped_file share. Internal to io/ (mapped_file.cpp,
// mapped_file_win.cpp).
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/result.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>

namespace onnxstream::io::mapping_detail {

/// A mapping of `size` bytes fits this machine's address space (`unsupported` otherwise:
/// a 32-bit build cannot map a file over 4 GiB).
[[nodiscard]] inline result<void> check_mappable_size(std::uint64_t size, const std::filesystem::path& display) {
    if (size > static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max()))
        return failure(error_code::unsupported, "cannot map " + display.string() + ": too large for this machine");
    return {};
}

}  // namespace onnxstream::io::mapping_detail
