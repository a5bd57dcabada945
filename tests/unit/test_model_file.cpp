// model_file opened with tensor_reading::on_demand against the same file kept: the same
// errors, the same tree (test_support::check_on_demand_tree), the same tensors, over every
// model checked in (the fuzz seeds, made from the fixtures, and the corrupt catalogue).
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/external_data.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/plan/planner.hpp>

#include "proto_builder.hpp"
#include "temp_folder.hpp"
#include "tree_comparison.hpp"

#include <doctest/doctest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <vector>

using namespace onnxstream;
using namespace onnxstream::onnx;

namespace {

std::vector<std::filesystem::path> checked_in_models() {
    const std::filesystem::path source = ONNXSTREAM_SOURCE_DIR;
    std::vector<std::filesystem::path> out;
    for (const auto* folder : {"fuzz/corpus/model_ops", "fuzz/corpus/rewrite", "fuzz/corpus/external_data", "tests/data/corrupt"})
        for (const auto& entry : std::filesystem::recursive_directory_iterator(source / folder))
            if (entry.is_regular_file() && entry.path().extension() != ".json" && entry.path().extension() != ".data" &&
                entry.path().extension() != ".bin")
                out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::int64_t> dims_of(const tensor_info& t) { return {t.dims.begin(), t.dims.end()}; }

// The field `index` of `tree` as (offset, length), or none.
std::pair<std::uint64_t, std::uint64_t> place(const message_tree& tree, std::uint32_t index) {
    if (index == no_index) return {0, 0};
    const auto& f = tree.field(index);
    return {f.header_offset(), f.total_length()};
}

void check_same_tensor(const model_file& kept, const model_file& lazy, site_id site) {
    const auto& expected = kept.tensors[site];
    const auto read = lazy.tensor(site);
    // The same message (an index of its own tree: on demand, the external_data entries
    // inside dropped bodies are not in it).
    CHECK(lazy.tree.path(read->message) == kept.tree.path(expected.message));
    CHECK(lazy.tree.payload_range(read->message).offset == kept.tree.payload_range(expected.message).offset);
    CHECK(read->name == expected.name);
    CHECK(read->data_type == expected.data_type);
    CHECK(lazy.data_type(site) == expected.data_type);  // as open read it, or the body walked for it alone
    if (expected.data_type >= 0 && expected.data_type < tensor_site::unrecorded_type)
        CHECK(lazy.sites[site].data_type == expected.data_type);
    CHECK(kept.data_type(site) == expected.data_type);
    CHECK(dims_of(*read) == dims_of(expected));
    CHECK(read->element_count == expected.element_count);
    CHECK(read->expected_bytes == expected.expected_bytes);
    CHECK(read->storage == expected.storage);
    CHECK(read->has_segment == expected.has_segment);
    CHECK(place(read.tree(), read->raw_field) == place(kept.tree, expected.raw_field));
    REQUIRE(read->typed_fields.size() == expected.typed_fields.size());
    for (std::size_t i = 0; i < expected.typed_fields.size(); ++i)
        CHECK(place(read.tree(), read->typed_fields[i]) == place(kept.tree, expected.typed_fields[i]));
    CHECK(typed_raw_size(read.tree(), *read) == typed_raw_size(kept.tree, expected));
    REQUIRE((read->external != nullptr) == (expected.external != nullptr));
    if (expected.external) {
        CHECK(read->external->location == expected.external->location);
        CHECK(read->external->offset == expected.external->offset);
        CHECK(read->external->length == expected.external->length);
        CHECK(read->external->checksum == expected.external->checksum);
    }
}

// A model of one float initializer "w" (raw_data), written into `dir`.
std::filesystem::path one_float_model(const test_support::temp_folder& dir) {
    test_support::proto_builder t;
    t.varint_field(1, 1).varint_field(2, 1).string_field(8, "w").bytes_field(9, test_support::float_bytes({1}));
    const auto bytes = test_support::model_with_initializer(t);
    auto path = dir.path() / "m.onnx";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
}

}  // namespace

TEST_CASE("every checked-in model opens on demand as it opens kept: the same error, tree and tensors") {
    const auto models = checked_in_models();
    REQUIRE(models.size() > 100);
    std::size_t opened = 0;
    std::size_t dropped = 0;
    for (const auto& path : models) {
        CAPTURE(path.string());
        const auto kept = model_file::open(path);
        // Nodes on demand too (node_fields::on_demand, as the graph commands open models).
        const auto lazy = model_file::open(path, nodes_on_demand(), tensor_reading::on_demand);
        REQUIRE(kept.has_value() == lazy.has_value());
        if (!kept) {
            CHECK(lazy.error().code == kept.error().code);
            CHECK(lazy.error().message == kept.error().message);
            CHECK(lazy.error().hint == kept.error().hint);
            CHECK(lazy.error().offset == kept.error().offset);
            CHECK(lazy.error().field_path == kept.error().field_path);
            continue;
        }
        ++opened;
        dropped += test_support::check_on_demand_tree(kept->tree, lazy->tree);
        CHECK(lazy->tensors.empty());
        REQUIRE(lazy->sites.size() == kept->sites.size());
        CHECK(lazy->external_sites == kept->external_sites);
        for (const auto site : lazy->sites.ids()) check_same_tensor(*kept, *lazy, site);
    }
    CHECK(opened > 50);
    CHECK(dropped > 50);
}

TEST_CASE("every checked-in model binds its external data on demand as kept, and inlines to the planned size") {
    std::size_t bound = 0;
    std::size_t inlined = 0;
    for (const auto& path : checked_in_models()) {
        CAPTURE(path.string());
        const auto kept = bound_model::open(path, {});
        const auto lazy = bound_model::open(path, {}, {}, tensor_reading::on_demand);
        REQUIRE(kept.has_value() == lazy.has_value());
        if (!kept || kept->data.tensors.empty()) continue;
        ++bound;
        const auto& a = kept->data;
        const auto& b = lazy->data;
        REQUIRE(a.files.size() == b.files.size());
        for (const auto f : a.files.ids()) {
            CHECK(a.files[f].location == b.files[f].location);
            CHECK(a.files[f].bytes_needed == b.files[f].bytes_needed);
            CHECK(a.files[f].bytes_referenced == b.files[f].bytes_referenced);
            CHECK(a.files[f].tensor_count == b.files[f].tensor_count);
        }
        REQUIRE(a.tensors.size() == b.tensors.size());
        for (const auto t : a.tensors.ids()) {
            CHECK(a.tensors[t].site == b.tensors[t].site);
            CHECK(a.tensors[t].file == b.tensors[t].file);
            CHECK(a.tensors[t].offset == b.tensors[t].offset);
            CHECK(a.tensors[t].length == b.tensors[t].length);
            CHECK(a.tensors[t].usable == b.tensors[t].usable);
        }
        REQUIRE(a.problems.size() == b.problems.size());
        for (std::size_t i = 0; i < a.problems.size(); ++i) {
            CHECK(a.problems[i].what.message == b.problems[i].what.message);
            CHECK(a.problems[i].what.field_path == b.problems[i].what.field_path);
        }
        if (a.blocking_problem(true) != nullptr) continue;
        ++inlined;
        tree_edits edits;
        std::vector<error> warnings;
        inline_external(*kept, a.tensors, edits, warnings);
        const auto planned = plan::planned_size(kept->model.tree, edits);
        CHECK(inlined_size(kept->model, a) == planned);
        CHECK(inlined_size(lazy->model, b) == planned);
    }
    CHECK(bound > 10);
    CHECK(inlined > 5);
}

TEST_CASE("a kept model's tree stores every body, whatever the tree options ask") {
    test_support::temp_folder dir;
    const auto path = one_float_model(dir);
    tree_options options;
    options.tensors = tensor_fields::on_demand;
    const auto kept = model_file::open(path, options);
    REQUIRE(kept);
    REQUIRE(kept->sites.size() == 1);
    CHECK(kept->tree.stores_fields(kept->sites[site_id{0}].message));
    CHECK(&kept->tensor(site_id{0}).tree() == &kept->tree);
    const auto lazy = model_file::open(path, {}, tensor_reading::on_demand);
    REQUIRE(lazy);
    const auto m = lazy->sites[site_id{0}].message;
    CHECK_FALSE(lazy->tree.stores_fields(m));
    const auto read = lazy->tensor(site_id{0});
    CHECK(&read.tree() != &lazy->tree);
    CHECK(read->message == m);
    CHECK(read->name == "w");
    // The misuse the indices make loud: a body's index in the model's tree.
    CHECK_THROWS_AS((void)lazy->tree.field(read->raw_field), std::out_of_range);
    CHECK(read.tree().payload(read.tree().field(read->raw_field)).size() == 4);
}

TEST_CASE("on demand with the full tree: tensors read when asked, every body stored where edits address it") {
    test_support::temp_folder dir;
    const auto path = one_float_model(dir);
    const auto kept = model_file::open(path);
    const auto full = model_file::open(path, {}, tensor_reading::on_demand_full_tree);
    REQUIRE(kept);
    REQUIRE(full);
    CHECK(full->tensors.empty());
    CHECK(full->tree.all_fields().size() == kept->tree.all_fields().size());
    const auto site = site_id{0};
    CHECK(full->tree.stores_fields(full->sites[site].message));
    const auto read = full->tensor(site);
    // Its indices are the model's own: what split's and merge's edits address.
    CHECK(&read.tree() == &full->tree);
    check_same_tensor(*kept, *full, site);
    CHECK(read->raw_field == kept->tensors[site].raw_field);
}

TEST_CASE("data_type alone, after every other field, in a body or a stored message") {
    test_support::temp_folder dir;
    // data_type (FLOAT16) last, after raw_data (one float16: 1.0). (A tensor that writes
    // it twice is refused by open: protobuf would keep the last.)
    test_support::proto_builder t;
    const std::array<std::byte, 2> one{std::byte{0x00}, std::byte{0x3c}};
    t.varint_field(1, 1).string_field(8, "w").bytes_field(9, one).varint_field(2, 10);
    const auto bytes = test_support::model_with_initializer(t);
    const auto path = dir.path() / "twice.onnx";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    for (const auto reading : {tensor_reading::kept, tensor_reading::on_demand, tensor_reading::on_demand_full_tree}) {
        CAPTURE(static_cast<int>(reading));
        auto model = model_file::open(path, {}, reading);
        REQUIRE(model);
        // On demand the tree drops the body: its fields are walked in the mapped bytes.
        if (reading == tensor_reading::on_demand) CHECK_FALSE(model->tree.stores_fields(model->sites[site_id{0}].message));
        CHECK(model->tensor(site_id{0})->data_type == 10);
        CHECK(model->data_type(site_id{0}) == 10);
        // Without the type open recorded: the body (or the stored message) is walked.
        model->sites[site_id{0}].data_type = tensor_site::unrecorded_type;
        CHECK(model->data_type(site_id{0}) == 10);
    }
}

TEST_CASE("a data_type no byte holds is not recorded at open: its body is walked for it") {
    // 254 is the last type a site records; 255 is tensor_site::unrecorded_type itself.
    // ONNX defines none of them: open takes them as it takes any unknown type.
    test_support::temp_folder dir;
    for (const std::uint64_t type : {std::uint64_t{254}, std::uint64_t{255}, std::uint64_t{300}, ~std::uint64_t{0}}) {
        CAPTURE(type);
        test_support::proto_builder t;
        t.varint_field(1, 4).varint_field(2, type).string_field(8, "w").bytes_field(9, test_support::float_bytes({1}));
        const auto bytes = test_support::model_with_initializer(t);
        const auto path = dir.path() / "unknown_type.onnx";
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        const auto kept = model_file::open(path, {}, tensor_reading::kept);
        REQUIRE(kept);
        const auto expected = kept->tensors[site_id{0}].data_type;
        CHECK(expected == static_cast<std::int32_t>(type));
        for (const auto reading : {tensor_reading::on_demand, tensor_reading::on_demand_full_tree}) {
            CAPTURE(static_cast<int>(reading));
            const auto model = model_file::open(path, {}, reading);
            REQUIRE(model);
            CHECK(model->sites[site_id{0}].data_type ==
                  (type < tensor_site::unrecorded_type ? static_cast<std::uint8_t>(type) : tensor_site::unrecorded_type));
            CHECK(model->data_type(site_id{0}) == expected);
            CHECK(model->tensor(site_id{0})->data_type == expected);
        }
    }
}

#if !defined(_WIN32)
TEST_CASE("on demand, a body changed in the file after open reads as an empty tensor of no type") {
    // A page released behind a pass faults back in from the file: if the file changed,
    // the body may no longer tokenize. tensor() and data_type() must not fail or read
    // past it; the writer's check that the sources are unchanged refuses the run.
    // (POSIX: the mapping is shared, so a write through another descriptor shows at once.)
    test_support::temp_folder dir;
    test_support::proto_builder t;
    const std::array<std::byte, 4> one{std::byte{0}, std::byte{0}, std::byte{0x80}, std::byte{0x3f}};
    t.varint_field(1, 1).varint_field(2, 1).string_field(8, "w").bytes_field(9, one);
    const auto bytes = test_support::model_with_initializer(t);
    const auto path = dir.path() / "changed.onnx";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    auto model = model_file::open(path, {}, tensor_reading::on_demand);
    REQUIRE(model);
    const auto site = site_id{0};
    const auto message = model->sites[site].message;
    REQUIRE_FALSE(model->tree.stores_fields(message));
    // Open recorded the type its read found; a site without it has its body walked.
    CHECK(model->sites[site].data_type == 1);
    REQUIRE(model->data_type(site) == 1);
    model->sites[site].data_type = tensor_site::unrecorded_type;
    REQUIRE(model->data_type(site) == 1);
    {
        // The body's first tag becomes field 0 of wire type 7: no field at all.
        std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
        file.seekp(static_cast<std::streamoff>(model->tree.payload_range(message).offset));
        file.put(static_cast<char>(0x07));
    }
    CHECK(model->data_type(site) == 0);
    model->sites[site].data_type = 1;
    CHECK(model->data_type(site) == 1);  // as open read it
    const auto read = model->tensor(site);
    CHECK(read->message == message);
    CHECK(read->data_type == 0);
    CHECK(read->name.empty());
    CHECK_FALSE(read->expected_bytes);
}
#endif

TEST_CASE("on demand, a tensor read during the parse fails with the whole path and after every damaged field") {
    // Two sparse initializers (a path names their index only because there are two:
    // message::repeated, known once the graph's children are all read); the second's
    // values have a negative dimension.
    const auto values = [](std::int64_t dim) {
        test_support::proto_builder t;
        t.varint_field(1, static_cast<std::uint64_t>(dim)).varint_field(2, 1).string_field(8, "v");
        return t;
    };
    const auto sparse = [&values](std::int64_t dim) {
        test_support::proto_builder s;
        s.message_field(1, values(dim));
        return s;
    };
    test_support::proto_builder graph;
    graph.message_field(15, sparse(0)).message_field(15, sparse(-1));
    test_support::proto_builder model;
    model.varint_field(1, 8).message_field(7, graph);
    test_support::temp_folder dir;
    const auto path = dir.path() / "m.onnx";
    const auto write = [&path](const std::vector<std::byte>& bytes) {
        std::ofstream(path, std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    };
    write(model.take());
    for (const auto reading : {tensor_reading::kept, tensor_reading::on_demand, tensor_reading::on_demand_full_tree}) {
        CAPTURE(static_cast<int>(reading));
        const auto opened = model_file::open(path, {}, reading);
        REQUIRE_FALSE(opened);
        CHECK(opened.error().code == error_code::invalid_tensor);
        CHECK(opened.error().field_path == "graph.sparse_initializer[1].values");
    }
    // A damaged field after the bad tensor is the problem named, as when the tensors were
    // read after the parse: a graph name (field 2) whose length runs past the graph's end.
    const std::vector<std::byte> cut{std::byte{0x12}, std::byte{0x7f}};
    graph.raw(cut);
    test_support::proto_builder damaged;
    damaged.varint_field(1, 8).message_field(7, graph);
    write(damaged.take());
    for (const auto reading : {tensor_reading::kept, tensor_reading::on_demand}) {
        CAPTURE(static_cast<int>(reading));
        const auto opened = model_file::open(path, {}, reading);
        REQUIRE_FALSE(opened);
        CHECK(opened.error().code == error_code::malformed);
    }
}
