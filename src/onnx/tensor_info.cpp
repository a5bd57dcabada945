#include <onnxstream/onnx/tensor_info.hpp>

#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/proto/tokenizer.hpp>

#include <string>

namespace onnxstream::onnx {

const char* to_string(tensor_storage storage) noexcept {
    switch (storage) {
        case tensor_storage::empty: return "empty";
        case tensor_storage::raw: return "raw";
        case tensor_storage::typed: return "typed";
        case tensor_storage::strings: return "strings";
        case tensor_storage::external: return "external";
    }
    return "unknown";
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) noexcept {
    if (text.empty() || text.size() > 20) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    return value;
}

namespace {

failure invalid(const message_tree& tree, std::uint32_t message_index, std::string what, std::uint64_t offset) {
    error e;
    e.code = error_code::invalid_tensor;
    e.message = std::move(what);
    e.hint = "the model is damaged or was written by a faulty exporter";
    e.offset = offset;
    e.field_path = tree.path(message_index);
    return failure(std::move(e));
}

bool is_typed_field(std::uint32_t n) {
    return n == number(tensor_field::float_data) || n == number(tensor_field::int32_data) ||
           n == number(tensor_field::int64_data) || n == number(tensor_field::double_data) ||
           n == number(tensor_field::uint64_data);
}

// A wrong wire type on the fields that decide where the bytes are would make the tensor
// silently look empty (protobuf keeps such a field as unknown): refuse it.
result<void> check_wire_type(const message_tree& tree, std::uint32_t message_index, const field_entry& f) {
    const auto n = f.number();
    const auto type = f.type();
    const char* const scalar = n == number(tensor_field::data_type)       ? "data_type"
                               : n == number(tensor_field::data_location) ? "data_location"
                                                                          : nullptr;
    if (scalar != nullptr && type != proto::wire_type::varint)
        return invalid(
            tree, message_index,
            std::string("a tensor's ") + scalar + " has wire type " + std::to_string(static_cast<int>(type)) + ", not a varint",
            f.header_offset());
    if (n == number(tensor_field::raw_data) && type != proto::wire_type::length_delimited)
        return invalid(tree, message_index,
                       "a tensor's raw_data has wire type " + std::to_string(static_cast<int>(type)) + ", not bytes",
                       f.header_offset());
    return {};
}

// Where a tensor's dims fields are (one varint each or a packed run, possibly mixed, with
// other fields between them) and how many dims they hold.
struct dims_fields {
    std::uint64_t count = 0;
    std::uint64_t first_header = 0;  // of the first dims field
    std::uint64_t end = 0;           // of the last one
    std::uint32_t fields = 0;
    bool packed = false;                 // the last one is a packed run
    std::span<const std::byte> payload;  // of the last one
};

// One dims field: counted, and a packed run's varints checked to end within it, so that
// the view decodes without checks afterwards.
result<void> read_dims(const message_tree& tree, std::uint32_t message_index, const field_entry& f, dims_fields& dims) {
    const auto type = f.type();
    if (type == proto::wire_type::varint) {
        ++dims.count;
    } else if (type == proto::wire_type::length_delimited) {
        const auto count = proto::count_packed_varints(tree.payload(f));
        if (!count) return invalid(tree, message_index, "packed dims do not decode", f.payload_offset());
        dims.count += *count;
    } else {
        return invalid(tree, message_index, "dims has the wrong wire type", f.header_offset());
    }
    if (dims.fields++ == 0) dims.first_header = f.header_offset();
    dims.end = f.end_offset();
    dims.packed = type == proto::wire_type::length_delimited;
    dims.payload = tree.payload(f);
    return {};
}

// The view over the dims: the payload of a lone packed field, else the run of the tensor's
// fields from the first dims field to the end of the last.
tensor_dims dims_view(const message_tree& tree, const dims_fields& dims) {
    if (dims.fields == 0) return {};
    if (dims.fields == 1 && dims.packed) return {dims.payload, tensor_dims::layout::packed, dims.count};
    return {tree.bytes().subspan(dims.first_header, dims.end - dims.first_header), tensor_dims::layout::fields, dims.count};
}

// One `external_data` entry (key, value). `location_seen`: an earlier entry was a
// location (an empty one counts too).
result<void> read_external_entry(const message_tree& tree, std::uint32_t message_index, const field_entry& f, tensor_info& info,
                                 bool& location_seen, external_reference* reference) {
    if (!info.external && reference != nullptr) {
        // The caller's, not owned (the aliasing constructor with no owner allocates nothing).
        *reference = {};
        info.external = std::shared_ptr<external_reference>(std::shared_ptr<external_reference>{}, reference);
    }
    if (!info.external) info.external = std::make_shared<external_reference>();
    const auto key = tree.find_text(f.child, number(string_entry_field::key));
    const auto value = tree.find_text(f.child, number(string_entry_field::value));
    auto& ref = *info.external;
    // A repeated key is ambiguous (which location? which offset?): readers disagree
    // (onnx keeps the last, others the first), so the model is refused.
    const bool repeated = (key == "location" && location_seen) || (key == "offset" && ref.offset) ||
                          (key == "length" && ref.length) || (key == "checksum" && ref.checksum);
    if (repeated)
        return invalid(tree, message_index, "external data key '" + std::string(key) + "' appears more than once",
                       f.header_offset());
    if (key == "location") {
        location_seen = true;
        if (value.find('\0') != std::string_view::npos)
            return invalid(tree, message_index, "an external data location contains a NUL byte", f.header_offset());
        ref.location = value;
    } else if (key == "offset" || key == "length") {
        const auto parsed = parse_decimal(value);
        if (!parsed)
            return invalid(tree, message_index,
                           "external data " + std::string(key) + " '" + std::string(value.substr(0, 40)) +
                               "' is not a non-negative whole number",
                           f.header_offset());
        (key == "offset" ? ref.offset : ref.length) = *parsed;
    } else if (key == "checksum") {
        ref.checksum = value;
    }
    return {};
}

// The element count and byte size from dims and data_type. The overflow checks look at the
// product of the non-zero dims, so that the verdict does not depend on where a zero
// stands: [2^40, 2^40, 0] and [0, 2^62, 2^62] are both refused, as numpy (and so
// python-onnx) refuses them. A zero still makes the count 0.
result<void> count_elements(const message_tree& tree, std::uint32_t message_index, tensor_info& info) {
    std::uint64_t nonzero_product = 1;
    bool has_zero = false;
    for (const auto d : info.dims) {
        if (d < 0)
            return invalid(tree, message_index,
                           "tensor '" + std::string(info.name) + "' has a negative dimension " + std::to_string(d),
                           tree.payload_range(message_index).offset);
        const auto u = static_cast<std::uint64_t>(d);
        if (u == 0) {
            has_zero = true;
            continue;
        }
        if (nonzero_product > std::numeric_limits<std::uint64_t>::max() / u)
            return invalid(tree, message_index,
                           "tensor '" + std::string(info.name) + "' has dimensions whose product overflows 64 bits",
                           tree.payload_range(message_index).offset);
        nonzero_product *= u;
    }
    info.element_count = has_zero ? 0 : nonzero_product;
    if (auto bytes = raw_byte_size(info.data_type, nonzero_product); bytes && has_zero) {
        info.expected_bytes = 0;
    } else if (bytes) {
        info.expected_bytes = *bytes;
    } else if (bytes.error().code == error_code::invalid_tensor) {
        // The element count fits but the byte count does not: no file can hold it, and
        // without a size nothing could be checked against it.
        return invalid(tree, message_index,
                       "tensor '" + std::string(info.name) + "' of " + std::to_string(nonzero_product) + " " +
                           data_type_name(info.data_type) + " elements" + (has_zero ? " (not counting a zero dimension)" : "") +
                           ": its size in bytes overflows 64 bits",
                       tree.payload_range(message_index).offset);
    }
    return {};
}

// Where the values are: external (data_location says so, and a location is given), raw,
// typed, strings or none.
result<void> decide_storage(const message_tree& tree, std::uint32_t message_index, bool marked_external, tensor_info& info) {
    if (marked_external) {
        if (!info.external || info.external->location.empty())
            return invalid(tree, message_index, "tensor '" + std::string(info.name) + "' is marked external but has no location",
                           tree.payload_range(message_index).offset);
        info.storage = tensor_storage::external;
    } else if (info.storage != tensor_storage::strings) {
        if (info.raw_field != no_index) info.storage = tensor_storage::raw;
        else if (!info.typed_fields.empty()) info.storage = tensor_storage::typed;
        else info.external.reset();  // external_data keys without data_location: ignored by ONNX too
    }
    return {};
}

// read_tensor, the external reference read into `reference` when given.
result<tensor_info> read_tensor_into(const message_tree& tree, std::uint32_t message_index, external_reference* reference) {
    tensor_info info;
    info.message = message_index;
    bool marked_external = false;
    bool location_seen = false;
    dims_fields dims;
    for (const auto& f : tree.fields(message_index)) {
        const auto n = f.number();
        const auto type = f.type();
        ONNXSTREAM_TRY(check_wire_type(tree, message_index, f));
        const auto field = tree.index_of(f);
        if (n == number(tensor_field::name) && type == proto::wire_type::length_delimited) {
            info.name = tree.text(f);
        } else if (n == number(tensor_field::data_type) && type == proto::wire_type::varint) {
            info.data_type = static_cast<std::int32_t>(tree.value(f));
        } else if (n == number(tensor_field::dims)) {
            ONNXSTREAM_TRY(read_dims(tree, message_index, f, dims));
        } else if (n == number(tensor_field::raw_data) && type == proto::wire_type::length_delimited) {
            info.raw_field = field;
        } else if (is_typed_field(n)) {
            info.typed_fields.push_back(field);
        } else if (n == number(tensor_field::string_data)) {
            info.storage = tensor_storage::strings;
        } else if (n == number(tensor_field::segment)) {
            info.has_segment = true;
        } else if (n == number(tensor_field::data_location) && type == proto::wire_type::varint) {
            marked_external = tree.value(f) == static_cast<std::uint64_t>(data_location::external);
        } else if (n == number(tensor_field::external_data) && f.child != no_index) {
            ONNXSTREAM_TRY(read_external_entry(tree, message_index, f, info, location_seen, reference));
        }
    }
    info.dims = dims_view(tree, dims);
    ONNXSTREAM_TRY(count_elements(tree, message_index, info));
    ONNXSTREAM_TRY(decide_storage(tree, message_index, marked_external, info));
    return info;
}

}  // namespace

result<tensor_info> read_tensor(const message_tree& tree, std::uint32_t message_index) {
    return read_tensor_into(tree, message_index, nullptr);
}

result<tensor_info> read_tensor(const message_tree& tree, std::uint32_t message_index, external_reference& reference) {
    return read_tensor_into(tree, message_index, &reference);
}

}  // namespace onnxstream::onnx
