// bound_model: one model opened with its external data, and the source table every
// operation's writer reads; tensor_value_edits: the edits that move a value in and out.
#include <onnxstream/io/hashing.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/message_fields.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/plan/planner.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"
#include "tree_comparison.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <utility>
#include <vector>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

// "e" external in w.data at offset 64, "r" raw in the model.
struct mixed_model {
    temp_folder dir;
    fs::path model;
    std::vector<std::byte> e = ramp(8);
    std::vector<std::byte> r = ramp(4, 10.0f);

    explicit mixed_model(std::string checksum = {}, std::string length = "32") {
        std::vector<std::byte> file(64 + e.size());
        std::copy(e.begin(), e.end(), file.begin() + 64);
        write_bytes(dir.path() / "w.data", file);
        model = write_bytes(
            dir.path() / "m.onnx",
            small_models::model({raw_tensor("r", {4}, r), external_tensor("e", {8}, "w.data", "64", length, checksum)}));
    }
};

onnx::bound_model bound_or_fail(const fs::path& model) {
    auto opened = onnx::bound_model::open(model, {});
    REQUIRE(opened);
    return std::move(*opened);
}

// The mixed model bound: the store_external tests edit its first tensor ("r").
struct first_of_mixed_model {
    mixed_model files;
    onnx::bound_model bound = bound_or_fail(files.model);

    [[nodiscard]] const onnx::message_tree& tree() const { return bound.model.tree; }
    [[nodiscard]] auto message() const { return bound.model.tensors[onnx::site_id{0}].message; }
};

// Two external tensors of 32 bytes in w.data around an embedded one; `checksum` (a key's
// value) on the second when given.
std::filesystem::path two_external_tensors(const temp_folder& dir, std::string_view checksum = {}) {
    write_bytes(dir.path() / "w.data", std::vector<std::byte>(96));
    return write_bytes(dir.path() / "m.onnx",
                       small_models::model({external_tensor("a", {8}, "w.data", "0", "32"), raw_tensor("r", {4}, ramp(4)),
                                            external_tensor("b", {8}, "w.data", "64", "32", checksum)}));
}

// Every way a model's tensors are read.
constexpr std::array all_readings{onnx::tensor_reading::kept, onnx::tensor_reading::on_demand,
                                  onnx::tensor_reading::on_demand_full_tree};

// `model` opened and bound, read as `reading`.
onnx::bound_model open_as(const std::filesystem::path& model, onnx::tensor_reading reading) {
    auto opened = onnx::bound_model::open(model, {}, {}, reading);
    REQUIRE(opened);
    return std::move(*opened);
}

}  // namespace

TEST_CASE("a bound model lists its sources in the writer's order and finds every tensor's bytes") {
    mixed_model m;
    auto opened = onnx::bound_model::open(m.model, {});
    REQUIRE(opened);
    const auto& bound = *opened;
    CHECK(bound.usable(false));
    CHECK(bound.warnings().empty());
    const auto sources = bound.sources();
    REQUIRE(sources.size() == 2);
    CHECK(sources[0] == &bound.model.file);
    CHECK(sources[onnx::bound_model::source_of_file(onnx::data_file_id{0}).value] ==
          &*bound.data.files[onnx::data_file_id{0}].file);
    CHECK(bound.inputs().size() == 2);

    REQUIRE(bound.model.tensors.size() == 2);
    CHECK(bound.binding_of(onnx::site_id{0}) == none);
    REQUIRE(bound.binding_of(onnx::site_id{1}) != none);
    const auto raw = bound.stored_bytes(onnx::site_id{0});
    REQUIRE(raw);
    CHECK(raw->source == onnx::bound_model::model_source);
    CHECK(raw->length == m.r.size());
    const auto external = bound.stored_bytes(onnx::site_id{1});
    REQUIRE(external);
    CHECK(external->source == onnx::bound_model::source_of_file(onnx::data_file_id{0}));
    CHECK(external->offset == 64);
    CHECK(external->length == 32);
    CHECK(bound.check_unchanged());
}

TEST_CASE("the first blocking problem stops a rewrite and says how many more there are") {
    mixed_model m({}, "4096");  // past the end of w.data
    auto opened = onnx::bound_model::open(m.model, {});
    REQUIRE(opened);
    const auto usable = opened->usable(true);
    REQUIRE_FALSE(usable);
    CHECK(usable.error().code == error_code::truncated_data);
}

