// What every report says about one data file a model's tensors name, taken from the
// binding (onnx::bound_model): one place for the fields inspect, verify and merge share.
// Private to the ops layer.
#pragma once

#include <onnxstream/onnx/external_data.hpp>

namespace onnxstream::ops {

/// Fills `row`'s location, path, how, guessed, size and tensors from `file`.
template <class Row>
void describe_found_file(const onnx::data_file& file, Row& row) {
    row.location = file.location;
    if (file.found) {
        row.path = file.found->path;
        row.how = file.found->how;
        row.guessed = file.found->guess();
    }
    if (file.file) row.size = file.size;
    row.tensors = file.tensor_count;
}

}  // namespace onnxstream::ops
