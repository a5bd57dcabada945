#include <onnxstream/onnx/message_fields.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/onnx/tree_edits.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/proto/tokenizer.hpp>
#include <onnxstream/proto/varint.hpp>

#include "proto_builder.hpp"
#include "tree_comparison.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::parse_tree;
using test_support::proto_builder;
using test_support::tensor_messages;

namespace {

// Executes a plan in memory: source 0 is the model, source 1 is `other`.
std::vector<std::byte> execute(const plan::write_plan& p, std::span<const std::byte> model,
                               std::span<const std::byte> other = {}) {
    std::vector<std::byte> out(p.size());
    for (const auto& op : p.operations()) {
        const auto bytes = op.kind == plan::operation_kind::emit ? p.emitted(op)
                           : op.source == 0                      ? model.subspan(op.input_offset, op.length)
                                                                 : other.subspan(op.input_offset, op.length);
        if (!bytes.empty()) std::memcpy(out.data() + op.output_offset, bytes.data(), bytes.size());
    }
    return out;
}

std::vector<std::byte> sample_model() {
    proto_builder t;
    t.varint_field(1, 2).varint_field(2, 1).string_field(8, "w").bytes_field(9, test_support::float_bytes({1, 2}));
    proto_builder graph;
    graph.string_field(2, "g").message_field(5, t);
    proto_builder model;
    model.varint_field(1, 8).string_field(2, "test").message_field(7, graph).string_field(1234, "unknown");
    return model.take();
}

// The sample tensor's raw_data replaced by `length` bytes of source 1, labelled "w".
void replace_raw_with_labelled_slice(const onnx::message_tree& tree, onnx::tree_edits& edits, std::uint64_t length) {
    const auto& raw = tree.fields(2)[3];
    edits.drop(static_cast<std::uint32_t>(&raw - tree.all_fields().data()));
    auto slice = edits.slice(9, 1, 0, length);
    slice.label = edits.add_label("w");
    edits.insert(2, 3, slice);
}

// The sample model with its raw tensor replaced by a labelled slice ("w") of source 1,
// whose bytes are `other`. Not movable: the tree views `bytes`.
struct labelled_rewrite {
    std::vector<std::byte> bytes = sample_model();
    onnx::message_tree tree = parsed(bytes);
    std::vector<std::byte> other = test_support::float_bytes({1, 2, 3, 4, 5, 6, 7, 8});
    onnx::tree_edits edits;

    labelled_rewrite() { replace_raw_with_labelled_slice(tree, edits, other.size()); }
    labelled_rewrite(const labelled_rewrite&) = delete;
    labelled_rewrite& operator=(const labelled_rewrite&) = delete;

    static onnx::message_tree parsed(std::span<const std::byte> bytes) {
        auto tree = onnx::message_tree::parse(bytes);
        REQUIRE(tree);
        return std::move(*tree);
    }
};

// A model (ir_version 8) holding `graph`, and its tree with the tensors' fields dropped
// (read on demand), as a big model's is. The tree views `bytes`.
std::vector<std::byte> model_holding(const proto_builder& graph) {
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    return model.take();
}

onnx::message_tree parse_on_demand(std::span<const std::byte> bytes) {
    onnx::tree_options options;
    options.tensors = onnx::tensor_fields::on_demand;
    auto tree = onnx::message_tree::parse(bytes, options);
    REQUIRE_MESSAGE(tree, (tree ? "" : tree.error().describe()));
    return std::move(*tree);
}

}  // namespace

TEST_CASE("no edits: one copy of the whole file") {
    const auto bytes = sample_model();
    const auto tree = onnx::message_tree::parse(bytes);
    REQUIRE(tree);
    onnx::tree_edits edits;
    const auto p = plan::plan_rewrite(*tree, edits);
    REQUIRE(p);
    CHECK(p->operations().size() == 1);
    CHECK(p->describe() == "copy @0 +" + std::to_string(bytes.size()) + " from 0:0\nsize " + std::to_string(bytes.size()) + "\n");
    CHECK(execute(*p, bytes) == bytes);
}

TEST_CASE("edits that cancel out reproduce the input byte for byte, non-minimal varints included") {
    proto_builder t;
    t.varint_field(2, 1).string_field(8, "w");
    proto_builder graph;
    graph.raw_varint((5 << 3) | 2)
        .raw(std::vector<std::byte>{static_cast<std::byte>(0x80U | t.bytes().size()), std::byte{0x00}})
        .raw(t.bytes());
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto bytes = model.take();
    const auto tree = onnx::message_tree::parse(bytes);
    REQUIRE(tree);
    // Drop the tensor's name and insert the same field in its place.
    onnx::tree_edits edits;
    const auto tensor_message = static_cast<std::uint32_t>(tree->messages().size() - 1);
    const auto& name_field = tree->fields(tensor_message)[1];
    edits.drop(static_cast<std::uint32_t>(&name_field - tree->all_fields().data()));
    edits.insert(tensor_message, 1, edits.text(8, "w"));
    const auto p = plan::plan_rewrite(*tree, edits);
    REQUIRE(p);
    CHECK(execute(*p, bytes) == bytes);
}

