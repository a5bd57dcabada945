#include "layer_mapper.hpp"

namespace onnxstream::caffe::detail {

std::optional<refused> mapper::read_spatial(graph::node_id n, const shape& in, const shape& kernel, std::vector<spatial>& out) {
    const auto rank = kernel.size();
    const auto strides = attr_ints(n, "strides").value_or(std::vector<std::int64_t>(rank, 1));
    const auto dilations = attr_ints(n, "dilations").value_or(std::vector<std::int64_t>(rank, 1));
    auto pads = attr_ints(n, "pads").value_or(std::vector<std::int64_t>(2 * rank, 0));
    if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank)
        return refused{"its strides, dilations or pads do not match the kernel's rank", "check the model with onnx.checker"};
    const auto auto_pad = attr_text(n, "auto_pad", "NOTSET");
    out.assign(rank, {});
    for (std::size_t i = 0; i < rank; ++i) {
        auto& s = out[i];
        s.kernel = kernel[i];
        s.stride = strides[i];
        s.dilation = dilations[i];
        if (s.stride < 1 || s.dilation < 1 || s.kernel < 1)
            return refused{"a stride, dilation or kernel below 1", "fix the model"};
        // Bounded before any arithmetic: sizes then stay far from 64 bits.
        if (s.stride > max_blob_dimension || s.dilation > max_blob_dimension || s.kernel > max_blob_dimension)
            return refused{"a stride, dilation or kernel past 2^31 - 1, more than a Caffe field or blob holds", "fix the model"};
        if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            const auto h = in[2 + i];
            const auto target = (h + s.stride - 1) / s.stride;
            const auto total = std::max<std::int64_t>(0, (target - 1) * s.stride + (s.kernel - 1) * s.dilation + 1 - h);
            s.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            s.pad_end = total - s.pad_begin;
        } else if (auto_pad == "VALID") {
            s.pad_begin = s.pad_end = 0;
        } else {
            s.pad_begin = pads[i];
            s.pad_end = pads[rank + i];
        }
        if (s.pad_begin < 0 || s.pad_end < 0) return refused{"negative pads", "fix the model"};
        if (s.pad_begin > max_blob_dimension || s.pad_end > max_blob_dimension)
            return refused{"pads past 2^31 - 1, more than Caffe's pad fields hold", "fix the model"};
    }
    return std::nullopt;
}

