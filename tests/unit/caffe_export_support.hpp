// What the Caffe export tests share: exporting a hand-written model (test_passes_builder.hpp)
// the way `onnxstream export --to caffe -o <folder>/net --input-shape X=...` does.
#pragma once

#include <onnxstream/ops/export_caffe.hpp>

#include "test_passes_builder.hpp"

#include <utility>

namespace test_passes {

/// Exports `h`'s model to <its folder>/net.prototxt + net.caffemodel, its input X given
/// `shape` (the graphs these tests build have one input, X).
inline onnxstream::result<onnxstream::ops::export_caffe_report> export_net(const harness& h, onnxstream::caffe::shape shape) {
    onnxstream::ops::export_caffe_options options;
    options.output = h.folder().path() / "net";
    options.input_shapes["X"] = std::move(shape);
    return onnxstream::ops::export_caffe(h.path(), options);
}

}  // namespace test_passes
