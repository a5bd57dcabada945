#include <onnxstream/graph/tensor_reader.hpp>

#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/typed_data.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace onnxstream::graph {

using onnx::data_type;

namespace {

std::uint64_t load_le(std::span<const std::byte> raw, std::uint64_t offset, std::uint32_t width) noexcept {
    std::uint64_t bits = 0;
    for (std::uint32_t i = 0; i < width; ++i)
        bits |= static_cast<std::uint64_t>(raw[static_cast<std::size_t>(offset + i)]) << (8 * i);
    return bits;
}

void store_le(std::span<std::byte> raw, std::uint64_t offset, std::uint32_t width, std::uint64_t bits) noexcept {
    for (std::uint32_t i = 0; i < width; ++i)
        raw[static_cast<std::size_t>(offset + i)] = static_cast<std::byte>((bits >> (8 * i)) & 0xFFU);
}

template <class Signed, class Unsigned>
double as_signed(std::uint64_t bits) {
    return static_cast<double>(std::bit_cast<Signed>(static_cast<Unsigned>(bits)));
}

}  // namespace

std::uint32_t element_size(std::int32_t type) noexcept {
    switch (static_cast<data_type>(type)) {
        case data_type::float32:
        case data_type::int32:
        case data_type::uint32: return 4;
        case data_type::float64:
        case data_type::int64:
        case data_type::uint64: return 8;
        case data_type::float16:
        case data_type::bfloat16:
        case data_type::int16:
        case data_type::uint16: return 2;
        case data_type::int8:
        case data_type::uint8:
        case data_type::boolean: return 1;
        default: return 0;
    }
}

bool is_encodable_float(std::int32_t type) noexcept {
    const auto t = static_cast<data_type>(type);
    return t == data_type::float32 || t == data_type::float16 || t == data_type::float64;
}

double half_to_double(std::uint16_t bits) noexcept {
    const int sign = (bits >> 15) & 1;
    const int exponent = (bits >> 10) & 0x1F;
    const int mantissa = bits & 0x3FF;
    double value = 0;
    if (exponent == 0) value = std::ldexp(static_cast<double>(mantissa), -24);
    else if (exponent == 31)
        value = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    else value = std::ldexp(static_cast<double>(mantissa + 1024), exponent - 25);
    return sign ? -value : value;
}

std::uint16_t double_to_half(double value) noexcept {
    const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
    if (std::isnan(value)) return static_cast<std::uint16_t>(sign | 0x7E00);
    const double magnitude = std::fabs(value);
    if (magnitude >= 65520.0) return static_cast<std::uint16_t>(sign | 0x7C00);  // rounds to infinity
    // Values are multiples of 2^(e-10) for normals (e >= -14) and of 2^-24 for subnormals:
    // scale to an integer count of that unit and round once, to nearest even.
    int exponent = 0;
    (void)std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
    const int unit_exponent = std::max(exponent - 1, -14) - 10;
    const double units = std::nearbyint(std::ldexp(magnitude, -unit_exponent));  // default mode: ties to even
    auto count = static_cast<std::uint32_t>(units);
    int e = unit_exponent + 10;  // the exponent of the leading bit if count has 11 bits
    if (count >= 2048) {         // rounding carried into a new bit
        count >>= 1;
        ++e;
    }
    if (count < 1024) return static_cast<std::uint16_t>(sign | count);  // subnormal (or zero)
    if (e > 15) return static_cast<std::uint16_t>(sign | 0x7C00);
    return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(e + 15) << 10) | (count - 1024));
}

std::optional<double> decode_element(std::int32_t type, std::span<const std::byte> raw, std::uint64_t index) noexcept {
    const auto width = element_size(type);
    if (width == 0 || (index + 1) * width > raw.size()) return std::nullopt;
    const auto bits = load_le(raw, index * width, width);
    switch (static_cast<data_type>(type)) {
        case data_type::float32: return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
        case data_type::float64: return std::bit_cast<double>(bits);
        case data_type::float16: return half_to_double(static_cast<std::uint16_t>(bits));
        case data_type::bfloat16: return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits << 16)));
        case data_type::int8: return as_signed<std::int8_t, std::uint8_t>(bits);
        case data_type::int16: return as_signed<std::int16_t, std::uint16_t>(bits);
        case data_type::int32: return as_signed<std::int32_t, std::uint32_t>(bits);
        case data_type::int64: return as_signed<std::int64_t, std::uint64_t>(bits);
        case data_type::uint8:
        case data_type::uint16:
        case data_type::uint32:
        case data_type::uint64: return static_cast<double>(bits);
        case data_type::boolean: return bits != 0 ? 1.0 : 0.0;
        default: return std::nullopt;
    }
}

