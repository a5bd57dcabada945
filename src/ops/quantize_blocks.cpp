#include "quantize_blocks.hpp"

#include <onnxstream/graph/tensor_reader.hpp>

#include <algorithm>
#include <cmath>

namespace onnxstream::ops::detail {

quantized_range range_of(quantized_type type) noexcept {
    switch (type) {
        case quantized_type::int8: return {-128, 127};
        case quantized_type::int4: return {-8, 7};
        case quantized_type::uint4: return {0, 15};
    }
    return {};
}

unsigned bits_of(quantized_type type) noexcept { return type == quantized_type::int8 ? 8 : 4; }

bool has_zero_point(quantized_type type, bool symmetric) noexcept { return !symmetric || type == quantized_type::uint4; }

float keep_float32(float scale) noexcept { return scale; }

float round_to_float16(float scale) noexcept {
    return static_cast<float>(graph::half_to_double(graph::double_to_half(static_cast<double>(scale))));
}

block_parameters parameters_of(float low, float high, float largest, quantized_type type, bool symmetric,
                               scale_rounding round) noexcept {
    const auto range = range_of(type);
    block_parameters p;
    if (symmetric) {
        // The largest magnitude maps to the largest positive level (127 or 7), so that
        // -max and +max both fit; uint4 is centred on 8.
        const float levels = type == quantized_type::int8 ? 127.0F : 7.0F;
        p.scale = round(largest / levels);
        p.zero_point = type == quantized_type::uint4 ? 8 : 0;
    } else {
        // The range always holds 0, so that 0 is exact (padding, ReLU'd weights).
        const float lo = std::min(low, 0.0F);
        const float hi = std::max(high, 0.0F);
        p.scale = round((hi - lo) / static_cast<float>(range.high - range.low));
    }
    // An all-zero block has no scale to speak of: 1 keeps every value exactly 0, where 0
    // would divide by zero and a runtime would dequantize garbage.
    if (!(p.scale > 0.0F) || !std::isfinite(p.scale)) p.scale = 1.0F;
    if (!symmetric) {
        const float lo = std::min(low, 0.0F);
        const float shifted = lo / p.scale;
        const float zero = static_cast<float>(range.low) - shifted;
        p.zero_point = std::clamp(static_cast<int>(std::nearbyint(zero)), range.low, range.high);
    }
    return p;
}

int quantize_value(float w, block_parameters p, quantized_range range) noexcept {
    if (std::isnan(w)) return p.zero_point;
    if (std::isinf(w)) return w > 0 ? range.high : range.low;
    const float ratio = w / p.scale;
    // Clamp before the conversion to int: a huge ratio would not fit.
    const float rounded = std::nearbyint(ratio);
    const float shifted = std::clamp(rounded + static_cast<float>(p.zero_point), static_cast<float>(range.low),
                                     static_cast<float>(range.high));
    return static_cast<int>(shifted);
}

void value_packer::add(int q) {
    if (bits_ == 8) {
        out_->push_back(static_cast<std::byte>(static_cast<std::uint8_t>(static_cast<std::int8_t>(q))));
        return;
    }
    const auto nibble = static_cast<unsigned>(q) & 0x0FU;
    if (!pending_) {
        low_ = nibble;
        pending_ = true;
        return;
    }
    out_->push_back(static_cast<std::byte>(low_ | (nibble << 4U)));
    pending_ = false;
}

void value_packer::finish() {
    if (!pending_) return;
    out_->push_back(static_cast<std::byte>(low_));
    pending_ = false;
}

}  // namespace onnxstream::ops::detail
