// The gui server behind gui_module.hpp: built as onnxstream-gui.so, loaded by
// command_gui.cpp only when `onnxstream gui` runs.
#include "gui_module.hpp"

#include "job_worker.hpp"

namespace onnxstream::server {
namespace {

constexpr gui_module_api api{.version = gui_module_version,
                             .serve = &serve,
                             .random_token = &random_token,
                             .is_loopback = &is_loopback,
                             .run_worker = &run_job_worker};

}  // namespace
}  // namespace onnxstream::server

extern "C" __attribute__((visibility("default"))) const onnxstream::server::gui_module_api* onnxstream_gui_module() {
    return &onnxstream::server::api;
}
