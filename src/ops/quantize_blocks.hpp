// The arithmetic of block quantization (quantize.hpp): a block's scale and zero point,
// one value's quantized integer, and the packing of 4-bit values two per byte (low
// nibble first, as ONNX lays out INT4/UINT4). Pure functions, so that tests can hold
// them to a numpy reference of the same rule. Private to the ops layer.
#pragma once

#include <onnxstream/ops/quantize.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace onnxstream::ops::detail {

// quantize_value rounds by adding and subtracting 1.5 * 2^23: float arithmetic must be done
// in float, not in a wider register.
static_assert(FLT_EVAL_METHOD == 0);

struct quantized_range {
    int low = 0;
    int high = 0;
};

/// The integers `type` holds: [-128, 127], [-8, 7] or [0, 15].
[[nodiscard]] quantized_range range_of(quantized_type type) noexcept;
/// Bits per quantized value: 8 or 4.
[[nodiscard]] unsigned bits_of(quantized_type type) noexcept;
/// Whether a zero point is written: asymmetric, or uint4 (whose symmetric zero is 8).
[[nodiscard]] bool has_zero_point(quantized_type type, bool symmetric) noexcept;

/// Rounds a float32 scale to the type it is stored in (the weight's): identity for
/// float32, round to nearest even for float16.
using scale_rounding = float (*)(float) noexcept;
[[nodiscard]] float keep_float32(float scale) noexcept;
[[nodiscard]] float round_to_float16(float scale) noexcept;

struct block_parameters {
    float scale = 1;  // as stored
    int zero_point = 0;
};

/// The scale and zero point of one block. `low`/`high` are its smallest and largest
/// finite values, `largest` its largest finite magnitude. A scale that would be 0 (or not
/// finite) is 1.
[[nodiscard]] block_parameters parameters_of(float low, float high, float largest, quantized_type type, bool symmetric,
                                             scale_rounding round) noexcept;

/// clamp(round_half_even(w / scale) + zero_point); infinities go to the ends, NaN to the zero point.
/// Inline: it runs once per weight element.
[[nodiscard]] inline int quantize_value(float w, block_parameters p, quantized_range range) noexcept {
    if (std::isnan(w)) return p.zero_point;
    // Clamped first, well outside every range (so a huge ratio or an infinity fits), then
    // rounded to nearest even by the float addition itself: for |x| < 2^22, x + 1.5 * 2^23
    // has no bits below the units, and the default rounding mode rounds ties to even. A
    // libm call (nearbyint without SSE4.1) cost a third of quantize's time.
    const float ratio = std::clamp(w / p.scale, -512.0F, 512.0F);
    constexpr float shift = 12582912.0F;  // 1.5 * 2^23
    const float rounded = (ratio + shift) - shift;
    const float shifted = std::clamp(rounded + static_cast<float>(p.zero_point), static_cast<float>(range.low),
                                     static_cast<float>(range.high));
    return static_cast<int>(shifted);
}

/// Appends quantized values to `out`: a byte each for 8 bits, two to a byte for 4 (the
/// first in the low nibble). `finish` writes a last half-filled byte.
class value_packer {
public:
    value_packer(unsigned bits, std::vector<std::byte>& out) : bits_(bits), out_(&out) {}
    void add(int q) {
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
    /// add() of each level in turn, without a call per value.
    void add_all(std::span<const std::int8_t> levels);
    void finish();

private:
    unsigned bits_;
    std::vector<std::byte>* out_;
    bool pending_ = false;
    unsigned low_ = 0;
};

/// Bytes `count` values of `bits` take.
[[nodiscard]] constexpr std::uint64_t packed_bytes(std::uint64_t count, unsigned bits) noexcept {
    return bits == 8 ? count : (count + 1) / 2;
}

}  // namespace onnxstream::ops::detail
