#include <onnxstream/io/loadable_module.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <system_error>
#include <vector>

namespace onnxstream::io {
namespace {

std::filesystem::path executable_folder() {
    std::array<char, 4096> buffer{};
    const auto length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
    if (length <= 0) return {};
    return std::filesystem::path(std::string(buffer.data(), static_cast<std::size_t>(length))).parent_path();
}

}  // namespace

loaded_module load_module(std::string_view file_name, const char* entry_symbol, const module_places& places) {
    std::vector<std::filesystem::path> candidates;
    if (const auto folder = executable_folder(); !folder.empty()) {
        candidates.push_back(folder / file_name);
        if (!places.beside_installed.empty())
            candidates.push_back((folder / places.beside_installed / file_name).lexically_normal());
    }
    if (!places.installed.empty()) candidates.push_back(places.installed / file_name);
    if (!places.built.empty()) candidates.push_back(places.built / file_name);
    loaded_module out;
    for (const auto& path : candidates) {
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) continue;
        out.path = path;
        void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            const char* text = ::dlerror();
            out.outcome = module_outcome::not_loaded;
            out.detail = text != nullptr ? text : path.string();
            return out;
        }
        out.entry = ::dlsym(handle, entry_symbol);
        out.outcome = out.entry != nullptr ? module_outcome::loaded : module_outcome::no_entry;
        return out;
    }
    return out;
}

}  // namespace onnxstream::io