bool encode_element(std::int32_t type, double value, std::span<std::byte> raw, std::uint64_t index) noexcept {
    const auto width = element_size(type);
    if (width == 0 || (index + 1) * width > raw.size()) return false;
    switch (static_cast<data_type>(type)) {
        case data_type::float32:
            store_le(raw, index * 4, 4, std::bit_cast<std::uint32_t>(static_cast<float>(value)));
            return true;
        case data_type::float64: store_le(raw, index * 8, 8, std::bit_cast<std::uint64_t>(value)); return true;
        case data_type::float16: store_le(raw, index * 2, 2, double_to_half(value)); return true;
        default: return false;
    }
}

std::uint64_t channel_of(channel_layout layout, std::span<const std::int64_t> dims, std::uint64_t group,
                         std::uint64_t index) noexcept {
    auto product_from = [&](std::size_t first) {
        std::uint64_t p = 1;
        for (std::size_t i = first; i < dims.size(); ++i) p *= static_cast<std::uint64_t>(dims[i]);
        return p;
    };
    switch (layout) {
        case channel_layout::axis0: {
            const auto inner = product_from(1);
            return inner == 0 ? 0 : index / inner;
        }
        case channel_layout::last_axis_2d: {
            const auto columns = dims.size() >= 2 ? static_cast<std::uint64_t>(dims[1]) : 1;
            return columns == 0 ? 0 : index % columns;
        }
        case channel_layout::conv_transpose: {
            if (dims.size() < 2 || group == 0) return 0;
            const auto kernel = product_from(2);
            const auto out_per_group = static_cast<std::uint64_t>(dims[1]);
            const auto in_per_group = static_cast<std::uint64_t>(dims[0]) / group;
            if (kernel == 0 || out_per_group == 0 || in_per_group == 0) return 0;
            const auto input_channel = index / (out_per_group * kernel);
            const auto j = (index / kernel) % out_per_group;
            return (input_channel / in_per_group) * out_per_group + j;
        }
    }
    return 0;
}

void for_each_channel_run(channel_layout layout, std::span<const std::int64_t> dims, std::uint64_t group,
                          const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)>& visit) {
    auto product_from = [&](std::size_t first) {
        std::uint64_t p = 1;
        for (std::size_t i = first; i < dims.size(); ++i) p *= static_cast<std::uint64_t>(dims[i]);
        return p;
    };
    if (dims.empty()) return;
    switch (layout) {
        case channel_layout::axis0: {
            const auto inner = product_from(1);
            for (std::uint64_t c = 0; c < static_cast<std::uint64_t>(dims[0]); ++c) visit(c * inner, inner, c);
            return;
        }
        case channel_layout::last_axis_2d: {
            if (dims.size() < 2) return;
            const auto rows = static_cast<std::uint64_t>(dims[0]);
            const auto columns = static_cast<std::uint64_t>(dims[1]);
            for (std::uint64_t r = 0; r < rows; ++r)
                for (std::uint64_t c = 0; c < columns; ++c) visit(r * columns + c, 1, c);
            return;
        }
        case channel_layout::conv_transpose: {
            if (dims.size() < 2 || group == 0) return;
            const auto inputs = static_cast<std::uint64_t>(dims[0]);
            const auto out_per_group = static_cast<std::uint64_t>(dims[1]);
            const auto kernel = product_from(2);
            const auto in_per_group = inputs / group;
            if (in_per_group == 0) return;
            for (std::uint64_t i = 0; i < inputs; ++i)
                for (std::uint64_t j = 0; j < out_per_group; ++j)
                    visit((i * out_per_group + j) * kernel, kernel, (i / in_per_group) * out_per_group + j);
            return;
        }
    }
}

void scale_run(std::int32_t type, std::span<std::byte> raw, std::uint64_t begin, std::uint64_t length, double factor) noexcept {
    const auto width = element_size(type);
    if (width == 0 || (begin + length) * width > raw.size()) return;
    switch (static_cast<data_type>(type)) {
        case data_type::float32:
            for (std::uint64_t i = begin; i < begin + length; ++i) {
                const auto x = std::bit_cast<float>(static_cast<std::uint32_t>(load_le(raw, i * 4, 4)));
                store_le(raw, i * 4, 4, std::bit_cast<std::uint32_t>(static_cast<float>(static_cast<double>(x) * factor)));
            }
            return;
        case data_type::float64:
            for (std::uint64_t i = begin; i < begin + length; ++i)
                store_le(raw, i * 8, 8, std::bit_cast<std::uint64_t>(std::bit_cast<double>(load_le(raw, i * 8, 8)) * factor));
            return;
        case data_type::float16:
            for (std::uint64_t i = begin; i < begin + length; ++i)
                store_le(raw, i * 2, 2,
                         double_to_half(half_to_double(static_cast<std::uint16_t>(load_le(raw, i * 2, 2))) * factor));
            return;
        default: return;
    }
}

