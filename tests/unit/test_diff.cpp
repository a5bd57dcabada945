#include <onnxstream/ops/diff.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;
using onnx_fields::attribute_ints;
using onnx_fields::attribute_name;

namespace {

ops::diff_report compare(const fs::path& a, const fs::path& b) {
    ops::diff_options options;
    options.threads = 2;
    options.buffer_size = 4096;
    auto report = ops::diff(a, b, options);
    REQUIRE(report);
    return std::move(report).value();
}

const ops::difference* first_of(const ops::diff_report& r, ops::difference_kind kind) {
    const auto it = std::find_if(r.differences.begin(), r.differences.end(), [&](const auto& d) { return d.kind == kind; });
    return it == r.differences.end() ? nullptr : &*it;
}

std::vector<proto_builder> nodes_of_a_small_net() {
    return {node("MatMul", {"x", "w"}, {"y"}, {}, "mm"),
            node("LeakyRelu", {"y"}, {"z"}, {float_attribute("alpha", 0.1f)}, "act")};
}

}  // namespace

TEST_CASE("the same values stored raw, typed and external are equivalent; byte identity is reported") {
    temp_folder dir;
    const auto values = ramp(300);
    const auto raw = write_bytes(dir.path() / "raw/m.onnx", model({raw_tensor("w", {20, 15}, values)}, nodes_of_a_small_net()));
    const auto typed = write_bytes(dir.path() / "typed/m.onnx",
                                   model({typed_tensor("w", {20, 15}, values)}, nodes_of_a_small_net()));
    std::vector<std::byte> padded(4096 + values.size());
    std::copy(values.begin(), values.end(), padded.begin() + 4096);
    write_bytes(dir.path() / "ext/w.bin", padded);
    const auto external = write_bytes(dir.path() / "ext/m.onnx",
                                      model({external_tensor("w", {20, 15}, "w.bin", "4096", "1200")}, nodes_of_a_small_net()));

    for (const auto& other : {typed, external}) {
        const auto r = compare(raw, other);
        CHECK(r.equivalent);
        CHECK_FALSE(r.byte_identical);
        CHECK(r.differences.empty());
        CHECK(r.tensors_a == 1);
        CHECK(r.nodes_a == 2);
    }
    const auto same = compare(raw, raw);
    CHECK(same.equivalent);
    CHECK(same.byte_identical);
    const auto copy = write_bytes(dir.path() / "copy/m.onnx", model({raw_tensor("w", {20, 15}, values)}, nodes_of_a_small_net()));
    CHECK(compare(raw, copy).byte_identical);
}

TEST_CASE("a changed value, dims or type is a tensor difference that says which") {
    temp_folder dir;
    const auto values = ramp(64);
    auto changed = values;
    changed[100] ^= std::byte{0x40};
    const auto a = write_bytes(dir.path() / "a.onnx", model({raw_tensor("w", {8, 8}, values), raw_tensor("v", {64}, values)}));
    const auto b = write_bytes(dir.path() / "b.onnx", model({raw_tensor("w", {8, 8}, changed), raw_tensor("v", {64}, values)}));
    auto r = compare(a, b);
    CHECK_FALSE(r.equivalent);
    CHECK(r.differing_tensors == 1);
    CHECK(r.differing_nodes == 0);
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].kind == ops::difference_kind::tensor);
    CHECK(r.differences[0].name == "w");
    CHECK(r.differences[0].path == "graph.initializer[0]");
    CHECK(r.differences[0].detail == "values differ");

    const auto reshaped = write_bytes(dir.path() / "c.onnx",
                                      model({raw_tensor("w", {4, 16}, values), raw_tensor("v", {64}, values)}));
    r = compare(a, reshaped);
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].detail == "dims [8, 8] vs [4, 16]");
}