TEST_CASE("replacing raw_data with a slice of another source resizes every enclosing message") {
    const auto bytes = sample_model();
    const auto tree = onnx::message_tree::parse(bytes);
    REQUIRE(tree);
    const auto other = test_support::float_bytes(
        {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    const std::uint32_t tensor = 2;
    REQUIRE(tree->at(tensor).kind == onnx::message_kind::tensor);
    onnx::tree_edits edits;
    const auto& raw = tree->fields(tensor)[3];
    REQUIRE(raw.number() == 9);
    edits.drop(static_cast<std::uint32_t>(&raw - tree->all_fields().data()));
    edits.insert(tensor, 3, edits.slice(9, 1, 0, other.size()));
    const auto p = plan::plan_rewrite(*tree, edits);
    REQUIRE(p);
    CHECK(p->size() == plan::planned_size(*tree, edits));
    const auto out = execute(*p, bytes, other);
    // The result parses, the tensor's raw_data is the other source's bytes, the unknown
    // field survived in place.
    const auto reparsed = onnx::message_tree::parse(out);
    REQUIRE(reparsed);
    const auto& new_raw = reparsed->fields(2)[3];
    CHECK(new_raw.number() == 9);
    const auto payload = reparsed->payload(new_raw);
    CHECK(std::equal(payload.begin(), payload.end(), other.begin(), other.end()));
    CHECK(reparsed->find_text(0, 1234) == "unknown");
    CHECK(reparsed->find_text(0, 2) == "test");
}

TEST_CASE("insertions keep their order at one position; appends go last") {
    const auto bytes = sample_model();
    const auto tree = onnx::message_tree::parse(bytes);
    REQUIRE(tree);
    onnx::tree_edits edits;
    edits.insert(1, 2, edits.text(1001, "z"));  // graph: after name and initializer
    // An unknown field: a singular one (doc_string) may not appear twice in a model.
    edits.insert(1, 0, edits.text(1000, "first"));
    edits.insert(1, 0, edits.text(1000, "second"));
    const auto p = plan::plan_rewrite(*tree, edits);
    REQUIRE(p);
    const auto out = execute(*p, bytes);
    const auto reparsed = onnx::message_tree::parse(out);
    REQUIRE(reparsed);
    const auto fields = reparsed->fields(1);
    REQUIRE(fields.size() == 5);
    CHECK(reparsed->text(fields[0]) == "first");
    CHECK(reparsed->text(fields[1]) == "second");
    CHECK(fields[2].number() == 2);
    CHECK(fields[3].number() == 5);
    CHECK(reparsed->text(fields[4]) == "z");
}

TEST_CASE("a run of encoded fields is written as it is, in one insertion, between the insertions around it") {
    const auto bytes = sample_model();
    const auto tree = onnx::message_tree::parse(bytes);
    REQUIRE(tree);
    onnx::tree_edits edits;
    edits.insert(1, 2, edits.text(1000, "before"));
    auto run = edits.encoded_fields();
    for (const std::string_view text : {std::string_view("a"), std::string_view("bb"), std::string_view("c\0c", 3)})
        edits.append_encoded(run, 1001, std::as_bytes(std::span(text.data(), text.size())));
    CHECK(run.length == 3 * 3 + 1 + 2 + 3);  // a tag and a length a field, then its bytes
    edits.insert(1, 2, run);
    edits.insert(1, 2, edits.text(1000, "after"));
    const auto p = plan::plan_rewrite(*tree, edits);
    REQUIRE(p);
    CHECK(p->size() == plan::planned_size(*tree, edits));
    const auto out = execute(*p, bytes);
    const auto reparsed = onnx::message_tree::parse(out);
    REQUIRE(reparsed);
    const auto fields = reparsed->fields(1);
    REQUIRE(fields.size() == 7);
    CHECK(reparsed->text(fields[2]) == "before");
    CHECK(fields[3].number() == 1001);
    CHECK(reparsed->text(fields[3]) == "a");
    CHECK(reparsed->text(fields[4]) == "bb");
    CHECK(reparsed->text(fields[5]) == std::string_view("c\0c", 3));
    CHECK(reparsed->text(fields[6]) == "after");
}

TEST_CASE("an output over the size limit fails before any operation is planned") {
    const auto bytes = sample_model();
    const auto tree = onnx::message_tree::parse(bytes);
    REQUIRE(tree);
    onnx::tree_edits edits;
    edits.insert(2, 0, edits.slice(9, 1, 0, 3ULL << 30));
    const auto size = plan::planned_size(*tree, edits);
    CHECK(size > plan::protobuf_limit);
    const auto p = plan::plan_rewrite(*tree, edits);
    REQUIRE_FALSE(p);
    CHECK(p.error().code == error_code::too_large);
    REQUIRE(p.error().remedies.size() == 1);
    CHECK(p.error().remedies[0].change == remedy::keep_external_data);  // the CLI: 'onnxstream repack'
    CHECK(p.error().hint.find("{0}") != std::string::npos);
}

TEST_CASE("a converted slice becomes one convert operation of half the bytes, sized before it is written") {
    const auto bytes = sample_model();
    const auto tree = onnx::message_tree::parse(bytes);
    REQUIRE(tree);
    const std::uint32_t tensor = 2;
    const auto& raw = tree->fields(tensor)[3];
    REQUIRE(raw.number() == 9);
    onnx::tree_edits edits;
    edits.drop(static_cast<std::uint32_t>(&raw - tree->all_fields().data()));
    // 2 float32 values (8 bytes) at the raw payload become 4 bytes of float16.
    edits.insert(tensor, 3, edits.converted_slice(9, 0, raw.payload_offset(), 4, onnx::float_conversion::float32_to_float16));
    const auto p = plan::plan_rewrite(*tree, edits);
    REQUIRE(p);
    CHECK(p->size() == bytes.size() - 4);
    CHECK(p->size() == plan::planned_size(*tree, edits));
    std::size_t converts = 0;
    for (const auto& op : p->operations()) {
        if (op.kind != plan::operation_kind::convert) continue;
        ++converts;
        CHECK(op.length == 4);
        CHECK(op.input_offset == raw.payload_offset());
        CHECK(op.conversion == onnx::float_conversion::float32_to_float16);
    }
    CHECK(converts == 1);
    CHECK(p->describe().find(" to float16") != std::string::npos);
}

TEST_CASE("a labelled slice names the tensor being written for progress, from its field on") {
    const labelled_rewrite r;
    const auto p = plan::plan_rewrite(r.tree, r.edits);
    REQUIRE(p);
    // Everything before the new field is unlabelled; from its tag to the end, "w".
    CHECK(p->label_at(0).empty());
    CHECK(p->label_at(p->size() - 1) == "w");
    std::uint64_t first = p->size();
    for (std::uint64_t offset = 0; offset < p->size(); ++offset)
        if (!p->label_at(offset).empty()) first = std::min(first, offset);
    CHECK(first + 2 + r.other.size() <= p->size());
}

TEST_CASE("an inlined raw_data plans as the labelled slice it stands for: the same bytes, label and check") {
    const labelled_rewrite slice;
    onnx::tree_edits edits;
    const auto& raw = slice.tree.fields(2)[3];
    edits.drop(static_cast<std::uint32_t>(&raw - slice.tree.all_fields().data()));
    const auto check = edits.add_check({.tensor = "w", .expected_sha1 = {}});
    edits.set_inlined_values([&](std::uint32_t record) {
        CHECK(record == 42);
        return onnx::inlined_value{1, 0, slice.other.size()};
    });
    edits.insert_inlined(2, 3, 42, check);
    // The slice with the same check, for the operations to compare.
    onnx::tree_edits expected;
    expected.drop(static_cast<std::uint32_t>(&raw - slice.tree.all_fields().data()));
    auto field = expected.slice(9, 1, 0, slice.other.size(), expected.add_check({.tensor = "w", .expected_sha1 = {}}));
    field.label = expected.add_label("w");
    expected.insert(2, 3, field);
    const auto p = plan::plan_rewrite(slice.tree, edits);
    const auto e = plan::plan_rewrite(slice.tree, expected);
    REQUIRE(p);
    REQUIRE(e);
    CHECK(p->describe() == e->describe());
    CHECK(execute(*p, slice.bytes, slice.other) == execute(*e, slice.bytes, slice.other));
    CHECK(p->size() == plan::planned_size(slice.tree, edits));
    CHECK(p->label_at(p->size() - 1) == "w");  // the tensor's own name field
    CHECK(p->label_at(0).empty());
    std::size_t checked = 0;
    for (const auto& op : p->operations()) checked += op.check == check ? 1 : 0;
    CHECK(checked == 1);
}

TEST_CASE("an inlined raw_data in a body read again is labelled with its name there, after its drops") {
    // A tensor whose fields the tree dropped (on demand): its drops are in its body.
    proto_builder t;
    t.varint_field(1, 4).varint_field(2, 1).string_field(8, "w0").varint_field(14, 1);
    proto_builder graph;
    graph.message_field(5, t);
    const auto bytes = model_holding(graph);
    const auto tree = parse_on_demand(bytes);
    const auto tensor = tensor_messages(tree).at(0);
    REQUIRE_FALSE(tree.stores_fields(tensor));
    const auto other = test_support::float_bytes({1, 2, 3, 4});
    onnx::tree_edits edits;
    edits.drop(tree, tensor, 3);  // data_location
    edits.set_inlined_values([&](std::uint32_t) { return onnx::inlined_value{1, 0, other.size()}; });
    edits.insert_inlined(tensor, 3, 0);
    const auto p = plan::plan_rewrite(tree, edits);
    REQUIRE(p);
    CHECK(p->size() == plan::planned_size(tree, edits));
    CHECK(p->label_at(p->size() - 1) == "w0");
    const auto out = execute(*p, bytes, other);
    const auto reparsed = onnx::message_tree::parse(out);
    REQUIRE(reparsed);
    const auto fields = reparsed->fields(tensor_messages(*reparsed).at(0));
    REQUIRE(fields.size() == 4);
    CHECK(fields[3].number() == 9);
    CHECK(fields[3].payload_length() == other.size());
}

TEST_CASE("a body whose only edits are an inlined raw_data and the drops its value names is sized from their bytes, unread") {
    // A merged tensor: its fields dropped by the tree, its external entries and
    // data_location dropped in its body, its raw_data inserted where they were.
    proto_builder entry;
    entry.string_field(1, "location").string_field(2, "w.data");
    proto_builder t;
    t.varint_field(1, 4).varint_field(2, 1).string_field(8, "w0").message_field(13, entry).varint_field(14, 1);
    proto_builder graph;
    graph.message_field(5, t);
    const auto bytes = model_holding(graph);
    const auto tree = parse_on_demand(bytes);
    const auto tensor = tensor_messages(tree).at(0);
    REQUIRE_FALSE(tree.stores_fields(tensor));
    const auto body = onnx::message_tree::body(tree, tensor);
    REQUIRE(body);
    const auto fields = body->fields(0);
    REQUIRE(fields.size() == 5);
    const auto value_bytes = static_cast<std::uint32_t>(fields[3].total_length() + fields[4].total_length());
    const auto other = test_support::float_bytes({1, 2, 3, 4});
    // The edits with `value` as the insertion's value, and the bytes they write.
    struct planned {
        std::uint64_t size = 0;
        std::uint64_t written = 0;
        int reads = 0;  // bodies the size pass read
        std::vector<std::byte> out;
    };
    const auto plan_with = [&](onnx::inlined_value value) {
        onnx::tree_edits edits;
        edits.drop(tree, tensor, 3);
        edits.drop(tree, tensor, 4);
        edits.set_inlined_values([&](std::uint32_t) { return value; });
        edits.insert_inlined(tensor, 3, 0);
        planned r;
        r.size = plan::planned_size(tree, edits, [&](std::uint64_t) { ++r.reads; });
        const auto p = plan::plan_rewrite(tree, edits);
        REQUIRE(p);
        r.written = p->size();
        r.out = execute(*p, bytes, other);
        return r;
    };
    const auto read = plan_with({1, 0, other.size()});
    CHECK(read.reads == 1);
    CHECK(read.size == read.written);
    const auto unread = plan_with({1, 0, other.size(), (1U << 3) | (1U << 4), value_bytes});
    CHECK(unread.reads == 0);
    CHECK(unread.size == read.size);
    CHECK(unread.written == read.written);
    CHECK(unread.out == read.out);
    // The bytes are trusted: one too many makes a size one short of what is written.
    const auto wrong = plan_with({1, 0, other.size(), (1U << 3) | (1U << 4), value_bytes + 1});
    CHECK(wrong.reads == 0);
    CHECK(wrong.size + 1 == wrong.written);
    // Drops other than those the value names (or more edits) read the body as before.
    const auto other_drops = plan_with({1, 0, other.size(), 1U << 3, value_bytes});
    CHECK(other_drops.reads == 1);
    CHECK(other_drops.size == read.size);
}

TEST_CASE("an inline_body row plans as the drops and insert_inlined it stands for: the same bytes, sizes and labels") {
    // Two merged tensors whose fields the tree dropped: their external_data entry and
    // data_location (positions 3 and 4) replaced by raw_data.
    proto_builder entry;
    entry.string_field(1, "location").string_field(2, "w.data");
    proto_builder graph;
    for (const char* name : {"w0", "w1"}) {
        proto_builder t;
        t.varint_field(1, 4).varint_field(2, 1).string_field(8, name).message_field(13, entry).varint_field(14, 1);
        graph.message_field(5, t);
    }
    const auto bytes = model_holding(graph);
    const auto tree = parse_on_demand(bytes);
    const auto t = tensor_messages(tree);
    REQUIRE(t.size() == 2);
    REQUIRE_FALSE(tree.stores_fields(t[0]));
    const auto body = onnx::message_tree::body(tree, t[0]);
    REQUIRE(body);
    const auto fields = body->fields(0);
    REQUIRE(fields.size() == 5);
    const auto value_bytes = static_cast<std::uint32_t>(fields[3].total_length() + fields[4].total_length());
    // Record r: the r-th 16 bytes of source 1.
    const auto other = test_support::float_bytes({1, 2, 3, 4, 5, 6, 7, 8});
    bool last = false;  // the rows' values say their fields are the body's last (they are)
    const auto values = [&](std::uint32_t record) {
        return onnx::inlined_value{1, 16ULL * record, 16, (1U << 3) | (1U << 4), value_bytes, last};
    };
    struct planned {
        std::uint64_t size = 0;
        int reads = 0;  // bodies the size pass read
        std::uint64_t written = 0;
        std::string operations;
        std::vector<std::string> labels;  // at the end of each tensor's raw_data, in order
        std::vector<std::byte> out;
    };
    const auto plan_with = [&](const std::function<void(onnx::tree_edits&)>& edit) {
        onnx::tree_edits edits;
        edits.set_inlined_values(values);
        edit(edits);
        planned r;
        r.size = plan::planned_size(tree, edits, [&](std::uint64_t) { ++r.reads; });
        const auto p = plan::plan_rewrite(tree, edits);
        REQUIRE(p);
        r.written = p->size();
        r.operations = p->describe();
        for (const auto& op : p->operations())
            if (op.source == 1) r.labels.emplace_back(p->label_at(op.output_offset + op.length - 1));
        r.out = execute(*p, bytes, other);
        return r;
    };
    const auto same = [](const planned& a, const planned& b) {
        CHECK(a.size == b.size);
        CHECK(a.written == b.written);
        CHECK(a.operations == b.operations);
        CHECK(a.labels == b.labels);
        CHECK(a.out == b.out);
    };
    const auto explicit_form = [&](onnx::tree_edits& edits, std::uint32_t tensor, std::uint32_t record) {
        edits.drop(tree, tensor, 3);
        edits.drop(tree, tensor, 4);
        edits.insert_inlined(tensor, 3, record);
    };

    const auto dropped_and_inserted = plan_with([&](onnx::tree_edits& edits) {
        explicit_form(edits, t[0], 0);
        explicit_form(edits, t[1], 1);
    });
    const auto rows = plan_with([&](onnx::tree_edits& edits) {
        edits.inline_body(tree, t[1], 1);  // out of order: the rows are sorted
        edits.inline_body(tree, t[0], 0);
    });
    same(rows, dropped_and_inserted);
    CHECK(rows.size == rows.written);
    CHECK(rows.reads == 0);  // sized from the value's bytes, unread
    // Written unread too (the bytes before the value fields, then raw_data): the same.
    last = true;
    const auto rows_unread = plan_with([&](onnx::tree_edits& edits) {
        edits.inline_body(tree, t[0], 0);
        edits.inline_body(tree, t[1], 1);
    });
    same(rows_unread, dropped_and_inserted);
    // Streamed, each window names its tensors by message: the names read when asked.
    {
        onnx::tree_edits edits;
        edits.set_inlined_values(values);
        edits.inline_body(tree, t[0], 0);
        edits.inline_body(tree, t[1], 1);
        auto stream = plan::stream_rewrite(tree, edits);
        REQUIRE(stream);
        plan::write_plan window;
        std::vector<std::string> labels;
        while (stream->next(window, 1))
            for (const auto& op : window.operations())
                if (op.source == 1) labels.emplace_back(window.label_at(op.output_offset + op.length - 1));
        CHECK(labels == std::vector<std::string>{"w0", "w1"});
    }
    last = false;
    CHECK(rows.labels == std::vector<std::string>{"w0", "w1"});
    // The output holds each tensor's own 16 bytes as raw_data where its entries were.
    const auto reparsed = onnx::message_tree::parse(rows.out);
    REQUIRE(reparsed);
    const auto merged = tensor_messages(*reparsed);
    REQUIRE(merged.size() == 2);
    for (std::uint32_t r = 0; r < 2; ++r) {
        const auto out_fields = reparsed->fields(merged[r]);
        REQUIRE(out_fields.size() == 4);
        CHECK(out_fields[3].number() == 9);
        const auto payload = std::span(rows.out).subspan(out_fields[3].payload_offset(), out_fields[3].payload_length());
        CHECK(std::equal(payload.begin(), payload.end(), other.begin() + 16 * r, other.begin() + 16 * (r + 1)));
    }

    // More edits in a body (a drop, a field inserted where raw_data goes): the body is
    // read, raw_data comes first at its position, as insert_inlined called first would.
    const auto more_explicit = plan_with([&](onnx::tree_edits& edits) {
        explicit_form(edits, t[0], 0);
        edits.drop(tree, t[0], 1);
        edits.insert(t[0], 3, edits.varint(1000, 7));
        explicit_form(edits, t[1], 1);
    });
    const auto more_rows = plan_with([&](onnx::tree_edits& edits) {
        edits.inline_body(tree, t[0], 0);
        edits.drop(tree, t[0], 1);
        edits.insert(t[0], 3, edits.varint(1000, 7));
        edits.inline_body(tree, t[1], 1);
    });
    same(more_rows, more_explicit);
    CHECK(more_rows.size == more_rows.written);
    CHECK(more_rows.reads == 1);
    CHECK(more_rows.out != rows.out);
    // Its value fields last or not, a body with more edits is read.
    last = true;
    same(plan_with([&](onnx::tree_edits& edits) {
             edits.inline_body(tree, t[0], 0);
             edits.drop(tree, t[0], 1);
             edits.insert(t[0], 3, edits.varint(1000, 7));
             edits.inline_body(tree, t[1], 1);
         }),
         more_explicit);
}

TEST_CASE("sizes of 4 GiB and more are planned exactly, at every level, and refused past the limit") {
    // raw_data of 5 GiB and of 4 GiB - 1 (the largest kept in 4 bytes) in two tensors: their
    // messages, the graph and the model each need the size exactly.
    proto_builder graph;
    for (const char* name : {"big", "edge"}) {
        proto_builder t;
        t.varint_field(1, 1).varint_field(2, 1).string_field(8, name).varint_field(14, 1);
        graph.message_field(5, t);
    }
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto bytes = model.take();
    for (const auto tensors : {onnx::tensor_fields::stored, onnx::tensor_fields::on_demand}) {
        CAPTURE(static_cast<int>(tensors));
        onnx::tree_options options;
        options.tensors = tensors;
        const auto tree = onnx::message_tree::parse(bytes, options);
        REQUIRE(tree);
        const auto t = tensor_messages(*tree);
        REQUIRE(t.size() == 2);
        constexpr std::uint64_t big = 5ULL << 30;
        constexpr std::uint64_t edge = (1ULL << 32) - 1;
        onnx::tree_edits edits;
        edits.set_inlined_values([&](std::uint32_t record) { return onnx::inlined_value{1, 0, record == 0 ? big : edge}; });
        edits.insert_inlined(t[0], 4, 0);
        edits.insert_inlined(t[1], 4, 1);
        const auto raw = [](std::uint64_t length) { return proto::length_delimited_field_size(9, length); };
        const auto tensor_size = [&](std::uint32_t m, std::uint64_t length) {
            return tree->payload_range(m).length + raw(length);
        };
        const auto graph_size = proto::length_delimited_field_size(5, tensor_size(t[0], big)) +
                                proto::length_delimited_field_size(5, tensor_size(t[1], edge));
        const auto expected = 2 + proto::length_delimited_field_size(7, graph_size);  // ir_version, graph
        CHECK(plan::planned_size(*tree, edits) == expected);
        const auto refused = plan::stream_rewrite(*tree, edits);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == error_code::too_large);
        CHECK(refused.error().message.find(std::to_string(expected)) != std::string::npos);
    }
}

TEST_CASE("a label by message reads its name when asked, and a plan appending it keeps the name") {
    const std::vector<std::string> names{"first", "second"};
    int reads = 0;
    plan::write_plan window;
    const std::vector<std::byte> bytes(4);
    window.label_message(1);
    window.emit(bytes);
    window.label("named");
    window.emit(bytes);
    window.label_message(0);
    window.emit(bytes);
    CHECK(window.label_at(0).empty());  // no namer yet: no name
    window.set_namer([&](std::uint32_t m) {
        ++reads;
        return std::string_view(names[m]);
    });
    CHECK(reads == 0);
    CHECK(window.label_at(3) == "second");
    CHECK(window.label_at(4) == "named");
    CHECK(window.label_at(11) == "first");
    CHECK(reads == 2);
    // A label at the offset of the last one replaces it, whatever its kind.
    window.label("replaced");
    window.label_message(1);
    window.emit(bytes);
    CHECK(window.label_at(12) == "second");
    window.label_message(0);
    window.label("replaced");
    window.emit(bytes);
    CHECK(window.label_at(16) == "replaced");
    plan::write_plan whole;
    whole.append(window);
    window.set_namer({});  // what the namer read is gone: the appended plan holds the names
    CHECK(whole.label_at(0) == "second");
    CHECK(whole.label_at(5) == "named");
    CHECK(whole.label_at(8) == "first");
    CHECK(whole.label_at(12) == "second");
    CHECK(whole.label_at(19) == "replaced");
    CHECK(window.label_at(8).empty());
}

TEST_CASE("a plan streamed a window at a time holds the same operations as the whole plan") {
    labelled_rewrite r;
    const auto& tree = r.tree;
    auto& edits = r.edits;
    edits.insert(1, 0, edits.text(1000, "first"));
    edits.insert(2, 0, edits.varint(1000, 7));  // an unknown field
    edits.insert_external(2, 4, edits.add_external({"w.data", 0, 32, std::string("ab")}));
    const auto whole = plan::plan_rewrite(tree, edits);
    REQUIRE(whole);
    CHECK(whole->size() == plan::planned_size(tree, edits));
    for (const std::size_t per_window : {std::size_t{1}, std::size_t{2}, std::size_t{1000}}) {
        CAPTURE(per_window);
        auto stream = plan::stream_rewrite(tree, edits);
        REQUIRE(stream);
        CHECK(stream->size() == whole->size());
        plan::write_plan window;
        plan::write_plan joined;
        std::size_t windows = 0;
        std::vector<std::byte> out(whole->size());
        while (stream->next(window, per_window)) {
            ++windows;
            // A step of the walk adds a field and the insertions before it: a few operations.
            CHECK(window.operations().size() <= per_window + 3);
            // Each window executes on its own: its emits' bytes are in its pool.
            const auto part = execute(window, r.bytes, r.other);
            for (const auto& op : window.operations())
                std::memcpy(out.data() + op.output_offset, part.data() + op.output_offset, op.length);
            joined.append(window);
        }
        CHECK(windows >= (per_window == 1 ? whole->operations().size() : 1));
        CHECK(out == execute(*whole, r.bytes, r.other));
        CHECK(joined.describe() == whole->describe());
        CHECK(joined.label_at(joined.size() - 1) == "w");
    }
    // The external fields are the ones the record says.
    const auto rewritten = execute(*whole, r.bytes, r.other);  // the tree views these bytes
    const auto reparsed = onnx::message_tree::parse(rewritten);
    REQUIRE_MESSAGE(reparsed, (reparsed ? "" : reparsed.error().describe()));
    std::vector<std::string_view> locations;
    for (const auto& f : reparsed->fields(2))
        if (f.number() == 13 && f.child != onnx::no_index) locations.push_back(reparsed->find_text(f.child, 2));
    CHECK(locations == std::vector<std::string_view>{"w.data", "0", "32", "ab"});
}

namespace {

// A graph of three initializers (the middle one with two value fields) and a node: a
// tree parsed on demand drops the three tensors' fields.
std::vector<std::byte> three_tensors() {
    proto_builder graph;
    proto_builder node;
    node.string_field(1, "a").string_field(2, "y").string_field(4, "Relu");
    graph.message_field(1, node).string_field(2, "g");
    proto_builder a;
    a.varint_field(1, 2).varint_field(2, 1).string_field(8, "a").bytes_field(9, test_support::float_bytes({1, 2}));
    proto_builder b;
    b.varint_field(1, 3).varint_field(2, 1).fixed32_field(4, 7).string_field(8, "b").fixed32_field(4, 9);
    proto_builder c;
    c.string_field(8, "c").varint_field(2, 1).bytes_field(9, test_support::float_bytes({5}));
    graph.message_field(5, a).message_field(5, b).message_field(5, c);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph).string_field(1234, "unknown");
    return model.take();
}

std::vector<std::byte> rewritten(const onnx::message_tree& tree, const onnx::tree_edits& edits,
                                 std::span<const std::byte> bytes) {
    const auto p = plan::plan_rewrite(tree, edits);
    REQUIRE(p);
    CHECK(p->size() == plan::planned_size(tree, edits));
    return execute(*p, bytes);
}

}  // namespace

