#include <onnxstream/caffe/opencv_runner.hpp>

#if ONNXSTREAM_HAVE_OPENCV
#include "opencv_module.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#endif

namespace onnxstream::caffe {

#if ONNXSTREAM_HAVE_OPENCV

namespace {

constexpr const char* module_name = "onnxstream-opencv.so";

std::filesystem::path executable_folder() {
    std::array<char, 4096> buffer{};
    const auto length = ::readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
    if (length <= 0) return {};
    return std::filesystem::path(std::string(buffer.data(), static_cast<std::size_t>(length))).parent_path();
}

/// Where the module may be, in order: beside the executable (the build tree, and a
/// relocated copy), then where `cmake --install` puts it, then the build tree (for test
/// programs in its subfolders).
std::vector<std::filesystem::path> module_candidates() {
    std::vector<std::filesystem::path> out;
    if (const auto folder = executable_folder(); !folder.empty()) out.push_back(folder / module_name);
    out.emplace_back(std::filesystem::path(ONNXSTREAM_OPENCV_MODULE_INSTALLED) / module_name);
    out.emplace_back(std::filesystem::path(ONNXSTREAM_OPENCV_MODULE_BUILT) / module_name);
    return out;
}

struct loaded_module {
    const opencv_module_api* api = nullptr;
    std::string why;  // what went wrong when api is null, as a clause ("its OpenCV module did not load (...)")
};

/// Loads the module once per process; it stays loaded (OpenCV's own threads outlive a run).
const loaded_module& module() {
    static const loaded_module loaded = [] {
        loaded_module m;
        for (const auto& path : module_candidates()) {
            std::error_code ec;
            if (!std::filesystem::exists(path, ec)) continue;
            void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (handle == nullptr) {
                const char* text = ::dlerror();
                m.why = std::string("its OpenCV module did not load (") + (text != nullptr ? text : path.c_str()) + ")";
                return m;
            }
            using entry = const opencv_module_api* (*)();
            auto* symbol = ::dlsym(handle, onnxstream_opencv_module_symbol);
            const auto* api = symbol != nullptr ? reinterpret_cast<entry>(symbol)() : nullptr;
            if (api == nullptr || api->version != opencv_module_version || api->run == nullptr) {
                m.why = path.string() + " is not the OpenCV module of this build of onnxstream";
                return m;
            }
            m.api = api;
            return m;
        }
        m.why = std::string("its OpenCV module (") + module_name + ") is neither beside it nor where it is installed";
        return m;
    }();
    return loaded;
}

}  // namespace

bool opencv_available() noexcept { return module().api != nullptr; }

std::string opencv_unavailable_reason() { return module().why; }

result<opencv_run> run_opencv(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                              const std::map<std::string, dense_tensor>& inputs, const std::vector<opencv_request>& requests) {
    const auto& m = module();
    if (m.api == nullptr)
        return failure(error_code::unsupported, "onnxstream cannot run OpenCV: " + m.why,
                       "install libopencv-dnn-dev (apt-get install libopencv-dnn-dev) and reinstall onnxstream");
    auto outcome = m.api->run(prototxt, caffemodel, inputs, requests);
    if (!outcome.failure.empty())
        return failure(error_code::invalid_argument, "OpenCV could not run the export: " + outcome.failure,
                       "this is a bug in the exporter; please report it with the model");
    return std::move(outcome.run);
}

#else

constexpr const char* no_opencv = "this build of onnxstream has no OpenCV";

bool opencv_available() noexcept { return false; }

std::string opencv_unavailable_reason() { return no_opencv; }

result<opencv_run> run_opencv(const std::filesystem::path&, const std::filesystem::path&,
                              const std::map<std::string, dense_tensor>&, const std::vector<opencv_request>&) {
    return failure(error_code::unsupported, no_opencv,
                   "install libopencv-dnn-dev (apt-get install libopencv-dnn-dev) and rebuild");
}

#endif

}  // namespace onnxstream::caffe