TEST_CASE("the walk reads a listed tensor's values again, raw, typed, large or external, as the digests hashed them") {
    // The hashes of the values are not kept for the walk: a tensor it lists has them read
    // again. Same values in another storage must read as the same; changed ones must not.
    temp_folder dir;
    const auto values = ramp(300);
    auto changed = values;
    changed[7] ^= std::byte{0x01};
    const auto large = ramp(20000);  // 80 000 bytes: hashed by its own read, not in the tensor pass
    const auto raw = write_bytes(dir.path() / "raw/m.onnx",
                                 model({raw_tensor("w", {20, 15}, values), raw_tensor("big", {20000}, large)}));
    std::vector<std::byte> padded(4096 + values.size());
    std::copy(values.begin(), values.end(), padded.begin() + 4096);
    write_bytes(dir.path() / "ext/w.bin", padded);
    std::copy(changed.begin(), changed.end(), padded.begin() + 4096);
    write_bytes(dir.path() / "ext/changed.bin", padded);
    const auto reshaped = write_bytes(
        dir.path() / "ext/reshaped.onnx",
        model({external_tensor("w", {15, 20}, "w.bin", "4096", "1200"), raw_tensor("big", {100, 200}, large)}));
    auto r = compare(raw, reshaped);
    REQUIRE(r.differences.size() == 2);
    CHECK(r.differences[0].detail == "dims [20, 15] vs [15, 20]");
    CHECK(r.differences[1].detail == "dims [20000] vs [100, 200]");

    const auto other_values = write_bytes(
        dir.path() / "ext/other.onnx",
        model({external_tensor("w", {15, 20}, "changed.bin", "4096", "1200"), typed_tensor("big", {20000}, large)}));
    r = compare(raw, other_values);
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].name == "w");
    CHECK(r.differences[0].detail == "dims [20, 15] vs [15, 20]; values differ");
    const auto typed = write_bytes(dir.path() / "typed.onnx",
                                   model({typed_tensor("w", {300}, changed), typed_tensor("big", {20000}, large)}));
    r = compare(typed, raw);
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].detail == "dims [300] vs [20, 15]; values differ");
}

TEST_CASE("initializers and attributes are paired by name, whatever their order") {
    temp_folder dir;
    const auto x = ramp(16);
    const auto y = ramp(16, 50.0f);
    const auto attrs = [](bool swapped) {
        std::vector<proto_builder> list{float_attribute("alpha", 0.5f), int_attribute("axis", 1)};
        if (swapped) std::swap(list[0], list[1]);
        return std::vector<proto_builder>{node("Foo", {"x"}, {"y"}, list, "foo")};
    };
    const auto a = write_bytes(dir.path() / "a.onnx", model({raw_tensor("x", {16}, x), raw_tensor("y", {16}, y)}, attrs(false)));
    const auto b = write_bytes(dir.path() / "b.onnx", model({raw_tensor("y", {16}, y), raw_tensor("x", {16}, x)}, attrs(true)));
    CHECK(compare(a, b).equivalent);

    const auto c = write_bytes(dir.path() / "c.onnx", model({raw_tensor("x", {16}, x)}, attrs(false)));
    const auto r = compare(a, c);
    CHECK(r.differing_tensors == 1);
    const auto* only = first_of(r, ops::difference_kind::only_in_a);
    REQUIRE(only != nullptr);
    CHECK(only->name == "y");
    CHECK(only->what == "tensor");
    const auto reverse = compare(c, a);
    REQUIRE(first_of(reverse, ops::difference_kind::only_in_b) != nullptr);
    CHECK(first_of(reverse, ops::difference_kind::only_in_b)->name == "y");
}

TEST_CASE("packed and unpacked repeated ints are the same attribute") {
    temp_folder dir;
    proto_builder unpacked;
    unpacked.string_field(attribute_name, "perm").varint_field(attribute_ints, 0).varint_field(attribute_ints, 2);
    unpacked.varint_field(attribute_ints, 1).varint_field(onnx_fields::attribute_type, 7);
    proto_builder packed_values;
    packed_values.raw_varint(0).raw_varint(2).raw_varint(1);
    proto_builder packed;
    packed.string_field(attribute_name, "perm").bytes_field(attribute_ints, packed_values.bytes());
    packed.varint_field(onnx_fields::attribute_type, 7);
    const auto a = write_bytes(dir.path() / "a.onnx", model({}, {node("Transpose", {"x"}, {"y"}, {unpacked})}));
    const auto b = write_bytes(dir.path() / "b.onnx", model({}, {node("Transpose", {"x"}, {"y"}, {packed})}));
    CHECK(compare(a, b).equivalent);
}

