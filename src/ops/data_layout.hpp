// How split, repack, convert and optimize lay tensors out in the data files they write:
// in order, each at the next offset aligned for it (only tensors of at least
// `align_threshold` bytes: padding small ones to a page each would multiply a file of
// many small weights, and runtimes only map the large ones), starting a new shard when
// one would grow past `shard_size`. Also the names of those files. Private to the ops layer.
#pragma once

#include <onnxstream/ops/externalize.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace onnxstream::ops {

struct layout_rules {
    std::uint64_t alignment = default_alignment;             // 0 or 1: dense
    std::uint64_t align_threshold = aligned_tensor_minimum;  // smaller tensors stay dense
    std::uint64_t shard_size = 0;                            // 0: one file
};

class data_layout {
public:
    explicit data_layout(layout_rules rules) : rules_(rules) {}

    struct place {
        std::uint32_t shard = 0;
        std::uint64_t offset = 0;  // in the shard
    };
    /// Where the next tensor of `length` bytes goes.
    [[nodiscard]] place add(std::uint64_t length);
    /// Shards used so far: 0 before the first tensor.
    [[nodiscard]] std::uint32_t shard_count() const noexcept { return any_ ? shard_ + 1 : 0; }

private:
    layout_rules rules_;
    bool any_ = false;
    std::uint32_t shard_ = 0;
    std::uint64_t size_ = 0;      // of the current shard
    std::uint64_t in_shard_ = 0;  // tensors in the current shard
};

/// The data file's name: `given` (--data-name), which must be a file name and not a path,
/// or `<output file name>.data`. Errors: `invalid_argument`.
[[nodiscard]] result<std::string> choose_data_name(const std::filesystem::path& output, const std::string& given);

/// The file name of shard `index` (0-based) of `count`: the data name itself when the
/// data is one file and sharding was not asked for, else shard_name().
[[nodiscard]] std::string data_file_name(const std::string& data_name, std::uint64_t shard_size, std::uint32_t index,
                                         std::uint32_t count);

/// Refuses data file `path` when it would be the model output itself; the hint names
/// `change` (another data name, or another output).
[[nodiscard]] result<void> check_not_model(const std::filesystem::path& path, const std::filesystem::path& output,
                                           remedy change = remedy::choose_data_name);

}  // namespace onnxstream::ops
