// What a path given as a model is (onnx/model_input.hpp): a weights file is told apart
// from a model by its name and its first bytes, and named with the model it belongs to.
#include <onnxstream/onnx/model_input.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

std::vector<std::byte> bytes_of(std::string_view text) {
    std::vector<std::byte> out(text.size());
    if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());  // memcpy of a null pointer is undefined
    return out;
}

}  // namespace

TEST_CASE("starts_like_model: a ModelProto field of its wire type first, as every exporter writes") {
    CHECK(onnx::starts_like_model(bytes_of("\x08\x08")));       // ir_version 8
    CHECK(onnx::starts_like_model(bytes_of("\x12\x05torch")));  // producer_name
    CHECK(onnx::starts_like_model(bytes_of("\x3a\x02..")));     // graph
    CHECK(onnx::starts_like_model(bytes_of("\xca\x01\x00")));   // functions (25), a two-byte tag
    CHECK_FALSE(onnx::starts_like_model(bytes_of("")));
    CHECK_FALSE(onnx::starts_like_model(bytes_of("\x0a\x00")));          // field 1 with the wrong wire type
    CHECK_FALSE(onnx::starts_like_model(bytes_of("\xcd\xcc\x4c\x3e")));  // 0.2f, as a weights file starts
    CHECK_FALSE(onnx::starts_like_model(bytes_of(std::string(8, '\0'))));
    CHECK_FALSE(onnx::starts_like_model(bytes_of("\xff\xff\xff\xff\xff\xff")));
}

TEST_CASE("check_not_data_file: a weights file named after a model beside it names that model") {
    temp_folder dir;
    dir.write("x.onnx", "\x08\x08");
    const auto weights = bytes_of("\xcd\xcc\x4c\x3e");
    for (const char* name : {"x.onnx.data", "x.data", "x.onnx_data", "x.bin"}) {
        const auto checked = onnx::check_not_data_file(dir.path() / name, weights);
        REQUIRE_FALSE(checked);
        CHECK(checked.error().code == error_code::not_onnx);
        CHECK(checked.error().message.find("is the weights file (external data) of " + (dir.path() / "x.onnx").string()) !=
              std::string::npos);
        CHECK(checked.error().hint.find("give x.onnx") != std::string::npos);
    }
    const auto orphan = onnx::check_not_data_file(dir.path() / "y.data", weights);
    REQUIRE_FALSE(orphan);
    CHECK(orphan.error().message.find("named like a weights file") != std::string::npos);
    CHECK(onnx::check_not_data_file(dir.path() / "model.pb", bytes_of("\x08\x08")));  // a model named .pb is a model
    CHECK(onnx::check_not_data_file(dir.path() / "x.onnx", weights));                 // a model's name: parsing says
}

TEST_CASE("probe_model_input: a model, nothing, or something else") {
    temp_folder dir;
    CHECK(*onnx::probe_model_input(dir.write("m.onnx", "\x08\x08")) == onnx::model_input::model);
    CHECK(*onnx::probe_model_input(dir.path() / "absent.onnx") == onnx::model_input::missing);
    CHECK(*onnx::probe_model_input(dir.write("notes.txt", "hello\n")) == onnx::model_input::other);
    CHECK(*onnx::probe_model_input(dir.write("empty.onnx", "")) == onnx::model_input::other);
    CHECK(*onnx::probe_model_input(dir.path()) == onnx::model_input::other);
    dir.write("w.onnx", "\x08\x08");
    CHECK_FALSE(onnx::probe_model_input(dir.write("w.onnx.data", std::string("\xcd\xcc\x4c\x3e", 4))));
}