TEST_CASE("node differences name the node, its op and what changed") {
    temp_folder dir;
    const auto a = write_bytes(dir.path() / "a.onnx", model({}, nodes_of_a_small_net()));
    SUBCASE("op_type") {
        const auto b = write_bytes(dir.path() / "b.onnx",
                                   model({}, {node("MatMul", {"x", "w"}, {"y"}, {}, "mm"),
                                              node("Relu", {"y"}, {"z"}, {float_attribute("alpha", 0.1f)}, "act")}));
        const auto r = compare(a, b);
        CHECK(r.differing_nodes == 1);
        CHECK(r.differing_tensors == 0);
        REQUIRE(r.differences.size() == 1);
        CHECK(r.differences[0].kind == ops::difference_kind::node);
        CHECK(r.differences[0].name == "act");
        CHECK(r.differences[0].path == "graph.node[1]");
        CHECK(r.differences[0].detail == "(LeakyRelu) op_type 'LeakyRelu' vs 'Relu'");
    }
    SUBCASE("an attribute value") {
        const auto b = write_bytes(dir.path() / "b.onnx",
                                   model({}, {node("MatMul", {"x", "w"}, {"y"}, {}, "mm"),
                                              node("LeakyRelu", {"y"}, {"z"}, {float_attribute("alpha", 0.2f)}, "act")}));
        const auto r = compare(a, b);
        REQUIRE(r.differences.size() == 1);
        CHECK(r.differences[0].detail == "(LeakyRelu) attribute 'alpha' f 0.1 vs 0.2");
    }
    SUBCASE("an input") {
        const auto b = write_bytes(dir.path() / "b.onnx",
                                   model({}, {node("MatMul", {"x", "w2"}, {"y"}, {}, "mm"),
                                              node("LeakyRelu", {"y"}, {"z"}, {float_attribute("alpha", 0.1f)}, "act")}));
        const auto r = compare(a, b);
        REQUIRE(r.differences.size() == 1);
        CHECK(r.differences[0].name == "mm");
        CHECK(r.differences[0].detail == "(MatMul) input ['x', 'w'] vs ['x', 'w2']");
    }
    SUBCASE("a node more") {
        auto more = nodes_of_a_small_net();
        more.push_back(node("Relu", {"z"}, {"out"}));
        const auto b = write_bytes(dir.path() / "b.onnx", model({}, more));
        const auto r = compare(a, b);
        CHECK(r.differing_nodes == 1);
        REQUIRE(r.differences.size() == 1);
        CHECK(r.differences[0].kind == ops::difference_kind::only_in_b);
        CHECK(r.differences[0].name == "out");
    }
}

TEST_CASE("model fields are compared too") {
    temp_folder dir;
    const auto a = write_bytes(dir.path() / "a.onnx", model({}, nodes_of_a_small_net(), "exporter-1"));
    const auto b = write_bytes(dir.path() / "b.onnx", model({}, nodes_of_a_small_net(), "exporter-2"));
    const auto r = compare(a, b);
    CHECK(r.other_differences == 1);
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].kind == ops::difference_kind::field);
    CHECK(r.differences[0].path == "model.producer_name");
    CHECK(r.differences[0].detail == "producer_name 'exporter-1' vs 'exporter-2'");
}

TEST_CASE("every difference is counted, a few are listed") {
    temp_folder dir;
    std::vector<proto_builder> left;
    std::vector<proto_builder> right;
    for (int i = 0; i < 30; ++i) {
        const auto name = "t" + std::to_string(i);
        left.push_back(raw_tensor(name, {4}, ramp(4)));
        right.push_back(raw_tensor(name, {4}, ramp(4, 9.0f)));
    }
    const auto a = write_bytes(dir.path() / "a.onnx", model(left));
    const auto b = write_bytes(dir.path() / "b.onnx", model(right));
    ops::diff_options options;
    options.max_listed = 5;
    const auto r = ops::diff(a, b, options);
    REQUIRE(r);
    CHECK(r->differing_tensors == 30);
    CHECK(r->differences.size() == 5);
}