TEST_CASE("a checksum that is not a SHA-1 is an error value, not a guess at what was meant") {
    mixed_model m("not-a-sha1");
    auto opened = onnx::bound_model::open(m.model, {});
    REQUIRE(opened);
    const auto expected = onnx::expected_sha1(opened->model.tensors[onnx::site_id{1}]);
    REQUIRE_FALSE(expected);
    CHECK(expected.error().code == error_code::checksum_mismatch);
    CHECK(expected.error().message.find("'e'") != std::string::npos);
    const auto no_checksum = onnx::expected_sha1(opened->model.tensors[onnx::site_id{0}]);  // raw: no checksum applies
    REQUIRE(no_checksum);
    CHECK_FALSE(*no_checksum);
}

TEST_CASE("inlining drops the value fields and adds raw_data; the size is what merge writes") {
    mixed_model m(io::to_hex(io::sha1_of(ramp(8))));
    auto opened = onnx::bound_model::open(m.model, {});
    REQUIRE(opened);
    const auto& bound = *opened;
    onnx::tree_edits edits;
    std::vector<error> warnings;
    onnx::inline_external(bound, bound.data.tensors, edits, warnings);
    CHECK(warnings.empty());
    CHECK(edits.checks().size() == 1);
    // external_data x4 (location, offset, length, checksum) and data_location dropped;
    // one raw_data slice of 32 bytes added.
    CHECK(edits.dropped_fields().size() == 5);
    REQUIRE(edits.insertions().size() == 1);
    // A record of the bindings, not a new_field: the slice is the binding's.
    const auto& inserted = edits.insertions()[0];
    REQUIRE(onnx::tree_edits::is_inlined(inserted));
    const auto& binding = bound.data.tensors[onnx::binding_id{0}];
    // With the drops it replaces and their bytes, as the binding keeps them.
    REQUIRE(binding.positions_known);
    REQUIRE(binding.values_last);  // external_data and data_location end the message
    CHECK(edits.inlined(inserted) ==
          onnx::inlined_value{1, binding.offset, 32, binding.value_positions, binding.value_bytes, true});
    CHECK(edits.inlined_check(inserted) == 0);
    CHECK(edits.labels().empty());
}

TEST_CASE("storing a value externally writes the entries after every other field") {
    const first_of_mixed_model f;
    onnx::tree_edits edits;
    onnx::store_external(f.tree(), f.message(), {"x.data", 4096, 16, std::string("ab")}, edits);
    CHECK(edits.dropped_fields().size() == 1);  // raw_data
    REQUIRE(edits.insertions().size() == 1);    // location, offset, length, checksum, data_location: one record
    const auto& inserted = edits.insertions()[0];
    CHECK(inserted.position == f.tree().at(f.message()).field_count);
    REQUIRE(onnx::tree_edits::is_external(inserted));
    // The fields as they are written: four StringStringEntryProto, then DataLocation.EXTERNAL.
    std::vector<std::byte> expected;
    auto put = [&](std::span<const std::byte> bytes) { expected.insert(expected.end(), bytes.begin(), bytes.end()); };
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"location", "x.data"}, {"offset", "4096"}, {"length", "16"}, {"checksum", "ab"}}) {
        const auto entry = onnx::encode_string_entry(key, value);
        put(proto::encode_varint(proto::make_tag(13, proto::wire_type::length_delimited)).view());
        put(proto::encode_varint(entry.size()).view());
        put(entry);
    }
    put(proto::encode_varint(proto::make_tag(14, proto::wire_type::varint)).view());
    put(proto::encode_varint(1).view());
    std::vector<std::byte> encoded;
    edits.encode_external(inserted, encoded);
    CHECK(encoded == expected);
    CHECK(edits.encoded_size(inserted) == expected.size());
    // The same size from the entry in hand, as the planner asks once it has it.
    CHECK(onnx::tree_edits::encoded_size(edits.external(inserted)) == expected.size());
}

