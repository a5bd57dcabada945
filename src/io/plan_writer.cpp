#include <onnxstream/io/plan_writer.hpp>

namespace onnxstream::io {

#if !defined(ONNXSTREAM_HAVE_IO_URING)
std::unique_ptr<plan_writer> make_uring_writer() { return nullptr; }
#endif

std::unique_ptr<plan_writer> make_writer(writer_backend backend) {
    if (backend != writer_backend::portable) {
        if (auto writer = make_uring_writer()) return writer;
    }
    return make_portable_writer();
}

}  // namespace onnxstream::io
