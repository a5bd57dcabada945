#include "quantize_blocks.hpp"

#include <onnxstream/graph/tensor_reader.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

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
        const auto steps = static_cast<float>(range.high - range.low);
        // A block spanning more than FLT_MAX (from near -FLT_MAX to near +FLT_MAX) would
        // overflow hi - lo: each end is divided first there (elsewhere the bytes stay as they were).
        const float span = hi - lo;
        p.scale = round(std::isfinite(span) ? span / steps : hi / steps - lo / steps);
    }
    // An all-zero block has no scale to speak of: 1 keeps every value exactly 0, where 0
    // would divide by zero and a runtime would dequantize garbage.
    if (!(p.scale > 0.0F) || !std::isfinite(p.scale)) p.scale = 1.0F;
    if (!symmetric) {
        const float lo = std::min(low, 0.0F);
        const float shifted = lo / p.scale;
        const float zero = std::nearbyint(static_cast<float>(range.low) - shifted);
        // Clamped before the conversion: a float past int's range (or NaN) has no int value.
        if (!(zero > static_cast<float>(range.low))) p.zero_point = range.low;
        else if (zero >= static_cast<float>(range.high)) p.zero_point = range.high;
        else p.zero_point = static_cast<int>(zero);
    }
    return p;
}

void value_packer::add_all(std::span<const std::int8_t> levels) {
    if (bits_ == 8) {
        const std::size_t at = out_->size();
        out_->resize(at + levels.size());
        if (!levels.empty()) std::memcpy(out_->data() + at, levels.data(), levels.size());  // int8 as its two's complement byte
        return;
    }
    std::size_t i = 0;
    if (pending_ && !levels.empty()) add(levels[i++]);
    const std::size_t pairs = (levels.size() - i) / 2;
    const std::size_t at = out_->size();
    out_->resize(at + pairs);
    for (std::size_t k = 0; k < pairs; ++k, i += 2) {
        const auto low = static_cast<unsigned>(levels[i]) & 0x0FU;
        const auto high = static_cast<unsigned>(levels[i + 1]) & 0x0FU;
        (*out_)[at + k] = static_cast<std::byte>(low | (high << 4U));
    }
    if (i < levels.size()) add(levels[i]);
}

void value_packer::finish() {
    if (!pending_) return;
    out_->push_back(static_cast<std::byte>(low_));
    pending_ = false;
}

}  // namespace onnxstream::ops::detail