mapper::outcome mapper::conv(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto w = constant_at(n, 1);
    if (!w) return refuse("its weight is not a constant", "Caffe keeps weights in the .caffemodel; export with constant weights");
    if (!is_float_type(w->data_type)) return refuse("its weight is not a floating-point tensor", "dequantize the model first");
    const auto& in = in_shape(n, 0);
    if (in.size() != 4 || w->dims.size() != 4)
        return refuse("only 2-D convolutions (NCHW input, 4-D weight) have a Caffe layer",
                      "reshape 1-D/3-D convolutions to 2-D in the source model");
    const auto group = attr_int(n, "group", 1);
    const shape kernel{w->dims[2], w->dims[3]};
    std::vector<spatial> sp;
    if (auto r = read_spatial(n, in, kernel, sp)) return std::optional<refused>(*r);
    const auto channels_out = w->dims[0];
    if (group < 1 || in[1] != checked_multiply(w->dims[1], group) || channels_out % group != 0)
        return refuse("its weight shape does not match the input channels and group", "check the model with onnx.checker");
    std::optional<graph::constant> bias;
    if (has_input(n, 2)) {
        bias = constant_at(n, 2);
        if (!bias) return refuse("its bias is not a constant", "export with a constant bias");
    }
    // Padding: Caffe pads both sides alike. Pad by p = begin + m*stride so windows
    // start where ONNX's do (shifted by m rows), then slice off the first m and any
    // extra trailing outputs: exact, since padding is zeros either way.
    shape onnx_out{in[0], channels_out, 0, 0};
    std::array<std::int64_t, 2> pad{}, skip{}, caffe_size{};
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& s = sp[i];
        onnx_out[2 + i] = onnx_pool_size(in[2 + i], s.kernel, s.stride, s.pad_begin, s.pad_end, s.dilation, false);
        if (onnx_out[2 + i] < 1) return refuse("its output would be empty", "check the input shape");
        // size(p) - m grows by one per step once windows fit, so the first m that
        // reaches ONNX's size is at least (pad_end - pad_begin) / stride - 4 (rounding and
        // the dropped last window move it by at most a few).
        for (auto m = std::max<std::int64_t>(0, (s.pad_end - s.pad_begin) / s.stride - 4);; ++m) {
            const auto p = s.pad_begin + m * s.stride;
            const auto size = onnx_pool_size(in[2 + i], s.kernel, s.stride, p, p, s.dilation, false);
            if (size - m >= onnx_out[2 + i]) {
                pad[i] = p;
                skip[i] = m;
                caffe_size[i] = size;
                break;
            }
        }
    }
    const bool exact = caffe_size[0] == onnx_out[2] && caffe_size[1] == onnx_out[3];
    const auto out = out_name(n);
    const auto conv_top = exact ? out : fresh_blob(out + "/padded");
    const conv_params c{
        channels_out, group, pad, {kernel[0], kernel[1]}, {sp[0].stride, sp[1].stride}, {sp[0].dilation, sp[1].dilation}};
    ONNXSTREAM_TRY(convolution_layer("Convolution", in_name(n, 0), conv_top, c, *w, bias));
    shapes_[conv_top] = {in[0], channels_out, caffe_size[0], caffe_size[1]};
    if (!exact) {
        decide("padding", "asymmetric pads " + std::to_string(sp[0].pad_begin) + "," + std::to_string(sp[1].pad_begin) + "," +
                              std::to_string(sp[0].pad_end) + "," + std::to_string(sp[1].pad_end) +
                              " made exact: symmetric pads " + std::to_string(pad[0]) + "," + std::to_string(pad[1]) +
                              " and a Slice to " + join(onnx_out));
        trim(conv_top, out, skip, {onnx_out[2], onnx_out[3]}, "/trim");
    }
    return ok();
}

result<void> mapper::convolution_layer(const std::string& type, const std::string& bottom, const std::string& top,
                                       const conv_params& c, const graph::constant& w,
                                       const std::optional<graph::constant>& bias) {
    auto& l = add_layer(type, {bottom}, {top});
    std::vector<param> p{param::integer("num_output", c.channels_out),
                         param::flag("bias_term", bias.has_value()),
                         param::integer("pad_h", c.pad[0]),
                         param::integer("pad_w", c.pad[1]),
                         param::integer("kernel_h", c.kernel[0]),
                         param::integer("kernel_w", c.kernel[1]),
                         param::integer("stride_h", c.stride[0]),
                         param::integer("stride_w", c.stride[1])};
    if (c.group != 1) p.push_back(param::integer("group", c.group));
    if (c.dilation[0] != 1 || c.dilation[1] != 1) {
        p.push_back(param::integer("dilation", c.dilation[0]));
        p.push_back(param::integer("dilation", c.dilation[1]));
    }
    l.params.push_back(param::message("convolution_param", std::move(p)));
    ONNXSTREAM_ASSIGN(auto wb, constant_blob(w, w.dims));
    l.blobs.push_back(std::move(wb));
    if (bias) {
        ONNXSTREAM_ASSIGN(auto bb, constant_blob(*bias, {c.channels_out}));
        l.blobs.push_back(std::move(bb));
    }
    return {};
}

void mapper::trim(const std::string& in, const std::string& out, std::array<std::int64_t, 2> skip,
                  std::array<std::int64_t, 2> size, const std::string& suffix) {
    const auto s = shapes_.at(in);
    const bool rows = s[2] != size[0];
    const bool cols = s[3] != size[1];
    if (rows && cols) {
        const auto mid = fresh_blob(out + "/rows");
        crop(in, 2, skip[0], size[0], mid, suffix + "_h");
        crop(mid, 3, skip[1], size[1], out, suffix + "_w");
    } else if (rows) {
        crop(in, 2, skip[0], size[0], out, suffix + "_h");
    } else {
        crop(in, 3, skip[1], size[1], out, suffix + "_w");
    }
}

