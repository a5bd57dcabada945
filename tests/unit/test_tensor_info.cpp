#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/message_tree.hpp>
#include <onnxstream/onnx/tensor_info.hpp>
#include <onnxstream/onnx/typed_data.hpp>

#include "proto_builder.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::proto_builder;

namespace {

struct parsed {
    std::vector<std::byte> bytes;
    message_tree tree;
};

// A model whose graph holds one initializer; the tensor is message 2.
result<tensor_info> read_single(proto_builder tensor, std::vector<std::byte>& storage, message_tree& tree) {
    storage = test_support::model_with_initializer(tensor);
    auto parsed_tree = message_tree::parse(storage);
    if (!parsed_tree) return failure(parsed_tree.error());
    tree = std::move(parsed_tree).value();
    return read_tensor(tree, 2);
}

proto_builder entry(std::string_view key, std::string_view value) {
    proto_builder e;
    e.string_field(1, key).string_field(2, value);
    return e;
}

}  // namespace

TEST_CASE("element sizes, 4-bit packing and unknown types") {
    CHECK(*raw_byte_size(1, 10) == 40);
    CHECK(*raw_byte_size(10, 3) == 6);
    CHECK(*raw_byte_size(21, 3) == 2);   // UINT4: two per byte, rounded up
    CHECK(*raw_byte_size(15, 2) == 32);  // COMPLEX128
    CHECK_FALSE(raw_byte_size(8, 1));    // STRING
    CHECK_FALSE(raw_byte_size(99, 1));
    CHECK(raw_byte_size(7, 1ULL << 62).error().code == error_code::invalid_tensor);
    CHECK(data_type_name(16) == "BFLOAT16");
    CHECK(data_type_name(1234) == "type 1234");
}

TEST_CASE("an external tensor's entries are parsed") {
    proto_builder t;
    t.varint_field(1, 4).varint_field(1, 8).varint_field(2, 1).string_field(8, "w");
    t.message_field(13, entry("location", "w.bin")).message_field(13, entry("offset", "4096"));
    t.message_field(13, entry("length", "128")).message_field(13, entry("checksum", "abc"));
    t.varint_field(14, 1);
    std::vector<std::byte> storage;
    message_tree tree;
    const auto info = read_single(t, storage, tree);
    REQUIRE(info);
    CHECK(info->storage == tensor_storage::external);
    CHECK(info->name == "w");
    CHECK(info->dims == std::vector<std::int64_t>{4, 8});
    CHECK(*info->expected_bytes == 128);
    CHECK(info->external->location == "w.bin");
    CHECK(*info->external->offset == 4096);
    CHECK(*info->external->length == 128);
    CHECK(*info->external->checksum == "abc");
}

TEST_CASE("bad external entries and dims are refused with the tensor's path") {
    std::vector<std::byte> storage;
    message_tree tree;
    SUBCASE("negative offset") {
        proto_builder t;
        t.varint_field(2, 1)
            .message_field(13, entry("location", "a"))
            .message_field(13, entry("offset", "-5"))
            .varint_field(14, 1);
        const auto info = read_single(t, storage, tree);
        REQUIRE_FALSE(info);
        CHECK(info.error().code == error_code::invalid_tensor);
        CHECK(info.error().field_path == "graph.initializer[0]");
    }
    SUBCASE("overflowing length") {
        proto_builder t;
        t.varint_field(2, 1)
            .message_field(13, entry("location", "a"))
            .message_field(13, entry("length", "99999999999999999999999"));
        t.varint_field(14, 1);
        CHECK_FALSE(read_single(t, storage, tree));
    }
    SUBCASE("missing location") {
        proto_builder t;
        t.varint_field(2, 1).message_field(13, entry("offset", "0")).varint_field(14, 1);
        const auto info = read_single(t, storage, tree);
        REQUIRE_FALSE(info);
        CHECK(info.error().message.find("no location") != std::string::npos);
    }
    SUBCASE("negative dimension") {
        proto_builder t;
        t.varint_field(1, static_cast<std::uint64_t>(-3)).varint_field(2, 1);
        CHECK_FALSE(read_single(t, storage, tree));
    }
    SUBCASE("dims whose product overflows") {
        proto_builder t;
        t.varint_field(1, 1ULL << 40).varint_field(1, 1ULL << 40).varint_field(2, 1);
        CHECK_FALSE(read_single(t, storage, tree));
    }
}

TEST_CASE("packed dims are read") {
    proto_builder packed;
    packed.raw_varint(2).raw_varint(300);
    proto_builder t;
    t.bytes_field(1, packed.bytes()).varint_field(2, 7);
    std::vector<std::byte> storage;
    message_tree tree;
    const auto info = read_single(t, storage, tree);
    REQUIRE(info);
    CHECK(info->dims == std::vector<std::int64_t>{2, 300});
    CHECK(*info->expected_bytes == 4800);
}

TEST_CASE("typed fields convert to little-endian raw bytes") {
    std::vector<std::byte> storage;
    message_tree tree;
    SUBCASE("packed float_data is copied as is") {
        proto_builder t;
        t.varint_field(1, 3).varint_field(2, 1).bytes_field(4, test_support::float_bytes({1.5F, -2.0F, 3.25F}));
        const auto info = read_single(t, storage, tree);
        REQUIRE(info);
        CHECK(info->storage == tensor_storage::typed);
        const auto raw = typed_to_raw(tree, *info);
        REQUIRE(raw);
        CHECK(*raw == test_support::float_bytes({1.5F, -2.0F, 3.25F}));
    }
    SUBCASE("float16 bit patterns in int32_data, packed and unpacked") {
        proto_builder packed;
        packed.raw_varint(0x3C00).raw_varint(0xC000);
        proto_builder t;
        t.varint_field(1, 3).varint_field(2, 10).bytes_field(5, packed.bytes()).varint_field(5, 0x7BFF);
        const auto info = read_single(t, storage, tree);
        REQUIRE(info);
        const auto raw = typed_to_raw(tree, *info);
        REQUIRE(raw);
        const std::vector<std::byte> expected{std::byte{0x00}, std::byte{0x3C}, std::byte{0x00},
                                              std::byte{0xC0}, std::byte{0xFF}, std::byte{0x7B}};
        CHECK(*raw == expected);
    }
    SUBCASE("negative int64 values keep their two's complement bytes") {
        proto_builder packed;
        packed.raw_varint(static_cast<std::uint64_t>(-1)).raw_varint(5);
        proto_builder t;
        t.varint_field(1, 2).varint_field(2, 7).bytes_field(7, packed.bytes());
        const auto info = read_single(t, storage, tree);
        REQUIRE(info);
        const auto raw = typed_to_raw(tree, *info);
        REQUIRE(raw);
        std::int64_t values[2];
        std::memcpy(values, raw->data(), 16);
        CHECK(values[0] == -1);
        CHECK(values[1] == 5);
    }
    SUBCASE("a count that does not match the dims is a size mismatch") {
        proto_builder t;
        t.varint_field(1, 4).varint_field(2, 1).bytes_field(4, test_support::float_bytes({1.0F}));
        const auto info = read_single(t, storage, tree);
        REQUIRE(info);
        const auto raw = typed_to_raw(tree, *info);
        REQUIRE_FALSE(raw);
        CHECK(raw.error().code == error_code::size_mismatch);
    }
}