TEST_CASE("drops by position in a dropped body write the bytes the same drops by field index write") {
    const auto bytes = three_tensors();
    const auto full = parse_tree(bytes, onnx::tensor_fields::stored);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensors = tensor_messages(full);
    REQUIRE(tensors == tensor_messages(lazy));
    REQUIRE(tensors.size() == 3);
    for (const auto t : tensors) REQUIRE_FALSE(lazy.stores_fields(t));
    // a: raw_data dropped, a slice in its place and an external record after it all; b:
    // its first and last fields dropped, a field inserted between the others; c untouched.
    const std::vector<std::byte> payload = test_support::float_bytes({3, 4});
    auto edit = [&](onnx::tree_edits& edits, auto&& drop) {
        drop(tensors[0], 3U);
        edits.insert(tensors[0], 3, edits.bytes(9, payload));
        edits.insert_external(tensors[0], 4, edits.add_external({"x.data", 8, 16, std::nullopt}));
        drop(tensors[1], 4U);
        drop(tensors[1], 0U);
        edits.insert(tensors[1], 2, edits.varint(1000, 5));
    };
    onnx::tree_edits by_index;
    edit(by_index, [&](std::uint32_t m, std::uint32_t position) { by_index.drop(full.at(m).first_field + position); });
    onnx::tree_edits by_position;
    edit(by_position, [&](std::uint32_t m, std::uint32_t position) { by_position.drop(lazy, m, position); });
    const auto expected = rewritten(full, by_index, bytes);
    CHECK(expected != bytes);
    CHECK(rewritten(lazy, by_position, bytes) == expected);
    // What was kept and what went: b keeps data_type, one float_data and its name, with the
    // new field before the float_data.
    const auto reparsed = onnx::message_tree::parse(expected);
    REQUIRE(reparsed);
    const auto b = reparsed->fields(tensor_messages(*reparsed)[1]);
    REQUIRE(b.size() == 4);
    CHECK(b[0].number() == 2);
    CHECK(b[1].number() == 1000);
    CHECK(b[2].number() == 4);
    CHECK(reparsed->text(b[3]) == "b");
    // Windows of one operation: the body is read again as the walk reaches it.
    auto stream = plan::stream_rewrite(lazy, by_position);
    REQUIRE(stream);
    std::vector<std::byte> out(stream->size());
    plan::write_plan window;
    while (stream->next(window, 1)) {
        const auto part = execute(window, bytes);
        for (const auto& op : window.operations())
            std::memcpy(out.data() + op.output_offset, part.data() + op.output_offset, op.length);
    }
    CHECK(out == expected);
}