mapper::outcome mapper::conv_transpose(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto w = constant_at(n, 1);
    if (!w || !is_float_type(w->data_type))
        return refuse("its weight is not a floating-point constant", "export with constant weights");
    const auto& in = in_shape(n, 0);
    if (in.size() != 4 || w->dims.size() != 4)
        return refuse("only 2-D transposed convolutions have a Caffe layer", "reshape to 2-D in the source model");
    const auto group = attr_int(n, "group", 1);
    if (group < 1 || w->dims[0] != in[1] || in[1] % group != 0)
        return refuse("its weight does not match its input channels", "check the model with onnx.checker");
    std::vector<spatial> sp;
    if (auto r = read_spatial(n, in, {w->dims[2], w->dims[3]}, sp)) return std::optional<refused>(*r);
    if (attr_text(n, "auto_pad", "NOTSET") != "NOTSET")
        return refuse("auto_pad on ConvTranspose is not exported", "give explicit pads");
    const auto output_padding = attr_ints(n, "output_padding").value_or(std::vector<std::int64_t>{0, 0});
    for (const auto op : output_padding)
        if (op != 0)
            return refuse("output_padding changes the output size and Deconvolution has none", "export without output_padding");
    for (const auto& s : sp)
        if (s.pad_begin != s.pad_end) return refuse("asymmetric pads have no Deconvolution form", "use symmetric pads");
    const auto channels_out = checked_multiply(w->dims[1], group).value_or(-1);
    shape out_shape{in[0], channels_out, 0, 0};
    for (std::size_t i = 0; i < 2; ++i)
        out_shape[2 + i] = sp[i].stride * (in[2 + i] - 1) + (sp[i].kernel - 1) * sp[i].dilation + 1 - 2 * sp[i].pad_begin;
    if (const auto os = attr_ints(n, "output_shape"); os && !os->empty()) {
        if (os->size() != 2 || (*os)[0] != out_shape[2] || (*os)[1] != out_shape[3])
            return refuse("output_shape asks for a size Deconvolution cannot produce", "export without output_shape");
    }
    std::optional<graph::constant> bias;
    if (has_input(n, 2)) {
        bias = constant_at(n, 2);
        if (!bias) return refuse("its bias is not a constant", "export with a constant bias");
    }
    const conv_params c{channels_out,
                        group,
                        {sp[0].pad_begin, sp[1].pad_begin},
                        {sp[0].kernel, sp[1].kernel},
                        {sp[0].stride, sp[1].stride},
                        {sp[0].dilation, sp[1].dilation}};
    ONNXSTREAM_TRY(convolution_layer("Deconvolution", in_name(n, 0), out_name(n), c, *w, bias));
    shapes_[out_name(n)] = out_shape;
    return ok();
}

std::optional<mapper::pool_choice> mapper::pool_padding(const shape& in, const std::vector<spatial>& sp,
                                                        const shape& onnx_out) const {
    std::optional<pool_choice> best;
    std::vector<bool> modes{true};
    if (options_.target == dialect::opencv) modes = {true, false};
    for (const bool c : modes) {
        pool_choice ch;
        ch.ceil = c;
        bool found = true;
        for (std::size_t i = 0; i < 2 && found; ++i) {
            const auto& s = sp[i];
            found = false;
            for (auto m = std::max<std::int64_t>(0, (s.pad_end - s.pad_begin) / s.stride - 4);
                 s.pad_begin + m * s.stride < s.kernel; ++m) {
                const auto p = s.pad_begin + m * s.stride;
                const auto size = caffe_pool_size(in[2 + i], s.kernel, s.stride, p, c);
                if (size - m >= onnx_out[2 + i]) {
                    ch.pad[i] = p;
                    ch.skip[i] = m;
                    ch.size[i] = size;
                    found = true;
                    break;
                }
            }
        }
        if (!found) continue;
        const bool exact = ch.size[0] == onnx_out[2] && ch.size[1] == onnx_out[3];
        const bool best_exact = best && best->size[0] == onnx_out[2] && best->size[1] == onnx_out[3];
        if (!best || (exact && !best_exact)) best = ch;
    }
    return best;
}