TEST_CASE("external entries can come from the caller's table, encoded only when asked for") {
    const first_of_mixed_model f;
    onnx::tree_edits by_value;
    onnx::store_external(f.tree(), f.message(), {"w.data", 123, 7, std::nullopt}, by_value);
    onnx::tree_edits by_table;
    int asked = 0;
    by_table.set_external_entries([&](std::uint32_t record) {
        ++asked;
        CHECK(record == 42);
        return onnx::external_entry{"w.data", 123, 7, std::nullopt};
    });
    onnx::store_external(f.tree(), f.message(), 42, by_table);
    CHECK(asked == 0);
    std::vector<std::byte> a;
    std::vector<std::byte> b;
    by_value.encode_external(by_value.insertions()[0], a);
    by_table.encode_external(by_table.insertions()[0], b);
    CHECK(asked == 1);
    CHECK(a == b);
    CHECK(by_table.encoded_size(by_table.insertions()[0]) == a.size());
}

TEST_CASE("a model read on demand keeps no tensor_info and binds, inlines and finds bytes as a kept one does") {
    mixed_model m(io::to_hex(io::sha1_of(ramp(8))));
    auto kept = onnx::bound_model::open(m.model, {});
    auto lazy = onnx::bound_model::open(m.model, {}, {}, onnx::tensor_reading::on_demand);
    REQUIRE(kept);
    REQUIRE(lazy);
    CHECK(lazy->model.tensors.empty());
    REQUIRE(lazy->model.external_sites.size() == 1);  // "e", the second tensor
    CHECK(lazy->model.external_sites[0] == onnx::site_id{1});
    CHECK(kept->model.external_sites == lazy->model.external_sites);
    REQUIRE(lazy->model.sites.size() == 2);
    for (const auto site : lazy->model.sites.ids()) {
        const auto read = lazy->model.tensor(site);
        const auto& expected = kept->model.tensors[site];
        CHECK(read->message == expected.message);
        CHECK(read->name == expected.name);
        CHECK(read->storage == expected.storage);
        // Indices of the tensor's own tree: the model's, or its body read again.
        REQUIRE((read->raw_field == onnx::no_index) == (expected.raw_field == onnx::no_index));
        if (read->raw_field != onnx::no_index)
            CHECK(read.tree().field(read->raw_field).header_offset() ==
                  kept->model.tree.field(expected.raw_field).header_offset());
        CHECK(read->expected_bytes == expected.expected_bytes);
        CHECK((read->external != nullptr) == (expected.external != nullptr));
        CHECK(kept->model.tensor(site)->name == expected.name);  // a kept one is borrowed
        CHECK(&*kept->model.tensor(site) == &expected);
        CHECK(lazy->binding_of(site) == kept->binding_of(site));
        const auto a = lazy->stored_bytes(site);
        const auto b = kept->stored_bytes(site);
        REQUIRE(a.has_value() == b.has_value());
        if (a) CHECK((a->source == b->source && a->offset == b->offset && a->length == b->length));
    }
    REQUIRE(lazy->data.tensors.size() == 1);
    CHECK(static_cast<bool>(lazy->data.tensors[onnx::binding_id{0}].usable));
    onnx::tree_edits kept_edits;
    std::vector<error> warnings;
    onnx::inline_external(*kept, kept->data.tensors, kept_edits, warnings);
    CHECK(warnings.empty());
    // The merged size without edits (the on-demand tree holds none of "e"'s fields).
    CHECK(onnx::inlined_size(lazy->model, lazy->data) == plan::planned_size(kept->model.tree, kept_edits));
    CHECK(onnx::inlined_size(kept->model, kept->data) == plan::planned_size(kept->model.tree, kept_edits));
}

TEST_CASE("a tensor that does not read fails the open on demand too, with the same error") {
    temp_folder dir;
    // dims 2 x 2^62 x 4: the element count overflows 64 bits.
    const auto path = write_bytes(dir.path() / "m.onnx", small_models::model({raw_tensor("ok", {1}, ramp(1)),
                                                                              raw_tensor("big", {2, 1ULL << 62, 4}, ramp(1))}));
    const auto kept = onnx::bound_model::open(path, {});
    const auto lazy = onnx::bound_model::open(path, {}, {}, onnx::tensor_reading::on_demand);
    REQUIRE_FALSE(kept);
    REQUIRE_FALSE(lazy);
    CHECK(lazy.error().code == kept.error().code);
    CHECK(lazy.error().message == kept.error().message);
    CHECK(lazy.error().field_path == kept.error().field_path);
}