namespace {

// Drops the mapped pages of `read`, part of the model's bytes, once a pass has them: the
// reader is the one way passes reach a tensor's bytes, so a pass that reads every weight
// (fold-bn, constant folding, the optimized model's computed tensors) cannot keep the
// whole model mapped by forgetting to release what it read. Not for a model whose tensors
// are kept (onnx::tensor_pass's rule): those are small enough to stay.
void release_read(const onnx::model_file& model, std::span<const std::byte> read) {
    if (model.reading == onnx::tensor_reading::kept || read.empty()) return;
    const auto& mapping = model.file.mapping();
    const auto bytes = mapping.bytes();
    if (bytes.empty()) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
    const auto at = reinterpret_cast<std::uintptr_t>(read.data());
    if (at < begin || at - begin >= bytes.size()) return;  // a body read again into memory: nothing mapped
    mapping.release(at - begin, read.size());
}

}  // namespace

tensor_reader::tensor_reader(const onnx::model_file& model, const onnx::external_data* data) : model_(model), data_(data) {
    binding_of_.assign(model.sites.size(), none);
    if (data_ != nullptr)
        for (const auto b : data_->tensors.ids()) binding_of_[data_->tensors[b].site] = b;
}

bool tensor_reader::readable(onnx::site_id site) const {
    const auto tensor = model_.tensor(site);
    const auto& info = *tensor;
    if (info.has_segment) return false;
    if (info.storage == onnx::tensor_storage::external)
        return binding_of_[site] != none && data_->tensors[binding_of_[site]].usable;
    return info.storage == onnx::tensor_storage::raw || info.storage == onnx::tensor_storage::typed ||
           (info.storage == onnx::tensor_storage::empty && info.element_count == 0);
}

result<void> tensor_reader::for_each_chunk(onnx::site_id site, std::size_t chunk,
                                           const std::function<void(std::span<const std::byte>)>& visit) const {
    const auto tensor = model_.tensor(site);  // its tree: the model's, or the body read again
    const auto& info = *tensor;
    const std::string name = "tensor '" + std::string(info.name) + "'";
    if (info.has_segment) return failure(error_code::unsupported, name + " is segmented");
    if (!info.expected_bytes) return failure(error_code::unsupported, name + " has no fixed-size values");
    switch (info.storage) {
        case onnx::tensor_storage::empty:
            if (info.element_count != 0) return failure(error_code::invalid_tensor, name + " has no values");
            return {};
        case onnx::tensor_storage::raw: {
            const auto payload = tensor.tree().payload(tensor.tree().field(info.raw_field));
            if (payload.size() != *info.expected_bytes)
                return failure(error_code::size_mismatch, name + " has " + std::to_string(payload.size()) +
                                                              " bytes of raw_data but its dims need " +
                                                              std::to_string(*info.expected_bytes));
            for (std::size_t done = 0; done < payload.size(); done += chunk) {
                const auto piece = payload.subspan(done, std::min(chunk, payload.size() - done));
                visit(piece);
                release_read(model_, piece);
            }
            return {};
        }
        case onnx::tensor_storage::typed: {
            ONNXSTREAM_ASSIGN(const auto bytes, onnx::typed_to_raw(tensor.tree(), info));
            visit(bytes);
            return {};
        }
        case onnx::tensor_storage::external: {
            const auto b = binding_of_[site];
            if (b == none || !data_->tensors[b].usable)
                return failure(error_code::missing_data, "the external data of " + name + " cannot be read",
                               "check that the model's data files are beside it ({0} shows where)",
                               {{remedy::inspect_model, {}}});
            const auto& binding = data_->tensors[b];
            if (binding.length != *info.expected_bytes)
                return failure(error_code::size_mismatch, name + " has " + std::to_string(binding.length) +
                                                              " bytes of external data but its dims need " +
                                                              std::to_string(*info.expected_bytes));
            return io::for_each_chunk(*data_->files[binding.file].file, binding.offset, binding.length, visit, chunk);
        }
        case onnx::tensor_storage::strings: return failure(error_code::unsupported, name + " holds strings");
    }
    return failure(error_code::unsupported, name + " has an unknown storage");
}

result<std::vector<std::byte>> tensor_reader::site_bytes(onnx::site_id site) const {
    std::vector<std::byte> out;
    const auto expected = model_.tensor(site)->expected_bytes.value_or(0);
    out.reserve(static_cast<std::size_t>(expected));
    ONNXSTREAM_TRY(for_each_chunk(site, std::size_t{1} << 24,
                                  [&](std::span<const std::byte> piece) { out.insert(out.end(), piece.begin(), piece.end()); }));
    return out;
}