TEST_CASE("missing external data or an unreadable model is trouble, not a difference") {
    temp_folder dir;
    const auto a = write_bytes(dir.path() / "a/m.onnx", model({external_tensor("w", {4}, "gone.bin")}));
    const auto b = write_bytes(dir.path() / "b/m.onnx", model({raw_tensor("w", {4}, ramp(4))}));
    auto r = ops::diff(a, b, {});
    REQUIRE_FALSE(r);
    CHECK(r.error().code == error_code::missing_data);
    const auto junk = dir.write("junk.onnx", "\x08");
    r = ops::diff(b, junk, {});
    REQUIRE_FALSE(r);
}

TEST_CASE("diff's progress names the tensor being hashed, and reaches the total") {
    temp_folder dir;
    write_bytes(dir.path() / "w.data", ramp(2048));
    const auto a = write_bytes(dir.path() / "a.onnx", model({external_tensor("first", {1024}, "w.data", "0", "4096"),
                                                             external_tensor("second", {1024}, "w.data", "4096", "4096")}));
    ops::diff_options options;
    options.threads = 1;
    options.buffer_size = 4096;
    std::vector<ops::progress_event> events;
    options.on_progress = [&](const ops::progress_event& e) { events.push_back(e); };
    const auto r = ops::diff(a, a, options);
    REQUIRE(r);
    CHECK(r->equivalent);
    REQUIRE(!events.empty());
    CHECK(events.back().done == events.back().total);
    CHECK(events.back().total == 4 * 4096);  // each side's two tensors
    std::vector<std::string> named;
    for (const auto& e : events)
        if (e.done > 0) named.push_back(e.tensor);
    // One thread, one 4 KiB piece per tensor, each side's file read forward.
    CHECK(named.size() == 4);
    CHECK(std::count(named.begin(), named.end(), "first") == 2);
    CHECK(std::count(named.begin(), named.end(), "second") == 2);
}

TEST_CASE("long dims compare by value: packed and unpacked agree, one more dim differs") {
    temp_folder dir;
    using namespace onnx_fields;
    // Longer than one batch of the dims digest (256), so that it is hashed in pieces.
    auto tensor = [](std::size_t count, bool packed) {
        proto_builder t;
        if (packed) {
            proto_builder run;
            for (std::size_t i = 0; i < count; ++i) run.raw_varint(1);
            t.bytes_field(tensor_dims, run.bytes());
        } else {
            for (std::size_t i = 0; i < count; ++i) t.varint_field(tensor_dims, 1);
        }
        t.varint_field(tensor_type, 1).string_field(tensor_name, "w").bytes_field(tensor_raw, ramp(1));
        return t;
    };
    const auto unpacked = write_bytes(dir.path() / "a.onnx", model({tensor(600, false)}));
    const auto packed = write_bytes(dir.path() / "b.onnx", model({tensor(600, true)}));
    const auto longer = write_bytes(dir.path() / "c.onnx", model({tensor(601, true)}));
    const auto same = compare(unpacked, packed);
    CHECK(same.equivalent);
    CHECK_FALSE(same.byte_identical);
    const auto r = compare(packed, longer);
    CHECK_FALSE(r.equivalent);
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].kind == ops::difference_kind::tensor);
    CHECK(r.differences[0].detail.starts_with("dims [1, 1,"));
}

TEST_CASE("a large unknown model field is compared byte for byte") {
    temp_folder dir;
    // Over the 1 MiB that diff hashes in one piece: read through a buffer, not the mapping.
    std::vector<std::byte> payload(3U << 20, std::byte{7});
    auto with_unknown = [&](std::span<const std::byte> bytes) {
        auto m = model({raw_tensor("w", {4}, ramp(4))});
        proto_builder extra;
        extra.bytes_field(100, bytes);
        m.insert(m.end(), extra.bytes().begin(), extra.bytes().end());
        return m;
    };
    const auto a = write_bytes(dir.path() / "a/m.onnx", with_unknown(payload));
    const auto copy = write_bytes(dir.path() / "b/m.onnx", with_unknown(payload));
    payload.back() = std::byte{8};
    const auto changed = write_bytes(dir.path() / "c/m.onnx", with_unknown(payload));
    CHECK(compare(a, copy).equivalent);
    const auto r = compare(a, changed);
    CHECK_FALSE(r.equivalent);
    CHECK(r.other_differences == 1);
    CHECK(r.differing_tensors == 0);
}