bool mapper::average_correction(const shape& in, const std::vector<spatial>& sp, const shape& onnx_out, const pool_choice& best,
                                bool include_pad, std::vector<float>& correction) {
    std::array<std::vector<double>, 2> ratio;
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& s = sp[i];
        const auto h = in[2 + i];
        for (std::int64_t j = 0; j < onnx_out[2 + i]; ++j) {
            const auto cs = (j + best.skip[i]) * s.stride - best.pad[i];
            const auto caffe_div = std::min(cs + s.kernel, h + best.pad[i]) - cs;
            const auto os = j * s.stride - s.pad_begin;
            const auto onnx_div = include_pad ? std::min(os + s.kernel, h + s.pad_end) - os
                                              : std::min(os + s.kernel, h) - std::max<std::int64_t>(os, 0);
            ratio[i].push_back(static_cast<double>(caffe_div) / static_cast<double>(onnx_div));
        }
    }
    bool corrected = false;
    for (const auto a : ratio[0])
        for (const auto b : ratio[1]) {
            correction.push_back(static_cast<float>(a * b));
            if (a * b != 1.0) corrected = true;
        }
    return corrected;
}

mapper::outcome mapper::pool(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const bool is_max = model_.nodes[n].op_type() == "MaxPool";
    const auto& in = in_shape(n, 0);
    if (in.size() != 4) return refuse("only 2-D pooling (NCHW input) has a Caffe layer", "reshape to NCHW in the source model");
    const auto kernel = attr_ints(n, "kernel_shape").value_or(std::vector<std::int64_t>{});
    if (kernel.size() != 2) return refuse("its kernel_shape is not 2-D", "check the model with onnx.checker");
    std::vector<spatial> sp;
    if (auto r = read_spatial(n, in, kernel, sp)) return std::optional<refused>(*r);
    for (const auto& s : sp)
        if (s.dilation != 1) return refuse("pooling with dilations has no Caffe form", "export without pooling dilations");
    if (is_max && model_.nodes[n].outputs.size() > 1 && index_.output(n, 1) != none && !index_.uses(index_.output(n, 1)).empty())
        return refuse("its Indices output is used", "Caffe's Pooling has no ONNX-style indices");
    const bool ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
    const bool include_pad = attr_int(n, "count_include_pad", 0) != 0;
    shape onnx_out{in[0], in[1], 0, 0};
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& s = sp[i];
        onnx_out[2 + i] = onnx_pool_size(in[2 + i], s.kernel, s.stride, s.pad_begin, s.pad_end, 1, ceil_mode);
        if (onnx_out[2 + i] < 1) return refuse("its output would be empty", "check the input shape");
    }
    if (auto bad = blob_shape_problem(onnx_out))
        return refuse("its output cannot be a Caffe blob: " + *bad, "check the input shape");
    if (static_cast<std::uint64_t>(onnx_out[2] * onnx_out[3]) > options_.max_computed_elements)
        return refuse("its average-divisor map would have " + std::to_string(onnx_out[2] * onnx_out[3]) + " values, more than " +
                          std::to_string(options_.max_computed_elements) + " computed weights the export holds",
                      "export with a smaller input shape");
    const auto best = pool_padding(in, sp, onnx_out);
    if (!best)
        return refuse("no Caffe padding reproduces its windows (padding at the end exceeds what Caffe allows)",
                      "export with ceil_mode, or with symmetric pads");
    std::vector<float> correction;
    const bool corrected = !is_max && average_correction(in, sp, onnx_out, *best, include_pad, correction);
    const bool exact = best->size[0] == onnx_out[2] && best->size[1] == onnx_out[3];
    const auto out = out_name(n);
    const auto pool_top = exact && !corrected ? out : fresh_blob(out + "/caffe_pool");
    auto& l = add_layer("Pooling", {in_name(n, 0)}, {pool_top});
    std::vector<param> p{param::word("pool", is_max ? "MAX" : "AVE"), param::integer("kernel_h", sp[0].kernel),
                         param::integer("kernel_w", sp[1].kernel),    param::integer("stride_h", sp[0].stride),
                         param::integer("stride_w", sp[1].stride),    param::integer("pad_h", best->pad[0]),
                         param::integer("pad_w", best->pad[1])};
    if (!best->ceil) p.push_back(param::flag("ceil_mode", false));
    l.params.push_back(param::message("pooling_param", std::move(p)));
    shapes_[pool_top] = {in[0], in[1], best->size[0], best->size[1]};
    if (!best->ceil) decide("pooling", "floor rounding kept with ceil_mode: false (OpenCV's Caffe)");
    std::string current = pool_top;
    if (!exact) {
        const auto trimmed = corrected ? fresh_blob(out + "/trimmed") : out;
        decide("pooling", "Caffe output " + std::to_string(best->size[0]) + "x" + std::to_string(best->size[1]) +
                              " sliced to ONNX's " + std::to_string(onnx_out[2]) + "x" + std::to_string(onnx_out[3]));
        trim(pool_top, trimmed, best->skip, {onnx_out[2], onnx_out[3]}, "/trim");
        current = trimmed;
    }
    if (corrected) {
        auto& s = add_layer("Scale", {current}, {out}, "/divisor");
        s.params.push_back(param::message(
            "scale_param", {param::integer("axis", 2), param::integer("num_axes", 2), param::flag("bias_term", false)}));
        ONNXSTREAM_ASSIGN(auto b, values_blob(std::move(correction), {onnx_out[2], onnx_out[3]}));
        s.blobs.push_back(std::move(b));
        shapes_[out] = onnx_out;
        decide("pooling",
               std::string("average divisors corrected with a Scale map (count_include_pad=") + (include_pad ? "1" : "0") + ")");
    }
    return ok();
}