TEST_CASE("store_external and drop_value_fields address a dropped body by position, with the full tree's result") {
    const auto bytes = three_tensors();
    const auto full = parse_tree(bytes, onnx::tensor_fields::stored);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensors = tensor_messages(full);
    auto edit = [&](const onnx::message_tree& tree, onnx::tree_edits& edits) {
        onnx::store_external(tree, tensors[0], onnx::external_entry{"w.data", 0, 8, std::nullopt}, edits);
        onnx::store_external(tree, tensors[1], onnx::external_entry{"w.data", 64, 8, std::string("00ff")}, edits);
        const auto position = onnx::drop_value_fields(tree, tensors[2], edits);
        CHECK(position == 2);
        edits.insert(tensors[2], position, edits.bytes(9, test_support::float_bytes({6})));
    };
    onnx::tree_edits on_full;
    edit(full, on_full);
    onnx::tree_edits on_lazy;
    edit(lazy, on_lazy);
    CHECK(on_full.body_drops().empty());
    CHECK(on_lazy.dropped_fields().empty());
    CHECK(on_lazy.body_drops().size() == 3);  // a's raw_data, b's two float_data (one row), c's raw_data
    const auto expected = rewritten(full, on_full, bytes);
    CHECK(rewritten(lazy, on_lazy, bytes) == expected);
    // The same edits given the fields of one read of each body (an operation that edits
    // more of a tensor than its value reads it once).
    onnx::tree_edits on_read;
    std::vector<onnx::message_fields> reads;
    for (const auto t : tensors) {
        auto read = onnx::message_fields::read(lazy, t);
        REQUIRE(read);
        reads.push_back(std::move(read).value());
    }
    onnx::store_external(lazy, tensors[0], reads[0].fields(), onnx::external_entry{"w.data", 0, 8, std::nullopt}, on_read);
    onnx::store_external(lazy, tensors[1], reads[1].fields(), onnx::external_entry{"w.data", 64, 8, std::string("00ff")},
                         on_read);
    const auto position = onnx::drop_value_fields(lazy, tensors[2], reads[2].fields(), on_read);
    CHECK(position == 2);
    on_read.insert(tensors[2], position, on_read.bytes(9, test_support::float_bytes({6})));
    CHECK(on_read.body_drops().size() == 3);
    CHECK(rewritten(lazy, on_read, bytes) == expected);
    const auto reparsed = onnx::message_tree::parse(expected);
    REQUIRE(reparsed);
    const auto b = reparsed->fields(tensor_messages(*reparsed)[1]);
    CHECK(b.back().number() == 14);  // data_location, after the entries
    for (const auto& f : b) CHECK(f.number() != 4);
}