// Binding reads each external tensor once; the checks it makes from that read must be
// those it made reading the tensor again: in bounds, as long as its dims need.
TEST_CASE("binding checks each external tensor against its file, with or without a written length") {
    temp_folder dir;
    write_bytes(dir.path() / "w.data", ramp(16));    // 64 bytes
    write_bytes(dir.path() / "tail.data", ramp(6));  // 24 bytes
    const auto path = write_bytes(
        dir.path() / "m.onnx",
        small_models::model(
            {external_tensor("fits", {4}, "w.data", "0", "16"), external_tensor("short", {8}, "w.data", "16", "16"),
             external_tensor("past", {4}, "w.data", "100", "16"), external_tensor("over", {8}, "w.data", "48", "32"),
             external_tensor("rest", {2}, "tail.data", "16"), external_tensor("rest_long", {2}, "tail.data", "8")}));
    for (const auto reading : {onnx::tensor_reading::kept, onnx::tensor_reading::on_demand}) {
        CAPTURE(static_cast<int>(reading));
        auto opened = onnx::bound_model::open(path, {}, {}, reading);
        REQUIRE(opened);
        const auto& data = opened->data;
        REQUIRE(data.tensors.size() == 6);
        const auto binding = [&](std::uint32_t i) { return data.tensors[onnx::binding_id{i}]; };
        CHECK(binding(0).usable);
        CHECK(binding(0).length == 16);
        CHECK(binding(1).usable);  // a size mismatch alone keeps it usable
        CHECK(binding(1).length == 16);
        CHECK_FALSE(binding(2).usable);
        CHECK(binding(2).offset == 100);
        CHECK(binding(2).length == 0);
        CHECK_FALSE(binding(3).usable);
        CHECK(binding(3).length == 32);
        CHECK(binding(4).usable);  // no length: to the end of the file, as long as the dims need
        CHECK(binding(4).length == 8);
        CHECK(binding(5).usable);
        CHECK(binding(5).length == 16);
        // length_fits: usable and no size_mismatch recorded (what convert trusts without a read).
        CHECK(binding(0).length_fits);
        CHECK_FALSE(binding(1).length_fits);
        CHECK_FALSE(binding(2).length_fits);
        CHECK_FALSE(binding(3).length_fits);
        CHECK(binding(4).length_fits);
        CHECK_FALSE(binding(5).length_fits);
        REQUIRE(data.problems.size() == 4);
        CHECK(data.problems[0].what.code == error_code::size_mismatch);
        CHECK(data.problems[0].what.message.find("tensor 'short' has 16 bytes in w.data") != std::string::npos);
        CHECK(data.problems[0].what.message.find("need 32") != std::string::npos);
        CHECK(data.problems[0].what.field_path == "graph.initializer[1]");
        CHECK(data.problems[1].what.code == error_code::truncated_data);
        CHECK(data.problems[1].what.message.find("tensor 'past' starts at byte 100") != std::string::npos);
        CHECK(data.problems[1].what.field_path == "graph.initializer[2]");
        CHECK(data.problems[2].what.code == error_code::truncated_data);
        CHECK(data.problems[2].what.message.find("tensor 'over' needs bytes 48 to 80") != std::string::npos);
        CHECK(data.problems[3].what.code == error_code::size_mismatch);
        CHECK(data.problems[3].what.message.find("tensor 'rest_long' has 16 bytes in tail.data") != std::string::npos);
        const auto& w = data.files[onnx::data_file_id{0}];
        CHECK(w.tensor_count == 4);
        CHECK(w.bytes_needed == 80);  // the largest end asked for by a tensor that starts inside the file
        CHECK(w.bytes_referenced == 32);
        const auto& tail = data.files[onnx::data_file_id{1}];
        CHECK(tail.tensor_count == 2);
        CHECK(tail.bytes_referenced == 24);
    }
}

TEST_CASE("a model with no external tensor has no binding for any site") {
    temp_folder dir;
    const auto path = write_bytes(dir.path() / "m.onnx",
                                  small_models::model({raw_tensor("a", {4}, ramp(4)), raw_tensor("b", {2}, ramp(2))}));
    const auto opened = onnx::bound_model::open(path, {});
    REQUIRE(opened);
    REQUIRE(opened->model.sites.size() == 2);
    for (const auto site : opened->model.sites.ids()) {
        CHECK(opened->binding_of(site) == none);
        REQUIRE(opened->stored_bytes(site));
        CHECK(opened->stored_bytes(site)->source == onnx::bound_model::model_source);
    }
}

