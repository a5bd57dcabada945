// onnx::encode_tensor_header and encode_external_location against bytes written out by
// hand from the protobuf wire format (TensorProto: dims = 1, data_type = 2, name = 8,
// external_data = 13 of StringStringEntryProto {key = 1, value = 2}, data_location = 14).
#include <onnxstream/onnx/tensor_encoding.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace onnxstream;

namespace {

std::string flat(const proto::encoded_message& m) {
    REQUIRE(!m.has_slices());
    const auto pool = m.pool();
    return std::string(reinterpret_cast<const char*>(pool.data()), pool.size());
}

}  // namespace

TEST_CASE("encode_tensor_header: dims, then data_type, then name") {
    proto::encoded_message m;
    const std::vector<std::int64_t> dims{3, 300};
    onnx::encode_tensor_header(m, dims, 1, "w");
    // 08 03 | 08 ac 02 | 10 01 | 42 01 'w'
    CHECK(flat(m) == std::string("\x08\x03\x08\xac\x02\x10\x01\x42\x01w", 10));
    CHECK(m.size() == 10);
}

TEST_CASE("encode_external_location: location, offset, length entries, then data_location = EXTERNAL") {
    proto::encoded_message m;
    onnx::encode_external_location(m, "d", 4096, 7);
    std::string expected;
    auto entry = [&](const std::string& key, const std::string& value) {
        const std::string payload = std::string("\x0a") + static_cast<char>(key.size()) + key + "\x12" +
                                    static_cast<char>(value.size()) + value;
        expected += std::string("\x6a") + static_cast<char>(payload.size()) + payload;
    };
    entry("location", "d");
    entry("offset", "4096");
    entry("length", "7");
    expected += std::string("\x70\x01", 2);
    CHECK(flat(m) == expected);
}