TEST_CASE("drops in a body past its 32nd field (rows of several words) rewrite as the full tree does") {
    // A tensor of 70 unpacked float_data values between its other fields: its value
    // fields are positions 2..36 and 38..72, three words of drops.
    proto_builder t;
    t.varint_field(1, 70).varint_field(2, 1);
    for (std::uint32_t i = 0; i < 35; ++i) t.fixed32_field(4, i);
    t.string_field(8, "many");
    for (std::uint32_t i = 35; i < 70; ++i) t.fixed32_field(4, i);
    t.string_field(1000, "after");  // an unknown field, kept
    proto_builder graph;
    graph.message_field(5, t).message_field(5, t);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto bytes = model.take();
    const auto full = parse_tree(bytes, onnx::tensor_fields::stored);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensors = tensor_messages(full);
    REQUIRE(tensors.size() == 2);
    onnx::tree_edits on_full;
    onnx::tree_edits on_lazy;
    for (auto [tree, edits] : {std::pair{&full, &on_full}, std::pair{&lazy, &on_lazy}}) {
        // The second tensor's drops first: the rows are sorted when read.
        onnx::store_external(*tree, tensors[1], onnx::external_entry{"w.data", 0, 280, std::nullopt}, *edits);
        const auto position = onnx::drop_value_fields(*tree, tensors[0], *edits);
        CHECK(position == 2);
        edits->insert(tensors[0], position, edits->bytes(9, test_support::float_bytes({6})));
    }
    CHECK(on_lazy.body_drops().size() == 6);  // three words each
    const auto expected = rewritten(full, on_full, bytes);
    CHECK(rewritten(lazy, on_lazy, bytes) == expected);
    const auto reparsed = onnx::message_tree::parse(expected);
    REQUIRE(reparsed);
    for (const auto m : tensor_messages(*reparsed)) {
        std::vector<std::uint32_t> numbers;
        for (const auto& f : reparsed->fields(m)) numbers.push_back(f.number());
        CHECK(std::count(numbers.begin(), numbers.end(), 4) == 0);
        CHECK(std::count(numbers.begin(), numbers.end(), 8) == 1);
        CHECK(std::count(numbers.begin(), numbers.end(), 1000) == 1);
    }
}