TEST_CASE(
    "a binding keeps its tensor's value fields' positions as a read of its body finds them, and inlining by them "
    "edits as reading the body again does") {
    temp_folder dir;
    const auto model = two_external_tensors(dir);
    for (const auto reading : all_readings) {
        CAPTURE(static_cast<int>(reading));
        const auto bound = open_as(model, reading);
        REQUIRE(bound.data.tensors.size() == 2);
        for (const auto& binding : bound.data.tensors) {
            CHECK(binding.positions_known);
            CHECK_FALSE(binding.has_checksum);
            // The positions message_fields finds, tokenizing the body again.
            const auto fields = onnx::message_fields::read(bound.model.tree, bound.model.sites[binding.site].message);
            REQUIRE(fields);
            std::uint32_t expected = 0;
            std::uint64_t expected_bytes = 0;
            for (std::uint32_t i = 0; i < fields->fields().size(); ++i) {
                if (!onnx::holds_tensor_value(fields->fields()[i].number())) continue;
                expected |= 1U << i;
                expected_bytes += fields->fields()[i].total_length();
            }
            CHECK(binding.value_positions == expected);
            CHECK(binding.value_bytes == expected_bytes);
        }
        // Inlined by the kept positions, and by reading each body again (positions unknown).
        onnx::tree_edits by_positions;
        onnx::tree_edits by_reading;
        std::vector<error> warnings;
        onnx::inline_external(bound, bound.data.tensors, by_positions, warnings);
        auto unknown = bound.data.tensors;
        for (auto& binding : unknown) binding.positions_known = false;
        onnx::inline_external(bound, unknown, by_reading, warnings);
        CHECK(warnings.empty());
        // A tensor whose fields the tree dropped is one inline_body row, which stands for
        // the drops and the insertion the read finds; one it stores gets those edits.
        const auto rows = by_positions.inlined_bodies();
        CHECK(rows.size() == (reading == onnx::tensor_reading::on_demand ? 2 : 0));
        for (const auto& row : rows) {
            const auto positions = by_positions.inlined_value_of(row.record).dropped_positions;
            const auto drops = by_reading.body_drops(row.message);
            REQUIRE(drops.size() == 1);
            CHECK(drops[0].word == 0);
            CHECK(drops[0].bits == positions);
            const auto read = std::ranges::find(by_reading.insertions(), row.message, &onnx::tree_edits::insertion::message);
            REQUIRE(read != by_reading.insertions().end());
            CHECK(read->position == static_cast<std::uint32_t>(std::countr_zero(positions)));
            CHECK(read->what == (row.record | onnx::tree_edits::inlined_bits));
        }
        if (rows.empty()) {
            CHECK(std::ranges::equal(by_positions.body_drops(), by_reading.body_drops()));
            CHECK(std::ranges::equal(by_positions.dropped_fields(), by_reading.dropped_fields()));
            REQUIRE(by_positions.insertions().size() == by_reading.insertions().size());
            for (std::size_t i = 0; i < by_reading.insertions().size(); ++i) {
                CHECK(by_positions.insertions()[i].message == by_reading.insertions()[i].message);
                CHECK(by_positions.insertions()[i].position == by_reading.insertions()[i].position);
                CHECK(by_positions.insertions()[i].what == by_reading.insertions()[i].what);
            }
        }
        CHECK(plan::planned_size(bound.model.tree, by_positions) == plan::planned_size(bound.model.tree, by_reading));
        // Sized from the kept bytes, no body is read; as the planner reads them, the size
        // is the same, and so is what the plan writes.
        int reads = 0;
        const auto sized = plan::planned_size(bound.model.tree, by_positions, [&](std::uint64_t) { ++reads; });
        CHECK(reads == 0);
        by_reading.set_inlined_values([&bound](std::uint32_t record) {
            const auto& b = bound.data.tensors[onnx::binding_id{record}];
            return onnx::inlined_value{onnx::bound_model::source_of_file(b.file).value, b.offset, b.length};
        });
        CHECK(plan::planned_size(bound.model.tree, by_reading, [&](std::uint64_t) { ++reads; }) == sized);
        CHECK(reads == (reading == onnx::tensor_reading::on_demand ? 2 : 0));
        const auto written = plan::plan_rewrite(bound.model.tree, by_positions);
        REQUIRE(written);
        CHECK(written->size() == sized);
        const auto written_by_reading = plan::plan_rewrite(bound.model.tree, by_reading);
        REQUIRE(written_by_reading);
        CHECK(written->describe() == written_by_reading->describe());
        CHECK(onnx::inlined_size(bound.model, bound.data) == sized);  // from the kept bytes too
    }
}

