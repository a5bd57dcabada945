// The data files a rewrite writes beside its output (split, repack, convert, optimize,
// export --to safetensors): how they are laid out by default, and what a report says
// about each one.
#pragma once

#include <cstdint>
#include <filesystem>

namespace onnxstream::ops {

inline constexpr std::uint64_t default_threshold = 1024;             // smaller tensors stay embedded
inline constexpr std::uint64_t default_alignment = 4096;             // offsets runtimes can map
inline constexpr std::uint64_t aligned_tensor_minimum = 1ULL << 20;  // smaller tensors stay dense

struct written_data_file {
    std::filesystem::path path;
    std::uint64_t size = 0;
    std::uint64_t tensors = 0;
};

}  // namespace onnxstream::ops