TEST_CASE("the planner reads dropped bodies in file order in each pass, and says where it is") {
    const auto bytes = three_tensors();
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensors = tensor_messages(lazy);
    onnx::tree_edits edits;
    for (const auto t : tensors) onnx::store_external(lazy, t, onnx::external_entry{"w.data", 0, 4, std::nullopt}, edits);
    std::vector<std::uint64_t> reached;
    auto stream = plan::stream_rewrite(lazy, edits, {}, [&reached](std::uint64_t offset) { reached.push_back(offset); });
    REQUIRE(stream);
    plan::write_plan window;
    while (stream->next(window)) {
    }
    std::vector<std::uint64_t> bodies;
    for (const auto t : tensors) bodies.push_back(lazy.payload_range(t).offset);
    std::vector<std::uint64_t> twice = bodies;
    twice.insert(twice.end(), bodies.begin(), bodies.end());
    CHECK(reached == twice);
}

TEST_CASE("a dropped body that no longer tokenizes is kept whole, at the size the plan says") {
    auto bytes = three_tensors();
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensors = tensor_messages(lazy);
    onnx::tree_edits edits;
    edits.drop(lazy, tensors[0], 3);
    edits.insert(tensors[0], 4, edits.varint(1000, 1));
    // The file changed under the tree: the body's first tag is now a wire type protobuf has not.
    bytes[lazy.payload_range(tensors[0]).offset] = std::byte{0x0F};
    const auto p = plan::plan_rewrite(lazy, edits);
    REQUIRE(p);
    CHECK(p->size() == plan::planned_size(lazy, edits));
    CHECK(p->size() == bytes.size() + 3);  // nothing dropped, the varint field (3 bytes) added
    CHECK(execute(*p, bytes).size() == p->size());
}