TEST_CASE("a tensor with a value field past position 31 or a checksum is inlined by reading its body again") {
    temp_folder dir;
    write_bytes(dir.path() / "w.data", std::vector<std::byte>(32));
    // 40 unknown fields before the external entries: the positions do not fit the binding.
    auto far = external_tensor("far", {8}, "w.data", "0", "32");
    proto_builder padded;
    for (int i = 0; i < 40; ++i) padded.string_field(100, "d");
    padded.raw(far.bytes());
    const auto model = write_bytes(dir.path() / "m.onnx", small_models::model({padded}));
    auto opened = onnx::bound_model::open(model, {}, {}, onnx::tensor_reading::on_demand);
    REQUIRE(opened);
    REQUIRE(opened->data.tensors.size() == 1);
    CHECK_FALSE(static_cast<bool>(opened->data.tensors[onnx::binding_id{0}].positions_known));
    onnx::tree_edits edits;
    std::vector<error> warnings;
    onnx::inline_external(*opened, opened->data.tensors, edits, warnings);
    REQUIRE(edits.insertions().size() == 1);
    CHECK(edits.insertions()[0].position > 31);  // after the 40 and the name, dims and type

    mixed_model with_checksum(io::to_hex(io::sha1_of(ramp(8))));
    auto checked = onnx::bound_model::open(with_checksum.model, {});
    REQUIRE(checked);
    CHECK(static_cast<bool>(checked->data.tensors[onnx::binding_id{0}].has_checksum));
}

TEST_CASE("a binding says whether the value fields are the message's last, which merge then copies up to, unread") {
    using namespace onnx_fields;
    constexpr std::uint32_t tensor_doc_string = 12;
    temp_folder dir;
    std::vector<std::byte> data(96);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i);
    write_bytes(dir.path() / "w.data", data);
    // last: as exporters write it. after: a doc_string follows the values. between: a
    // doc_string between external_data and data_location. alone: nothing but the values.
    auto after = external_tensor("after", {8}, "w.data", "32", "32");
    after.string_field(tensor_doc_string, "doc");
    proto_builder between;
    between.varint_field(tensor_dims, 8).varint_field(tensor_type, 1).string_field(tensor_name, "between");
    between.message_field(tensor_external, string_entry("location", "w.data"));
    between.message_field(tensor_external, string_entry("offset", "64"));
    between.string_field(tensor_doc_string, "doc").varint_field(tensor_location, 1);
    proto_builder alone;
    alone.message_field(tensor_external, string_entry("location", "w.data")).varint_field(tensor_location, 1);
    const auto model = write_bytes(
        dir.path() / "m.onnx", small_models::model({external_tensor("last", {8}, "w.data", "0", "32"), after, between, alone}));
    for (const auto reading : {onnx::tensor_reading::kept, onnx::tensor_reading::on_demand}) {
        auto opened = onnx::bound_model::open(model, {}, {}, reading);
        REQUIRE(opened);
        REQUIRE(opened->data.tensors.size() == 4);
        const auto binding = [&](std::uint32_t b) { return opened->data.tensors[onnx::binding_id{b}]; };
        for (std::uint32_t b = 0; b < 4; ++b) CHECK(binding(b).positions_known);
        CHECK(binding(0).values_last);
        CHECK_FALSE(binding(1).values_last);
        CHECK_FALSE(binding(2).values_last);
        CHECK(binding(3).values_last);
        // Merged, each reads back with its own bytes as raw_data and every other field kept.
        onnx::tree_edits edits;
        std::vector<error> warnings;
        onnx::inline_external(*opened, opened->data.tensors, edits, warnings);
        const auto plan = plan::plan_rewrite(opened->model.tree, edits);
        REQUIRE(plan);
        std::vector<std::byte> out(plan->size());
        for (const auto& op : plan->operations()) {
            const auto bytes = op.kind == plan::operation_kind::emit ? plan->emitted(op)
                               : op.source == 0 ? opened->model.tree.bytes().subspan(op.input_offset, op.length)
                                                : std::span<const std::byte>(data).subspan(op.input_offset, op.length);
            std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(op.output_offset));
        }
        const auto reparsed = onnx::message_tree::parse(out);
        REQUIRE(reparsed);
        const auto merged = tensor_messages(*reparsed);
        REQUIRE(merged.size() == 4);
        const std::vector<std::vector<std::uint32_t>> numbers{
            {tensor_dims, tensor_type, tensor_name, tensor_raw},
            {tensor_dims, tensor_type, tensor_name, tensor_raw, tensor_doc_string},
            {tensor_dims, tensor_type, tensor_name, tensor_raw, tensor_doc_string},
            {tensor_raw}};
        const std::uint64_t offsets[] = {0, 32, 64, 0};
        const std::uint64_t lengths[] = {32, 32, 32, 96};
        for (std::size_t i = 0; i < 4; ++i) {
            CAPTURE(i);
            std::vector<std::uint32_t> got;
            for (const auto& f : reparsed->fields(merged[i])) {
                got.push_back(f.number());
                if (f.number() != tensor_raw) continue;
                const auto raw = reparsed->payload(f);
                CHECK(std::equal(raw.begin(), raw.end(), data.begin() + static_cast<std::ptrdiff_t>(offsets[i]),
                                 data.begin() + static_cast<std::ptrdiff_t>(offsets[i] + lengths[i])));
            }
            CHECK(got == numbers[i]);
        }
    }
}

