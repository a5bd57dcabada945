#include <onnxstream/io/plan_writer.hpp>

#include <cstdlib>
#include <string_view>

namespace onnxstream::io {

#if !defined(ONNXSTREAM_HAVE_IO_URING)
std::unique_ptr<plan_writer> make_uring_writer() { return nullptr; }
#endif
#if !defined(_WIN32)
std::unique_ptr<plan_writer> make_overlapped_writer() { return nullptr; }
#endif

std::unique_ptr<plan_writer> make_writer(writer_backend backend) {
    if (backend == writer_backend::automatic) {
        const char* forced = std::getenv("ONNXSTREAM_WRITER");
        if (forced != nullptr && std::string_view(forced) == "portable") backend = writer_backend::portable;
    }
    if (backend == writer_backend::automatic || backend == writer_backend::overlapped) {
        if (auto writer = make_overlapped_writer()) return writer;
    }
    if (backend == writer_backend::automatic || backend == writer_backend::io_uring) {
        if (auto writer = make_uring_writer()) return writer;
    }
    return make_portable_writer();
}

}  // namespace onnxstream::io
