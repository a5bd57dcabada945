#include "data_layout.hpp"

namespace onnxstream::ops {

data_layout::place data_layout::add(std::uint64_t length) {
    const auto align = length >= rules_.align_threshold ? rules_.alignment : 0;
    std::uint64_t offset = align > 1 ? (size_ + align - 1) / align * align : size_;
    if (rules_.shard_size > 0 && in_shard_ > 0 && offset + length > rules_.shard_size) {
        ++shard_;
        offset = 0;
        in_shard_ = 0;
    }
    any_ = true;
    size_ = offset + length;
    ++in_shard_;
    return {shard_, offset};
}

result<std::string> choose_data_name(const std::filesystem::path& output, const std::string& given) {
    const auto name = given.empty() ? output.filename().string() + ".data" : given;
    if (std::filesystem::path(name).has_parent_path() || name == "." || name == "..")
        return failure(error_code::invalid_argument, "the data file's name must be a file name, not a path ('" + name + "')",
                       "the data file is always written beside the output: give {0} a plain file name",
                       {{remedy::choose_data_name, {}}});
    return name;
}

std::string data_file_name(const std::string& data_name, std::uint64_t shard_size, std::uint32_t index, std::uint32_t count) {
    return count > 1 || shard_size > 0 ? shard_name(data_name, index, count) : data_name;
}

result<void> check_not_model(const std::filesystem::path& path, const std::filesystem::path& output, remedy change) {
    if (path.filename() == output.filename())
        return failure(error_code::invalid_argument, "the data file and the model would both be " + path.string(),
                       change == remedy::choose_output ? "choose another output name with {0}" : "choose another {0}",
                       {{change, {}}});
    return {};
}

}  // namespace onnxstream::ops