TEST_CASE("storing a bound tensor externally by its kept value positions edits and plans as reading its body does, unread") {
    temp_folder dir;
    const auto model = two_external_tensors(dir, io::to_hex(io::sha1_of(std::vector<std::byte>(32))));
    for (const auto reading : all_readings) {
        CAPTURE(static_cast<int>(reading));
        const auto bound = open_as(model, reading);
        REQUIRE(bound.data.tensors.size() == 2);
        // Both moved to "x.data" (record = binding index); the table of `known` also gives the
        // drops each entry replaces and their bytes, as the binding keeps them.
        const auto entries = [&bound](bool known) {
            return [&bound, known](std::uint32_t record) {
                const auto& b = bound.data.tensors[onnx::binding_id{record}];
                onnx::external_entry entry{"x.data", 32ULL * record, 32, std::nullopt};
                if (known) {
                    entry.dropped_positions = b.value_positions;
                    entry.dropped_bytes = b.value_bytes;
                }
                return entry;
            };
        };
        onnx::tree_edits by_positions;
        onnx::tree_edits by_reading;
        by_positions.set_external_entries(entries(true));
        by_reading.set_external_entries(entries(false));
        for (const auto b : bound.data.tensors.ids()) {
            const auto& binding = bound.data.tensors[b];
            REQUIRE(binding.positions_known);
            const auto message = bound.model.sites[binding.site].message;
            onnx::store_external(bound.model.tree, message, binding.value_positions, b.value, by_positions);
            onnx::store_external(bound.model.tree, message, b.value, by_reading);
        }
        CHECK(std::ranges::equal(by_positions.body_drops(), by_reading.body_drops()));
        CHECK(std::ranges::equal(by_positions.dropped_fields(), by_reading.dropped_fields()));
        REQUIRE(by_positions.insertions().size() == 2);
        CHECK(by_positions.insertions()[0].position == onnx::tree_edits::end_position);
        int reads_by_positions = 0;
        int reads_by_reading = 0;
        const auto sized = plan::planned_size(bound.model.tree, by_positions, [&](std::uint64_t) { ++reads_by_positions; });
        CHECK(sized == plan::planned_size(bound.model.tree, by_reading, [&](std::uint64_t) { ++reads_by_reading; }));
        CHECK(reads_by_positions == 0);  // sized from the entries' dropped bytes
        CHECK(reads_by_reading == (reading == onnx::tensor_reading::on_demand ? 2 : 0));
        const auto written = plan::plan_rewrite(bound.model.tree, by_positions);
        const auto written_by_reading = plan::plan_rewrite(bound.model.tree, by_reading);
        REQUIRE(written);
        REQUIRE(written_by_reading);
        CHECK(written->size() == sized);
        CHECK(written->describe() == written_by_reading->describe());
    }
}
