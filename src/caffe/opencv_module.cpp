// OpenCV's dnn module behind opencv_module.hpp: built as onnxstream-opencv.so, loaded by
// opencv_runner.cpp only when `export --to caffe --check` runs.
#include "opencv_module.hpp"

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include <chrono>

namespace onnxstream::caffe {
namespace {

cv::Mat to_mat(const dense_tensor& t) {
    std::vector<int> sizes;
    for (const auto d : t.shape) sizes.push_back(static_cast<int>(d));
    cv::Mat m(static_cast<int>(sizes.size()), sizes.data(), CV_32F);
    auto* out = m.ptr<float>();
    for (std::size_t i = 0; i < t.values.size(); ++i) out[i] = static_cast<float>(t.values[i]);
    return m;
}

dense_tensor from_mat(const cv::Mat& m) {
    dense_tensor t;
    for (int i = 0; i < m.dims; ++i) t.shape.push_back(m.size[i]);
    const cv::Mat continuous = m.isContinuous() ? m : m.clone();
    const auto* p = continuous.ptr<float>();
    t.values.assign(p, p + continuous.total());
    return t;
}

opencv_outcome run(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel,
                   const std::map<std::string, dense_tensor>& inputs, const std::vector<opencv_request>& requests) {
    opencv_outcome out;
    try {
        auto net = cv::dnn::readNetFromCaffe(prototxt.string(), caffemodel.string());
        net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
        net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
        net.enableFusion(false);
        for (const auto& [name, t] : inputs) net.setInput(to_mat(t), name);
        // OpenCV renames some layers after their top (a Convolution with a bias, for one).
        auto known = [&](const opencv_request& r) -> std::string {
            if (net.getLayerId(r.layer) >= 0) return r.layer;
            if (net.getLayerId(r.first_top) >= 0) return r.first_top;
            return {};
        };
        // First outputs in one pass; a later output of a layer needs a pass of its own.
        std::vector<std::string> names;
        std::vector<const opencv_request*> firsts, others;
        for (const auto& r : requests) {
            const auto name = known(r);
            if (name.empty()) continue;
            if (r.index == 0) {
                names.push_back(name);
                firsts.push_back(&r);
            } else {
                others.push_back(&r);
            }
        }
        std::vector<cv::Mat> blobs;
        const auto start = std::chrono::steady_clock::now();
        net.forward(blobs, names);
        out.run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        for (std::size_t i = 0; i < firsts.size() && i < blobs.size(); ++i) out.run.outputs[firsts[i]->top] = from_mat(blobs[i]);
        for (const auto* r : others) {
            std::vector<cv::Mat> all;
            net.forward(all, known(*r));
            if (r->index < all.size()) out.run.outputs[r->top] = from_mat(all[r->index]);
        }
    } catch (const cv::Exception& e) {
        out.failure = e.what();
        if (out.failure.empty()) out.failure = "an OpenCV exception without a message";
    }
    return out;
}

constexpr opencv_module_api api{.version = opencv_module_version, .run = &run};

}  // namespace
}  // namespace onnxstream::caffe

extern "C" __attribute__((visibility("default"))) const onnxstream::caffe::opencv_module_api* onnxstream_opencv_module() {
    return &onnxstream::caffe::api;
}
