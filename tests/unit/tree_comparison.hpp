// Checks that a tree parsed with tensor_fields::on_demand says what the full tree of the
// same bytes says, and that every body it dropped reads back (message_tree::body), with
// the messages inside it, as the full tree holds it. Shared by test_message_tree.cpp and test_model_file.cpp;
// parse_tree and tensor_messages by every test that compares the two trees' forms.
#pragma once

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_tree.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace test_support {

/// The tree of `bytes` with TensorProto bodies kept as `tensors` says (the parse must succeed).
inline onnxstream::onnx::message_tree parse_tree(std::span<const std::byte> bytes, onnxstream::onnx::tensor_fields tensors) {
    onnxstream::onnx::tree_options options;
    options.tensors = tensors;
    auto tree = onnxstream::onnx::message_tree::parse(bytes, options);
    REQUIRE(tree);
    return std::move(*tree);
}

/// The indices of the tree's TensorProto messages, in order.
inline std::vector<std::uint32_t> tensor_messages(const onnxstream::onnx::message_tree& tree) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t m = 0; m < tree.messages().size(); ++m)
        if (tree.at(m).kind == onnxstream::onnx::message_kind::tensor) out.push_back(m);
    return out;
}

// `to_a` turns a child index of `b`'s tree into one of `a`'s.
template <class ChildMap>
void check_same_fields(std::span<const onnxstream::onnx::field_entry> a, std::span<const onnxstream::onnx::field_entry> b,
                       ChildMap to_a) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].header_offset() == b[i].header_offset());
        CHECK(a[i].header_length() == b[i].header_length());
        CHECK(a[i].payload_length() == b[i].payload_length());
        CHECK(a[i].number() == b[i].number());
        CHECK(a[i].type() == b[i].type());
        CHECK(a[i].child == (b[i].child == onnxstream::onnx::no_index ? b[i].child : to_a(b[i].child)));
    }
}

// Message `a` of tree `x` and message `b` of tree `y` say the same of themselves.
inline void check_same_message(const onnxstream::onnx::message_tree& x, std::uint32_t a, const onnxstream::onnx::message_tree& y,
                               std::uint32_t b) {
    CHECK(x.at(a).kind == y.at(b).kind);
    CHECK(x.at(a).depth == y.at(b).depth);
    CHECK(x.at(a).ordinal == y.at(b).ordinal);
    CHECK(static_cast<bool>(x.at(a).repeated) == static_cast<bool>(y.at(b).repeated));
    CHECK(x.path(a) == y.path(b));
    CHECK(x.payload_range(a).offset == y.payload_range(b).offset);
    CHECK(x.payload_range(a).length == y.payload_range(b).length);
    for (const std::uint32_t n : {1U, 2U, 4U, 8U, 9U, 12U}) CHECK(x.find_text(a, n) == y.find_text(b, n));
}

/// Returns how many bodies `lazy` dropped. A dropped body's messages (its external_data
/// entries) are not in `lazy`: its messages are those of `full` without them.
inline std::size_t check_on_demand_tree(const onnxstream::onnx::message_tree& full, const onnxstream::onnx::message_tree& lazy) {
    using namespace onnxstream::onnx;
    std::vector<std::uint32_t> lazy_of(full.messages().size(), no_index);  // full index -> lazy index
    std::vector<std::uint32_t> full_of;                                    // lazy index -> full index
    std::size_t dropped = 0;
    std::size_t dropped_fields = 0;
    for (std::uint32_t m = 0; m < full.messages().size(); ++m) {
        const auto& a = full.at(m);
        CHECK_FALSE(static_cast<bool>(a.fields_dropped));
        // Inside a dropped body: checked with it.
        if (a.parent != no_index && (lazy_of[a.parent] == no_index || !lazy.stores_fields(lazy_of[a.parent]))) continue;
        const auto l = static_cast<std::uint32_t>(full_of.size());
        REQUIRE(l < lazy.messages().size());
        lazy_of[m] = l;
        full_of.push_back(m);
        CHECK(lazy.at(l).parent == (a.parent == no_index ? no_index : lazy_of[a.parent]));
        check_same_message(full, m, lazy, l);
        if (lazy.stores_fields(l)) continue;
        // Only a tensor is dropped, with what is inside it, or a node with nothing inside
        // it (no attribute): its body reads it back.
        ++dropped;
        CHECK(lazy.at(l).field_count == 0);
        CHECK_THROWS_AS((void)lazy.fields(l), std::logic_error);
        CHECK_THROWS_AS((void)lazy.find(l, number(tensor_field::name)), std::logic_error);
        const auto body = message_tree::body(lazy, l);
        REQUIRE(body);
        CHECK((a.kind == message_kind::tensor || (a.kind == message_kind::node && body->messages().size() == 1)));
        // read_fields reads the same fields again, without children.
        std::vector<field_entry> scratch;
        const auto read = lazy.read_fields(l, scratch);
        REQUIRE(read.size() == full.fields(m).size());
        for (std::size_t i = 0; i < read.size(); ++i) {
            CHECK(read[i].header_offset() == full.fields(m)[i].header_offset());
            CHECK(read[i].payload_length() == full.fields(m)[i].payload_length());
            CHECK(read[i].number() == full.fields(m)[i].number());
            CHECK(read[i].type() == full.fields(m)[i].type());
            CHECK(read[i].child == no_index);
        }
        // The body's message j is the full tree's m + j (pre-order, as parse stores them).
        const auto to_full = [m](std::uint32_t j) { return m + j; };
        for (std::uint32_t j = 0; j < body->messages().size(); ++j) {
            REQUIRE(m + j < full.messages().size());
            check_same_message(full, m + j, *body, j);
            if (j == 0) CHECK(body->at(0).parent == no_index);
            else CHECK(body->at(j).parent + m == full.at(m + j).parent);
            check_same_fields(full.fields(m + j), body->fields(j), to_full);
            for (const auto& f : body->fields(j)) CHECK(body->owner(body->index_of(f)) == j);
            dropped_fields += full.at(m + j).field_count;
        }
        // Nothing more inside it.
        const auto after = m + static_cast<std::uint32_t>(body->messages().size());
        if (after < full.messages().size()) CHECK(full.at(after).depth <= a.depth);
        // Its indices follow the tree's: neither tree takes the other's for its own.
        CHECK(body->first_index() == lazy.all_fields().size());
        for (const auto& f : body->all_fields()) {
            CHECK(&body->field(body->index_of(f)) == &f);
            CHECK_THROWS_AS((void)lazy.field(body->index_of(f)), std::out_of_range);
        }
        if (!lazy.all_fields().empty()) CHECK_THROWS_AS((void)body->field(0), std::out_of_range);
    }
    REQUIRE(full_of.size() == lazy.messages().size());
    const auto to_full = [&full_of](std::uint32_t l) { return full_of[l]; };
    for (std::uint32_t l = 0; l < lazy.messages().size(); ++l) {
        if (!lazy.stores_fields(l)) continue;
        check_same_fields(full.fields(full_of[l]), lazy.fields(l), to_full);
        for (const auto& f : lazy.fields(l)) CHECK(lazy.owner(lazy.index_of(f)) == l);
    }
    CHECK(lazy.all_fields().size() + dropped_fields == full.all_fields().size());
    return dropped;
}

}  // namespace test_support