namespace {

// `count` raw FLOAT tensors t0, t1, ... of `floats` values each, and the same stored in
// one data file beside the second model (in order); values from `start`.
struct tiny_pair {
    fs::path raw;
    fs::path external;
};
tiny_pair tiny_tensors(const fs::path& dir, std::size_t count, std::size_t floats, float start = 0.5f) {
    std::vector<proto_builder> raw;
    std::vector<proto_builder> external;
    std::vector<std::byte> data;
    for (std::size_t i = 0; i < count; ++i) {
        const auto name = "t" + std::to_string(i);
        const auto values = ramp(floats, start + static_cast<float>(i));
        raw.push_back(raw_tensor(name, {floats}, values));
        external.push_back(external_tensor(name, {floats}, "w.bin", std::to_string(data.size()), std::to_string(values.size())));
        data.insert(data.end(), values.begin(), values.end());
    }
    write_bytes(dir / "ext/w.bin", data);
    return {write_bytes(dir / "raw/m.onnx", model(raw)), write_bytes(dir / "ext/m.onnx", model(external))};
}

}  // namespace

TEST_CASE("small raw values hashed where their tensor is read equal the same values streamed from a file") {
    temp_folder dir;
    const auto small = tiny_tensors(dir.path() / "small", 40, 16);
    auto r = compare(small.raw, small.external);
    CHECK(r.equivalent);
    CHECK(r.bytes_hashed == 2 * 40 * 64);
    // Over 64 KiB: a raw tensor in the .onnx read through the hashing buffers.
    const auto large = tiny_tensors(dir.path() / "large", 2, 20000);
    r = compare(large.raw, large.external);
    CHECK(r.equivalent);
    CHECK(r.bytes_hashed == 2 * 2 * 80000);

    for (const auto& [which, at] : {std::pair{&small, std::size_t{7 * 64 + 5}}, std::pair{&large, std::size_t{80000 + 9}}}) {
        auto data = std::vector<std::byte>(fs::file_size(which->external.parent_path() / "w.bin"));
        std::ifstream(which->external.parent_path() / "w.bin", std::ios::binary)
            .read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
        data[at] ^= std::byte{1};
        write_bytes(which->external.parent_path() / "w.bin", data);
        r = compare(which->raw, which->external);
        CHECK(r.differing_tensors == 1);
        REQUIRE(r.differences.size() == 1);
        CHECK(r.differences[0].name == (which == &small ? "t7" : "t1"));
        CHECK(r.differences[0].detail == "values differ");
    }
}

TEST_CASE("tensors sharing their bytes out of file order are hashed once") {
    temp_folder dir;
    const auto first = ramp(1024);
    const auto second = ramp(1024, 2000.0f);
    std::vector<std::byte> data(first.begin(), first.end());
    data.insert(data.end(), second.begin(), second.end());
    write_bytes(dir.path() / "ext/w.bin", data);
    // c shares a's bytes, b lies before them: sorted by place, read forward, a's range once.
    const auto external = write_bytes(dir.path() / "ext/m.onnx", model({external_tensor("a", {1024}, "w.bin", "4096", "4096"),
                                                                        external_tensor("b", {1024}, "w.bin", "0", "4096"),
                                                                        external_tensor("c", {1024}, "w.bin", "4096", "4096")}));
    const auto raw = write_bytes(
        dir.path() / "raw/m.onnx",
        model({raw_tensor("a", {1024}, second), raw_tensor("b", {1024}, first), raw_tensor("c", {1024}, second)}));
    const auto r = compare(external, raw);
    CHECK(r.equivalent);
    CHECK(r.bytes_hashed == 2 * 4096 + 3 * 4096);
    const auto other = write_bytes(
        dir.path() / "other/m.onnx",
        model({raw_tensor("a", {1024}, second), raw_tensor("b", {1024}, first), raw_tensor("c", {1024}, first)}));
    const auto changed = compare(external, other);
    CHECK(changed.differing_tensors == 1);
    REQUIRE(changed.differences.size() == 1);
    CHECK(changed.differences[0].name == "c");
}

