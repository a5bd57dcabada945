#include <onnxstream/caffe/opencv_runner.hpp>

#if ONNXSTREAM_HAVE_OPENCV
#include "opencv_module.hpp"

#include <onnxstream/io/loadable_module.hpp>
#endif

namespace onnxstream::caffe {

#if ONNXSTREAM_HAVE_OPENCV

namespace {

constexpr const char* module_name = "onnxstream-opencv.so";

struct loaded_module {
    const opencv_module_api* api = nullptr;
    std::string why;  // what went wrong when api is null, as a clause ("its OpenCV module did not load (...)")
};

/// Loads the module once per process; it stays loaded (OpenCV's own threads outlive a run).
const loaded_module& module() {
    static const loaded_module loaded = [] {
        loaded_module m;
        const auto found = io::load_module(
            module_name, onnxstream_opencv_module_symbol,
            {ONNXSTREAM_MODULE_FROM_BINDIR, ONNXSTREAM_OPENCV_MODULE_INSTALLED, ONNXSTREAM_OPENCV_MODULE_BUILT});
        switch (found.outcome) {
            case io::module_outcome::not_found:
                m.why = std::string("its OpenCV module (") + module_name + ") is neither beside it nor where it is installed";
                return m;
            case io::module_outcome::not_loaded: m.why = "its OpenCV module did not load (" + found.detail + ")"; return m;
            case io::module_outcome::no_entry:
            case io::module_outcome::loaded: break;
        }
        using entry = const opencv_module_api* (*)();
        const auto* api = found.entry != nullptr ? reinterpret_cast<entry>(found.entry)() : nullptr;
        if (api == nullptr || api->version != opencv_module_version || api->run == nullptr) {
            m.why = found.path.string() + " is not the OpenCV module of this build of onnxstream";
            return m;
        }
        m.api = api;
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