result<std::vector<std::byte>> tensor_reader::read_range(onnx::site_id site, std::uint64_t offset, std::uint64_t length) const {
    const auto tensor = model_.tensor(site);
    const auto& info = *tensor;
    const auto size = info.expected_bytes.value_or(0);
    if (offset >= size) return std::vector<std::byte>{};
    length = std::min(length, size - offset);
    if (info.storage == onnx::tensor_storage::raw && !info.has_segment) {
        const auto payload = tensor.tree().payload(tensor.tree().field(info.raw_field));
        if (payload.size() != size)
            return failure(error_code::size_mismatch, "tensor '" + std::string(info.name) + "' has the wrong size");
        const auto piece = payload.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
        std::vector<std::byte> out(piece.begin(), piece.end());
        release_read(model_, piece);
        return out;
    }
    if (info.storage == onnx::tensor_storage::external && !info.has_segment) {
        const auto b = binding_of_[site];
        if (b == none || !data_->tensors[b].usable || data_->tensors[b].length != size)
            return failure(error_code::missing_data,
                           "the external data of tensor '" + std::string(info.name) + "' cannot be read");
        std::vector<std::byte> out(static_cast<std::size_t>(length));
        ONNXSTREAM_TRY(data_->files[data_->tensors[b].file].file->read_at(data_->tensors[b].offset + offset, out));
        return out;
    }
    // Typed values live in the model (under 2 GB): converted whole.
    ONNXSTREAM_ASSIGN(auto bytes, site_bytes(site));
    const auto first = bytes.begin() + static_cast<std::ptrdiff_t>(offset);
    return std::vector<std::byte>(first, first + static_cast<std::ptrdiff_t>(length));
}

result<std::vector<std::byte>> tensor_reader::compute(std::int32_t type, std::span<const std::int64_t> dims,
                                                      const computed_values& values) const {
    if (!values.scaled && (values.has_bytes || values.copy_site != none)) {
        std::uint64_t elements = 1;
        for (const auto d : dims) elements *= static_cast<std::uint64_t>(d);
        auto bytes = values.has_bytes ? values.bytes : std::vector<std::byte>{};
        if (!values.has_bytes) {
            ONNXSTREAM_ASSIGN(bytes, site_bytes(values.copy_site));
        }
        if (element_size(type) == 0 || bytes.size() != elements * element_size(type))
            return failure(error_code::invalid_argument, "a folded constant does not match its type and shape");
        return bytes;
    }
    if (!is_encodable_float(type))
        return failure(error_code::unsupported, "computed tensors of type " + onnx::data_type_name(type) + " are not supported");
    const auto width = element_size(type);
    std::uint64_t count = 1;
    for (const auto d : dims) count *= static_cast<std::uint64_t>(d);
    if (!values.scaled) {
        if (values.values.size() != count)
            return failure(error_code::invalid_argument, "a computed tensor has the wrong number of values");
        std::vector<std::byte> out(static_cast<std::size_t>(count * width));
        for (std::uint64_t i = 0; i < count; ++i) (void)encode_element(type, values.values[i], out, i);
        return out;
    }
    // Scaled in place: the base (a site, or bytes computed earlier) has the same type, so
    // each element is rewritten where it is.
    auto bytes = values.has_bytes ? values.bytes : std::vector<std::byte>{};
    if (!values.has_bytes) {
        ONNXSTREAM_ASSIGN(bytes, site_bytes(values.base_site));
        if (model_.tensor(values.base_site)->data_type != type)
            return failure(error_code::invalid_argument, "a folded weight does not match the tensor it starts from");
    }
    if (bytes.size() != count * width)
        return failure(error_code::invalid_argument, "a folded weight does not match the tensor it starts from");
    bool fits = true;
    for_each_channel_run(values.layout, dims, values.group, [&](std::uint64_t begin, std::uint64_t length, std::uint64_t c) {
        if (c >= values.factors.size()) {
            fits = false;
            return;
        }
        scale_run(type, bytes, begin, length, values.factors[static_cast<std::size_t>(c)]);
    });
    if (!fits) return failure(error_code::invalid_argument, "a folded weight has more channels than factors");
    return bytes;
}

result<std::vector<std::byte>> tensor_reader::tensor_bytes(const graph_model& model, tensor_id t) const {
    const auto& x = model.tensors[t];
    if (x.site != none) return site_bytes(x.site);
    const auto* c = model.computed(t);
    if (c == nullptr) return failure(error_code::invalid_argument, "a tensor has neither bytes nor a recipe");
    return compute(c->data_type, c->dims, c->values);
}

}  // namespace onnxstream::graph