TEST_CASE("among many initializers, a renamed one is only in A and only in B; equal names pair in order") {
    temp_folder dir;
    std::vector<proto_builder> a;
    std::vector<proto_builder> b;
    for (int i = 0; i < 300; ++i) {
        const auto values = ramp(4, static_cast<float>(i));
        a.push_back(raw_tensor("t" + std::to_string(i), {4}, values));
        b.push_back(raw_tensor(i == 120 ? "renamed" : "t" + std::to_string(i), {4}, values));
    }
    std::reverse(b.begin(), b.end());
    auto r = compare(write_bytes(dir.path() / "a.onnx", model(a)), write_bytes(dir.path() / "b.onnx", model(b)));
    CHECK(r.differing_tensors == 2);
    REQUIRE(r.differences.size() == 2);
    CHECK(r.differences[0].kind == ops::difference_kind::only_in_a);
    CHECK(r.differences[0].name == "t120");
    CHECK(r.differences[0].path == "graph.initializer[120]");
    CHECK(r.differences[1].kind == ops::difference_kind::only_in_b);
    CHECK(r.differences[1].name == "renamed");
    CHECK(r.differences[1].path == "graph.initializer[179]");

    // Two initializers named alike on a side: paired by position, not by name.
    const auto x = ramp(4);
    const auto y = ramp(4, 9.0f);
    const auto z = ramp(4, 20.0f);
    r = compare(write_bytes(dir.path() / "c.onnx", model({raw_tensor("w", {4}, x), raw_tensor("w", {4}, y)})),
                write_bytes(dir.path() / "d.onnx", model({raw_tensor("w", {4}, y), raw_tensor("w", {4}, z)})));
    CHECK(r.differing_tensors == 2);
    REQUIRE(r.differences.size() == 2);
    CHECK(r.differences[0].path == "graph.initializer[0]");
    CHECK(r.differences[1].path == "graph.initializer[1]");
}

TEST_CASE("string tensors compare by their strings; int64 typed values equal their raw bytes") {
    temp_folder dir;
    using namespace onnx_fields;
    auto strings = [](std::string_view second) {
        proto_builder t;
        t.varint_field(tensor_dims, 2).varint_field(tensor_type, 8).string_field(6, "first").string_field(6, second);
        t.string_field(tensor_name, "s");
        return t;
    };
    auto r = compare(write_bytes(dir.path() / "a.onnx", model({strings("second")})),
                     write_bytes(dir.path() / "b.onnx", model({strings("second")})));
    CHECK(r.equivalent);
    r = compare(write_bytes(dir.path() / "a.onnx", model({strings("second")})),
                write_bytes(dir.path() / "c.onnx", model({strings("other")})));
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].detail == "other fields differ (doc_string, metadata or strings)");

    const std::vector<std::int64_t> values{1, -2, 300000, 1LL << 40};
    proto_builder packed;
    for (const auto v : values) packed.raw_varint(static_cast<std::uint64_t>(v));
    proto_builder typed;
    typed.varint_field(tensor_dims, 4).varint_field(tensor_type, 7).string_field(tensor_name, "i").bytes_field(7, packed.bytes());
    std::vector<std::byte> bytes(values.size() * 8);
    std::memcpy(bytes.data(), values.data(), bytes.size());  // the test hosts are little-endian
    proto_builder raw;
    raw.varint_field(tensor_dims, 4).varint_field(tensor_type, 7).string_field(tensor_name, "i").bytes_field(tensor_raw, bytes);
    const auto typed_model = write_bytes(dir.path() / "typed.onnx", model({typed}));
    CHECK(compare(typed_model, write_bytes(dir.path() / "raw.onnx", model({raw}))).equivalent);
    bytes[8] ^= std::byte{4};
    proto_builder changed;
    changed.varint_field(tensor_dims, 4)
        .varint_field(tensor_type, 7)
        .string_field(tensor_name, "i")
        .bytes_field(tensor_raw, bytes);
    r = compare(typed_model, write_bytes(dir.path() / "changed.onnx", model({changed})));
    REQUIRE(r.differences.size() == 1);
    CHECK(r.differences[0].detail == "values differ");
}

TEST_CASE("a cancelled diff stops with `interrupted`, even with no value to read from a file") {
    temp_folder dir;
    const auto models = tiny_tensors(dir.path(), 3000, 1);
    std::atomic<bool> cancel{true};
    ops::diff_options options;
    options.cancel = &cancel;
    const auto r = ops::diff(models.raw, models.raw, options);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == error_code::interrupted);
}

