// The binary half of an export: a NetParameter with, per layer that has blobs, its name,
// type, bottoms, tops and BlobProtos (shape + packed float data). Blob bytes that live in
// a source file become `copy` operations of the write plan, so a weight is never read
// into memory; everything else is emitted. The plan runs through the same writer as
// merge (see io/plan_writer.hpp).
#pragma once

#include <onnxstream/caffe/net.hpp>
#include <onnxstream/plan/write_plan.hpp>
#include <onnxstream/result.hpp>

namespace onnxstream::caffe {

/// The write plan of the .caffemodel for `network`. Errors: `too_large` past
/// protobuf's 2 GB message limit (Caffe and OpenCV read the file as one message).
[[nodiscard]] result<plan::write_plan> plan_caffemodel(const net& network);

}  // namespace onnxstream::caffe