mapper::outcome mapper::global_pool(graph::node_id n, bool is_max) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& in = in_shape(n, 0);
    if (in.size() != 4) return refuse("only NCHW global pooling has a Caffe layer", "reshape to NCHW");
    auto& l = add_layer("Pooling", {in_name(n, 0)}, {out_name(n)});
    // `pool` must be explicit: OpenCV cannot tell the type from global_pooling alone.
    l.params.push_back(
        param::message("pooling_param", {param::word("pool", is_max ? "MAX" : "AVE"), param::flag("global_pooling", true)}));
    shapes_[out_name(n)] = {in[0], in[1], 1, 1};
    return ok();
}

mapper::outcome mapper::reduce_mean(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& in = in_shape(n, 0);
    auto axes = attr_ints(n, "axes");
    if (!axes && has_input(n, 1)) {
        const auto c = constant_at(n, 1);
        if (!c) return refuse("its axes are not constant", "export with constant axes");
        ONNXSTREAM_ASSIGN(const auto v, values(*c));
        axes.emplace();
        for (const auto x : v) axes->push_back(saturated_int64(x));
    }
    if (!axes || in.size() != 4)
        return refuse("only a mean over H and W of an NCHW tensor has a Caffe layer", "use GlobalAveragePool");
    std::set<std::int64_t> set;
    for (auto a : *axes) set.insert(a < 0 ? a + 4 : a);
    if (set != std::set<std::int64_t>{2, 3})
        return refuse("only a mean over H and W of an NCHW tensor has a Caffe layer", "use GlobalAveragePool");
    const bool keep = attr_int(n, "keepdims", 1) != 0;
    const auto out = out_name(n);
    const auto top = keep ? out : fresh_blob(out + "/pooled");
    auto& l = add_layer("Pooling", {in_name(n, 0)}, {top});
    l.params.push_back(param::message("pooling_param", {param::word("pool", "AVE"), param::flag("global_pooling", true)}));
    shapes_[top] = {in[0], in[1], 1, 1};
    if (!keep) {
        auto& f = add_layer("Flatten", {top}, {out}, "/flatten");
        f.params.push_back(param::message("flatten_param", {param::integer("axis", 1)}));
        shapes_[out] = {in[0], in[1]};
    }
    return ok();
}

