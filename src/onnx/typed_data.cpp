#include <onnxstream/onnx/typed_data.hpp>

#include <onnxstream/onnx/data_type.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace onnxstream::onnx {
namespace {

constexpr std::size_t piece_size = 1U << 20;

// Collects converted bytes and hands them on a piece at a time.
class piece_buffer {
public:
    explicit piece_buffer(const std::function<result<void>(std::span<const std::byte>)>& sink) : sink_(sink) {
        bytes_.reserve(piece_size);
    }
    result<void> put_little_endian(std::uint64_t value, std::uint32_t width) {
        for (std::uint32_t i = 0; i < width; ++i) bytes_.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFFU));
        return bytes_.size() + 8 > piece_size ? flush() : result<void>{};
    }
    result<void> put(std::span<const std::byte> bytes) {
        while (!bytes.empty()) {
            const auto room = std::min(bytes.size(), piece_size - bytes_.size());
            bytes_.insert(bytes_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(room));
            bytes = bytes.subspan(room);
            if (bytes_.size() == piece_size) ONNXSTREAM_TRY(flush());
        }
        return {};
    }
    result<void> flush() {
        if (bytes_.empty()) return {};
        total_ += bytes_.size();
        ONNXSTREAM_TRY(sink_(bytes_));
        bytes_.clear();
        return {};
    }
    [[nodiscard]] std::uint64_t size() const noexcept { return total_ + bytes_.size(); }

private:
    const std::function<result<void>(std::span<const std::byte>)>& sink_;
    std::vector<std::byte> bytes_;
    std::uint64_t total_ = 0;
};

// Drops the mapped pages of `payload` up to `done` bytes once they are converted.
void release_read(const io::mapped_file* mapping, std::span<const std::byte> payload, std::size_t done) {
    if (mapping == nullptr || mapping->bytes().empty()) return;
    const auto begin = reinterpret_cast<std::uintptr_t>(mapping->bytes().data());
    const auto at = reinterpret_cast<std::uintptr_t>(payload.data());
    if (at < begin || at - begin > mapping->bytes().size()) return;
    mapping->release(at - begin, done);
}

}  // namespace

result<std::vector<std::byte>> typed_to_raw(const message_tree& tree, const tensor_info& tensor) {
    std::vector<std::byte> out;
    // The typed fields live in the model, which is under 2 GB: the size is bounded.
    if (tensor.expected_bytes)
        out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(*tensor.expected_bytes, tree.bytes().size() * 8)));
    const std::function<result<void>(std::span<const std::byte>)> append = [&out](std::span<const std::byte> piece) {
        out.insert(out.end(), piece.begin(), piece.end());
        return result<void>{};
    };
    ONNXSTREAM_TRY(typed_to_raw(tree, tensor, append));
    return out;
}

result<std::uint64_t> typed_to_raw(const message_tree& tree, const tensor_info& tensor,
                                   const std::function<result<void>(std::span<const std::byte>)>& sink,
                                   const io::mapped_file* mapping) {
    const auto info = describe(tensor.data_type);
    if (!info || info->encoding == typed_encoding::none)
        return failure(error_code::unsupported, "tensor '" + std::string(tensor.name) + "' of type " +
                                                    data_type_name(tensor.data_type) + " has no raw form");
    if (!tensor.expected_bytes) return failure(error_code::unsupported, "tensor '" + std::string(tensor.name) + "' has no size");
    const std::uint64_t expected = *tensor.expected_bytes;
    piece_buffer out(sink);
    const bool fixed = fixed_width(info->encoding);
    const std::uint32_t width = raw_entry_width(*info);
    for (const auto index : tensor.typed_fields) {
        const auto& f = tree.field(index);
        if (f.number() != number(info->typed_field)) continue;  // another type's field: ignored, as by ONNX
        const auto payload = tree.payload(f);
        if (fixed) {
            // Packed or single, fixed-width values are little-endian on the wire already.
            if (payload.size() % width != 0)
                return failure(error_code::malformed, "tensor '" + std::string(tensor.name) + "' has a partial value");
            for (std::size_t done = 0; done < payload.size(); done += piece_size) {
                ONNXSTREAM_TRY(out.put(payload.subspan(done, std::min(piece_size, payload.size() - done))));
                release_read(mapping, payload, std::min(done + piece_size, payload.size()));
            }
            continue;
        }
        if (f.type() == proto::wire_type::varint) {
            ONNXSTREAM_TRY(out.put_little_endian(tree.value(f), width));
            continue;
        }
        std::size_t position = 0;
        std::size_t released = 0;
        while (position < payload.size()) {
            const auto v = proto::decode_varint(payload.subspan(position));
            if (!v)
                return failure(error_code::malformed,
                               "tensor '" + std::string(tensor.name) + "' has a value that does not decode");
            ONNXSTREAM_TRY(out.put_little_endian(v->value, width));
            position += v->size;
            if (position - released >= piece_size) {
                release_read(mapping, payload, position);
                released = position;
            }
        }
        release_read(mapping, payload, position);
        if (out.size() > expected) break;
    }
    ONNXSTREAM_TRY(out.flush());
    if (out.size() != expected)
        return failure(error_code::size_mismatch,
                       "tensor '" + std::string(tensor.name) + "' holds " + std::to_string(out.size()) +
                           " bytes of typed values but its dims need " + std::to_string(expected),
                       "the model is damaged; pass {0} to keep it as it is", {{remedy::accept_size_mismatch, {}}});
    return out.size();
}

std::optional<std::uint64_t> typed_raw_size(const message_tree& tree, const tensor_info& tensor) {
    const auto info = describe(tensor.data_type);
    if (!info || info->encoding == typed_encoding::none) return std::nullopt;
    const std::uint64_t width = raw_entry_width(*info);
    std::uint64_t bytes = 0;
    for (const auto index : tensor.typed_fields) {
        const auto& f = tree.field(index);
        if (f.number() != number(info->typed_field)) continue;  // another type's field: ignored
        const auto payload = tree.payload(f);
        if (fixed_width(info->encoding)) {
            bytes += payload.size();
        } else if (f.type() == proto::wire_type::varint) {
            bytes += width;
        } else {
            if (!payload.empty() && (std::to_integer<unsigned>(payload.back()) & 0x80U) != 0) return std::nullopt;
            const auto values = static_cast<std::uint64_t>(std::count_if(
                payload.begin(), payload.end(), [](std::byte b) { return (std::to_integer<unsigned>(b) & 0x80U) == 0; }));
            bytes += values * width;
        }
    }
    return bytes;
}

}  // namespace onnxstream::onnx
