// A temporary folder for tests, removed with everything in it when the object dies.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace test_support {

class temp_folder {
public:
    temp_folder() {
        // A fresh name made here rather than mkdtemp, which Windows lacks.
        std::mt19937_64 generator{std::random_device{}()};
        for (int attempt = 0; attempt < 16 && path_.empty(); ++attempt) {
            auto candidate = std::filesystem::temp_directory_path() / ("onnxstream-test-" + std::to_string(generator()));
            if (std::filesystem::create_directory(candidate)) path_ = std::move(candidate);
        }
        if (path_.empty()) throw std::runtime_error("cannot create a temporary folder");
    }
    ~temp_folder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    temp_folder(const temp_folder&) = delete;
    temp_folder& operator=(const temp_folder&) = delete;

    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    std::filesystem::path write(const std::filesystem::path& relative, std::string_view content) const {
        const auto full = path_ / relative;
        std::filesystem::create_directories(full.parent_path());
        std::ofstream(full, std::ios::binary) << content;
        return full;
    }

private:
    std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& path) {
    std::string content(std::filesystem::file_size(path), '\0');
    std::ifstream in(path, std::ios::binary);
    in.read(content.data(), static_cast<std::streamsize>(content.size()));
    return content;
}

// The names of the entries of `folder`, sorted.
inline std::vector<std::string> names_in(const std::filesystem::path& folder) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace test_support