TEST_CASE("an edited external body read again is written with its entries, whatever the tree's messages are") {
    // Inside a body read again, a field's child index numbers the body's own messages: the
    // walk must copy the external_data entries whole, not enter the tree's message of that
    // index (message 1 is the graph, dirty in every edit).
    proto_builder graph;
    graph.string_field(2, "g");
    proto_builder tensor;
    tensor.varint_field(1, 4).varint_field(2, 1).string_field(8, "w");
    for (const auto& [key, value] : {std::pair{"location", "w.data"}, std::pair{"offset", "0"}, std::pair{"length", "16"}}) {
        proto_builder entry;
        entry.string_field(1, key).string_field(2, value);
        tensor.message_field(13, entry);
    }
    tensor.varint_field(14, 1);
    graph.message_field(5, tensor);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    const auto bytes = model.take();
    const auto full = parse_tree(bytes, onnx::tensor_fields::stored);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto on_full = tensor_messages(full);
    const auto on_lazy = tensor_messages(lazy);
    REQUIRE(on_full.size() == 1);
    REQUIRE(on_lazy.size() == 1);
    REQUIRE_FALSE(lazy.stores_fields(on_lazy[0]));
    auto edit = [](onnx::tree_edits& edits, std::uint32_t t) {
        edits.insert(t, 0, edits.varint(1000, 7));
        edits.insert(t, 6, edits.text(12, "a doc string"));
    };
    onnx::tree_edits full_edits;
    edit(full_edits, on_full[0]);
    onnx::tree_edits lazy_edits;
    edit(lazy_edits, on_lazy[0]);
    const auto expected = rewritten(full, full_edits, bytes);
    CHECK(rewritten(lazy, lazy_edits, bytes) == expected);
    const auto reparsed = onnx::message_tree::parse(expected);
    REQUIRE(reparsed);
    std::vector<std::string_view> entries;
    for (const auto& f : reparsed->fields(tensor_messages(*reparsed)[0]))
        if (f.number() == 13 && f.child != onnx::no_index) entries.push_back(reparsed->find_text(f.child, 2));
    CHECK(entries == std::vector<std::string_view>{"w.data", "0", "16"});
}