namespace {

// A model whose graph holds `fields` (already encoded GraphProto fields) and nothing else.
std::vector<std::byte> model_of_graph(const proto_builder& graph) {
    proto_builder opset;
    opset.string_field(1, "").varint_field(2, 13);
    proto_builder m;
    m.varint_field(onnx_fields::model_ir_version, 8).message_field(onnx_fields::model_graph, graph);
    m.message_field(onnx_fields::model_opset, opset);
    return m.take();
}

}  // namespace

// A message of thousands of fields is digested a field number at a time (no entry per
// field held): it must mean what a small one's digest means.
TEST_CASE("a graph of thousands of fields compares as a small one: initializers in any order, nodes in theirs") {
    temp_folder dir;
    constexpr int count = 5000;
    const auto graph = [&](bool name_first, bool reversed_initializers, int swapped_node) {
        proto_builder g;
        if (name_first) g.string_field(onnx_fields::graph_name, "g");
        for (int i = 0; i < count; ++i) {
            const int n = i == swapped_node ? i + 1 : i == swapped_node + 1 ? i - 1 : i;
            g.message_field(onnx_fields::graph_node, node("Relu", {"v" + std::to_string(n)}, {"v" + std::to_string(n + 1)}));
        }
        for (int i = 0; i < count; ++i) {
            const int t = reversed_initializers ? count - 1 - i : i;
            g.message_field(onnx_fields::graph_initializer,
                            raw_tensor("t" + std::to_string(t), {4}, ramp(4, static_cast<float>(t))));
        }
        if (!name_first) g.string_field(onnx_fields::graph_name, "g");
        return model_of_graph(g);
    };
    const auto a = write_bytes(dir.path() / "a.onnx", graph(true, false, -2));
    // Fields of different numbers in another order, initializers reversed: the same graph.
    const auto b = write_bytes(dir.path() / "b.onnx", graph(false, true, -2));
    const auto same = compare(a, b);
    CHECK(same.equivalent);
    CHECK_FALSE(same.byte_identical);
    // Two nodes swapped: the order of nodes means something.
    const auto c = write_bytes(dir.path() / "c.onnx", graph(true, false, 2000));
    const auto swapped = compare(a, c);
    CHECK_FALSE(swapped.equivalent);
    CHECK(swapped.differing_nodes == 2);
}

TEST_CASE("thousands of unpacked ints equal the same ints packed (a large message and a small one agree)") {
    temp_folder dir;
    proto_builder unpacked;
    proto_builder packed_values;
    unpacked.string_field(attribute_name, "pads");
    for (std::uint64_t i = 0; i < 5000; ++i) {
        unpacked.varint_field(attribute_ints, i * 7);
        packed_values.raw_varint(i * 7);
    }
    unpacked.varint_field(onnx_fields::attribute_type, 7);
    proto_builder packed;
    packed.string_field(attribute_name, "pads").bytes_field(attribute_ints, packed_values.bytes());
    packed.varint_field(onnx_fields::attribute_type, 7);
    const auto a = write_bytes(dir.path() / "a.onnx", model({}, {node("Pad", {"x"}, {"y"}, {unpacked})}));
    const auto b = write_bytes(dir.path() / "b.onnx", model({}, {node("Pad", {"x"}, {"y"}, {packed})}));
    CHECK(compare(a, b).equivalent);
    CHECK(compare(b, a).equivalent);
}

TEST_CASE("a graph of thousands of unknown fields, each of its own number, compares by number and value") {
    temp_folder dir;
    constexpr std::uint32_t count = 5000;
    const auto graph = [&](bool reversed, std::uint32_t changed) {
        proto_builder g;
        g.string_field(onnx_fields::graph_name, "g");
        for (std::uint32_t i = 0; i < count; ++i) {
            const auto k = reversed ? count - 1 - i : i;
            g.varint_field(1000 + k, k == changed ? 1 : 0);
        }
        return model_of_graph(g);
    };
    const auto a = write_bytes(dir.path() / "a.onnx", graph(false, count));
    CHECK(compare(a, write_bytes(dir.path() / "b.onnx", graph(true, count))).equivalent);
    const auto r = compare(a, write_bytes(dir.path() / "c.onnx", graph(false, 4321)));
    CHECK_FALSE(r.equivalent);
    CHECK(r.other_differences == 1);
}
