#include <onnxstream/io/plan_writer.hpp>

namespace onnxstream::io {

#if !defined(ONNXSTREAM_HAVE_IO_URING)
std::unique_ptr<plan_writer> make_uring_writer() { return nullptr; }
#endif
#if !defined(_WIN32)
std::unique_ptr<plan_writer> make_overlapped_writer() { return nullptr; }
#endif

std::unique_ptr<plan_writer> make_writer(writer_backend backend) {
    if (backend == writer_backend::automatic || backend == writer_backend::overlapped) {
        if (auto writer = make_overlapped_writer()) return writer;
    }
    if (backend == writer_backend::automatic || backend == writer_backend::io_uring) {
        if (auto writer = make_uring_writer()) return writer;
    }
    return make_portable_writer();
}

}  // namespace onnxstream::io
