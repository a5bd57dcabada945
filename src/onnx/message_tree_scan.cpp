#include <onnxstream/onnx/message_tree.hpp>

#include "header_window.hpp"
#include "schema_rows.hpp"

#include <onnxstream/proto/tokenizer.hpp>
#include <onnxstream/proto/varint.hpp>

#include <algorithm>
#include <array>

namespace onnxstream::onnx {
namespace {

struct scanner {
    detail::header_window window;
    const bulk_scan_options& options;
    std::vector<io::byte_range> found;
    const detail::schema_rows& schema = detail::schema_rows::get();

    // False when the bytes are not a well-formed message: the scan then stops, and the
    // tree's own parse says what is wrong.
    bool scan(message_kind kind, std::uint64_t begin, std::uint64_t end, std::uint32_t depth) {
        if (depth > options.max_depth) return false;
        for (std::uint64_t position = begin; position < end;) {
            proto::field_token token;
            if (!window.field(position, end, token)) return false;
            if (token.type == proto::wire_type::length_delimited &&
                !payload(kind, token.number, token.payload_offset, token.payload_length, depth))
                return false;
            position = token.end_offset();
        }
        return true;
    }

    // A length-delimited field's payload: a message to scan, or a bulk payload, or neither.
    // Inlined in the loop: it runs for most fields.
    [[gnu::always_inline]] bool payload(message_kind kind, std::uint64_t number, std::uint64_t offset, std::uint64_t length,
                                        std::uint32_t depth) {
        const auto* child = number < detail::schema_rows::numbers ? schema.child(kind, static_cast<std::uint32_t>(number))
                                                                  : nullptr;
        // A message shorter than min_length holds no payload that long: the scan does not
        // descend into it (a graph of a million small nodes costs the node headers alone).
        if (length < options.min_length) return true;
        if (child != nullptr) return scan(child->child, offset, offset + length, depth + 1);
        found.push_back({offset, length});
        return true;
    }
};

}  // namespace

std::vector<io::byte_range> find_bulk_payloads(std::uint64_t size, const read_function& read, const bulk_scan_options& options) {
    scanner s{detail::header_window(size, read), options, {}, detail::schema_rows::get()};
    if (!s.scan(message_kind::model, 0, size, 0)) return {};
    if (s.found.size() > options.max_ranges) {
        // Keep the largest (they save the most), then put them back in file order.
        std::nth_element(s.found.begin(), s.found.begin() + static_cast<std::ptrdiff_t>(options.max_ranges), s.found.end(),
                         [](const io::byte_range& a, const io::byte_range& b) { return a.length > b.length; });
        s.found.resize(options.max_ranges);
        std::sort(s.found.begin(), s.found.end(),
                  [](const io::byte_range& a, const io::byte_range& b) { return a.offset < b.offset; });
    }
    return std::move(s.found);
}

}  // namespace onnxstream::onnx