mapper::outcome mapper::resize(graph::node_id n) {
    if (!computed_input(n, 0))
        return refuse("its input is a constant",
                      "the export folds constants itself and could not fold this one: compute it in the source model");
    const auto& nd = model_.nodes[n];
    const auto& in = in_shape(n, 0);
    const auto mode = attr_text(n, "mode", "nearest");
    if (mode != "nearest")
        return refuse("Resize " + mode + " has no exact Caffe layer (Caffe's bilinear Deconvolution differs at the borders)",
                      "use nearest with an integer scale, or resize outside the network");
    if (in.size() != 4) return refuse("only NCHW resizing is exported", "reshape to NCHW");
    std::vector<double> scales;
    const auto opset = model_.opset("");
    if (nd.op_type() == "Upsample" && opset < 9) {
        if (const auto a = model_.attribute(n, "scales")) scales = a->floats;
    } else {
        const std::size_t scales_slot = nd.op_type() == "Upsample" || opset < 11 ? 1 : 2;
        if (has_input(n, scales_slot)) {
            const auto c = constant_at(n, scales_slot);
            if (!c) return refuse("its scales are computed", "export with constant scales");
            ONNXSTREAM_ASSIGN(scales, values(*c));
        }
        if (scales.empty() && nd.op_type() == "Resize" && has_input(n, 3)) {
            const auto c = constant_at(n, 3);
            if (!c) return refuse("its sizes are computed", "export with constant sizes");
            ONNXSTREAM_ASSIGN(const auto sizes, values(*c));
            if (sizes.size() != 4) return refuse("its sizes are not 4-D", "check the model");
            for (std::size_t i = 0; i < 4; ++i) scales.push_back(sizes[i] / static_cast<double>(in[i]));
        }
    }
    if (scales.size() != 4 || scales[0] != 1.0 || scales[1] != 1.0)
        return refuse("it does not scale H and W only", "resize H and W only");
    std::array<std::int64_t, 2> factor{};
    for (std::size_t i = 0; i < 2; ++i) {
        const auto s = scales[2 + i];
        if (!(s >= 1.0) || std::floor(s) != s)
            return refuse("a scale that is not a whole number has no exact Caffe form", "use integer scales");
        if (s > static_cast<double>(max_blob_dimension))
            return refuse("a scale past 2^31 - 1 has no Caffe form", "check the model");
        factor[i] = static_cast<std::int64_t>(s);
    }
    if (nd.op_type() == "Resize" && opset >= 11) {
        const auto transform = attr_text(n, "coordinate_transformation_mode", "half_pixel");
        const auto nearest = attr_text(n, "nearest_mode", "round_prefer_floor");
        const bool repeats = (transform == "asymmetric" && nearest == "floor") ||
                             ((transform == "half_pixel" || transform == "pytorch_half_pixel") &&
                              (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil"));
        if (!repeats)
            return refuse(
                "coordinate_transformation_mode " + transform + " with nearest_mode " + nearest + " does not repeat each pixel",
                "use asymmetric + floor, or half_pixel + round_prefer_floor");
    }
    // Nearest upsampling by whole factors = a depthwise Deconvolution of ones with
    // kernel = stride = factor: every output pixel gets exactly one input pixel.
    const auto channels = in[1];
    const shape out_shape{in[0], in[1], in[2] * factor[0], in[3] * factor[1]};
    if (auto bad = blob_shape_problem(out_shape)) return refuse("its output cannot be a Caffe blob: " + *bad, "check the scales");
    // channels * factor^2 <= the output's element count, which fits 31 bits.
    if (static_cast<std::uint64_t>(channels * factor[0] * factor[1]) > options_.max_computed_elements)
        return refuse("its Deconvolution weights would have more values than the export holds", "check the scales");
    auto& l = add_layer("Deconvolution", {in_name(n, 0)}, {out_name(n)});
    l.params.push_back(param::message(
        "convolution_param",
        {param::integer("num_output", channels), param::flag("bias_term", false), param::integer("kernel_h", factor[0]),
         param::integer("kernel_w", factor[1]), param::integer("stride_h", factor[0]), param::integer("stride_w", factor[1]),
         param::integer("group", channels)}));
    ONNXSTREAM_ASSIGN(auto ones, values_blob(std::vector<float>(static_cast<std::size_t>(channels * factor[0] * factor[1]), 1.0F),
                                             {channels, 1, factor[0], factor[1]}));
    l.blobs.push_back(std::move(ones));
    shapes_[out_name(n)] = out_shape;
    decide("resize",
           "nearest x" + std::to_string(factor[0]) + "," + std::to_string(factor[1]) + " as a depthwise Deconvolution of ones");
    return ok();
}

}  // namespace onnxstream::caffe::detail