namespace {

std::vector<std::byte> bytes_of(std::initializer_list<unsigned> values) {
    std::vector<std::byte> out;
    for (const auto v : values) out.push_back(static_cast<std::byte>(v));
    return out;
}

// A model of one tensor (dims, data_type, name, raw_data) whose raw_data holds `values`.
std::vector<std::byte> one_tensor(const std::vector<std::byte>& raw) {
    proto_builder t;
    t.varint_field(1, raw.size() / 4).varint_field(2, 1).string_field(8, "w").bytes_field(9, raw);
    proto_builder graph;
    graph.string_field(2, "g").message_field(5, t);
    proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    return model.take();
}

}  // namespace

TEST_CASE("a converted insertion writes its field's float32 values as 16-bit bytes of the plan, in a body read again too") {
    const auto bytes = three_tensors();
    const auto full = parse_tree(bytes, onnx::tensor_fields::stored);
    const auto lazy = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensors = tensor_messages(full);
    const auto half = onnx::float_conversion::float32_to_float16;
    // a's raw_data {1, 2} (position 3) and c's {5} (position 2), converted where they are;
    // the same rewrite with the float16 bytes written out by hand (1 = 0x3c00, 2 = 0x4000,
    // 5 = 0x4500) is what the planner must write.
    auto convert = [&](const onnx::message_tree& tree, onnx::tree_edits& edits) {
        edits.drop(tree, tensors[0], 3);
        edits.insert_converted(tensors[0], 3, 9, half);
        edits.drop(tree, tensors[2], 2);
        edits.insert_converted(tensors[2], 2, 9, half);
    };
    onnx::tree_edits by_hand;
    by_hand.drop(full, tensors[0], 3);
    by_hand.insert(tensors[0], 3, by_hand.bytes(9, bytes_of({0x00, 0x3c, 0x00, 0x40})));
    by_hand.drop(full, tensors[2], 2);
    by_hand.insert(tensors[2], 2, by_hand.bytes(9, bytes_of({0x00, 0x45})));
    const auto expected = rewritten(full, by_hand, bytes);
    CHECK(expected.size() == bytes.size() - 6);
    for (const auto* tree : {&full, &lazy}) {
        onnx::tree_edits edits;
        convert(*tree, edits);
        const auto p = plan::plan_rewrite(*tree, edits);
        REQUIRE(p);
        for (const auto& op : p->operations()) CHECK(op.kind != plan::operation_kind::convert);
        CHECK(rewritten(*tree, edits, bytes) == expected);
    }
}

TEST_CASE("a stream counts the float16 values its own conversions saturated") {
    const auto bytes = one_tensor(test_support::float_bytes({1e6F, 1, -1e6F, 70000}));
    const auto tree = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensor = tensor_messages(tree).at(0);
    onnx::tree_edits edits;
    edits.drop(tree, tensor, 3);
    edits.insert_converted(tensor, 3, 9, onnx::float_conversion::float32_to_float16);
    auto stream = plan::stream_rewrite(tree, edits);
    REQUIRE(stream);
    CHECK(stream->saturated() == 0);  // nothing converted before it is asked for
    plan::write_plan window;
    while (stream->next(window)) {
    }
    CHECK(stream->saturated() == 3);
}

TEST_CASE("a converted insertion over 4 KiB is a convert operation of the writer, sized as the bytes it reads") {
    // 2050 float32 values: 4100 bytes of float16, over what the planner converts itself.
    const std::vector<std::byte> raw(2050 * 4, std::byte{0});
    const auto bytes = one_tensor(raw);
    for (const auto tensors : {onnx::tensor_fields::stored, onnx::tensor_fields::on_demand}) {
        const auto tree = parse_tree(bytes, tensors);
        const auto tensor = tensor_messages(tree).at(0);
        const auto source = onnx::message_fields::read(tree, tensor);
        REQUIRE(source);
        const auto& from = source->fields()[3];
        REQUIRE(from.number() == 9);
        onnx::tree_edits edits;
        edits.drop(tree, tensor, 3);
        edits.insert_converted(tensor, 3, 9, onnx::float_conversion::float32_to_bfloat16);
        const auto p = plan::plan_rewrite(tree, edits);
        REQUIRE(p);
        CHECK(p->size() == plan::planned_size(tree, edits));
        CHECK(p->size() == bytes.size() - 4100);  // half the payload (every length prefix stays 2 bytes)
        std::size_t converts = 0;
        for (const auto& op : p->operations()) {
            if (op.kind != plan::operation_kind::convert) continue;
            ++converts;
            CHECK(op.input_offset == from.payload_offset());
            CHECK(op.length == 4100);
            CHECK(op.conversion == onnx::float_conversion::float32_to_bfloat16);
        }
        CHECK(converts == 1);
    }
}

TEST_CASE("a converted insertion whose field is not there (a position past the body's end) adds nothing") {
    const auto bytes = one_tensor(test_support::float_bytes({1, 2}));
    const auto tree = parse_tree(bytes, onnx::tensor_fields::on_demand);
    const auto tensor = tensor_messages(tree).at(0);
    onnx::tree_edits edits;
    edits.insert_converted(tensor, 4, 9, onnx::float_conversion::float32_to_float16);
    CHECK(rewritten(tree, edits, bytes) == bytes);
}
