// Checks that a tree parsed with tensor_fields::on_demand says what the full tree of the
// same bytes says, and that every body it dropped reads back (message_tree::body) as the
// full tree holds it. Shared by test_message_tree.cpp and test_model_file.cpp.
#pragma once

#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_tree.hpp>

#include <doctest/doctest.h>

#include <span>
#include <stdexcept>

namespace test_support {

inline void check_same_fields(std::span<const onnxstream::onnx::field_entry> a,
                              std::span<const onnxstream::onnx::field_entry> b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].header_offset() == b[i].header_offset());
        CHECK(a[i].header_length() == b[i].header_length());
        CHECK(a[i].payload_length() == b[i].payload_length());
        CHECK(a[i].number() == b[i].number());
        CHECK(a[i].type() == b[i].type());
        CHECK(a[i].child == b[i].child);
    }
}

/// Returns how many bodies `lazy` dropped.
inline std::size_t check_on_demand_tree(const onnxstream::onnx::message_tree& full, const onnxstream::onnx::message_tree& lazy) {
    using namespace onnxstream::onnx;
    REQUIRE(lazy.messages().size() == full.messages().size());
    std::size_t dropped = 0;
    std::size_t dropped_fields = 0;
    for (std::uint32_t m = 0; m < full.messages().size(); ++m) {
        const auto& a = full.at(m);
        const auto& b = lazy.at(m);
        CHECK(a.kind == b.kind);
        CHECK(a.parent == b.parent);
        CHECK(a.depth == b.depth);
        CHECK(a.ordinal == b.ordinal);
        CHECK(static_cast<bool>(a.repeated) == static_cast<bool>(b.repeated));
        CHECK_FALSE(static_cast<bool>(a.fields_dropped));
        CHECK(full.path(m) == lazy.path(m));
        CHECK(full.payload_range(m).offset == lazy.payload_range(m).offset);
        CHECK(full.payload_range(m).length == lazy.payload_range(m).length);
        for (const std::uint32_t n : {1U, 2U, 4U, 8U, 9U, 12U}) CHECK(full.find_text(m, n) == lazy.find_text(m, n));
        if (lazy.stores_fields(m)) {
            check_same_fields(full.fields(m), lazy.fields(m));
            for (const auto& f : lazy.fields(m)) CHECK(lazy.owner(lazy.index_of(f)) == m);
            continue;
        }
        // Only a tensor without external data is dropped, with nothing inside it.
        ++dropped;
        dropped_fields += a.field_count;
        CHECK(a.kind == message_kind::tensor);
        CHECK(b.field_count == 0);
        CHECK(full.find(m, number(tensor_field::data_location)) == nullptr);
        CHECK(full.find(m, number(tensor_field::external_data)) == nullptr);
        CHECK_THROWS_AS((void)lazy.fields(m), std::logic_error);
        CHECK_THROWS_AS((void)lazy.find(m, number(tensor_field::name)), std::logic_error);
        const auto body = message_tree::body(lazy, m);
        REQUIRE(body);
        REQUIRE(body->messages().size() == 1);
        check_same_fields(full.fields(m), body->fields(0));
        CHECK(body->path(0) == full.path(m));
        CHECK(body->payload_range(0).offset == full.payload_range(m).offset);
        CHECK(body->payload_range(0).length == full.payload_range(m).length);
        CHECK(body->find_text(0, number(tensor_field::name)) == full.find_text(m, number(tensor_field::name)));
        // Its indices follow the tree's: neither tree takes the other's for its own.
        CHECK(body->first_index() == lazy.all_fields().size());
        for (const auto& f : body->fields(0)) {
            CHECK(&body->field(body->index_of(f)) == &f);
            CHECK_THROWS_AS((void)lazy.field(body->index_of(f)), std::out_of_range);
        }
        if (!lazy.all_fields().empty()) CHECK_THROWS_AS((void)body->field(0), std::out_of_range);
    }
    CHECK(lazy.all_fields().size() + dropped_fields == full.all_fields().size());
    return dropped;
}

}  // namespace test_support
