#include <onnxstream/io/hashing.hpp>
#include <onnxstream/ops/verify.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

std::string sha1_hex(std::span<const std::byte> bytes) { return io::to_hex(io::sha1_of(bytes)); }

ops::verify_report verify_ok(const fs::path& model, unsigned threads = 1) {
    ops::verify_options options;
    options.threads = threads;
    options.buffer_size = 4096;  // several pieces per tensor
    auto report = ops::verify(model, options);
    REQUIRE(report);
    return std::move(report).value();
}

const ops::verify_problem* problem_for(const ops::verify_report& r, std::string_view tensor) {
    const auto it = std::find_if(r.problems.begin(), r.problems.end(), [&](const auto& p) { return p.tensor == tensor; });
    return it == r.problems.end() ? nullptr : &*it;
}

// Two external tensors in one data file, with checksums, and padding between them.
struct two_tensor_model {
    temp_folder dir;
    fs::path model;
    fs::path data;
    std::vector<std::byte> a = ramp(1024);        // 4096 bytes at 0
    std::vector<std::byte> b = ramp(16, 100.0f);  // 64 bytes at 8192

    explicit two_tensor_model(bool checksums = true) {
        std::vector<std::byte> file(8192 + b.size());
        std::copy(a.begin(), a.end(), file.begin());
        std::copy(b.begin(), b.end(), file.begin() + 8192);
        data = write_bytes(dir.path() / "w.data", file);
        model = write_bytes(
            dir.path() / "m.onnx",
            small_models::model({external_tensor("a", {1024}, "w.data", "0", "4096", checksums ? sha1_hex(a) : ""),
                                 external_tensor("b", {4, 4}, "w.data", "8192", "64", checksums ? sha1_hex(b) : "")}));
    }
};

}  // namespace

TEST_CASE("a whole model is clean; every checksum is read and matched") {
    two_tensor_model m;
    for (const unsigned threads : {1U, 3U}) {
        const auto r = verify_ok(m.model, threads);
        CHECK(r.clean());
        CHECK(r.structure_ok);
        CHECK(r.tensors == 2);
        CHECK(r.external_tensors == 2);
        CHECK(r.checksums == 2);
        CHECK(r.checksums_matched == 2);
        CHECK(r.bytes_hashed == 4096 + 64);
        REQUIRE(r.files.size() == 1);
        CHECK(r.files[0].tensors == 2);
        CHECK(r.files[0].bytes_referenced == 4096 + 64);
        CHECK(r.files[0].unreferenced_bytes == 4096);  // the padding between them
    }
}

TEST_CASE("a flipped byte fails the checksum of exactly that tensor, named with its file") {
    two_tensor_model m;
    auto bytes = m.b;
    bytes[3] ^= std::byte{0x01};
    std::vector<std::byte> file(8192 + bytes.size());
    std::copy(m.a.begin(), m.a.end(), file.begin());
    std::copy(bytes.begin(), bytes.end(), file.begin() + 8192);
    write_bytes(m.data, file);
    const auto r = verify_ok(m.model);
    REQUIRE(r.problems.size() == 1);
    const auto& p = r.problems[0];
    CHECK(p.check == ops::verify_check::checksum);
    CHECK(p.what.code == error_code::checksum_mismatch);
    CHECK(p.tensor == "b");
    CHECK(p.location == "w.data");
    REQUIRE(p.file);
    CHECK(p.file->filename() == "w.data");
    CHECK(p.what.message.find(sha1_hex(m.b)) != std::string::npos);    // expected
    CHECK(p.what.message.find(sha1_hex(bytes)) != std::string::npos);  // found
    CHECK(r.checksums_matched == 1);
}

TEST_CASE("a truncated data file names every tensor it cuts off") {
    two_tensor_model m;
    fs::resize_file(m.data, 4000);
    const auto r = verify_ok(m.model);
    CHECK_FALSE(r.clean());
    for (const auto* name : {"a", "b"}) {
        const auto* p = problem_for(r, name);
        REQUIRE(p != nullptr);
        CHECK(p->check == ops::verify_check::data);
        CHECK(p->what.code == error_code::truncated_data);
        CHECK(p->what.message.find("4000") != std::string::npos);
    }
    CHECK(r.checksums_matched == 0);
}

TEST_CASE("a missing data file is one problem saying how many tensors need it") {
    two_tensor_model m;
    fs::remove(m.data);
    const auto r = verify_ok(m.model);
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].what.code == error_code::missing_data);
    CHECK(r.problems[0].location == "w.data");
    CHECK(r.problems[0].what.message.find("2 tensors") != std::string::npos);
    CHECK_FALSE(r.problems[0].what.hint.empty());
}

TEST_CASE("sizes that disagree with the dims are problems, external or embedded") {
    temp_folder dir;
    const auto bytes = ramp(8);
    write_bytes(dir.path() / "w.data", bytes);
    const auto model = write_bytes(dir.path() / "m.onnx",
                                   small_models::model({external_tensor("short", {3, 3}, "w.data"),  // 36 needed, 32 there
                                                        raw_tensor("raw", {9}, bytes),               // 36 needed, 32 held
                                                        typed_tensor("typed", {2}, bytes)}));        // 8 needed, 32 held
    const auto r = verify_ok(model);
    CHECK(r.problems.size() == 3);
    for (const auto* name : {"short", "raw", "typed"}) {
        const auto* p = problem_for(r, name);
        REQUIRE_MESSAGE(p != nullptr, name);
        CHECK(p->check == ops::verify_check::size);
        CHECK(p->what.code == error_code::size_mismatch);
    }
    CHECK(problem_for(r, "short")->location == "w.data");
    CHECK(problem_for(r, "raw")->location.empty());
}

TEST_CASE("a checksum that is not a SHA-1 is a problem") {
    temp_folder dir;
    const auto bytes = ramp(4);
    write_bytes(dir.path() / "w.data", bytes);
    const auto model = write_bytes(dir.path() / "m.onnx",
                                   small_models::model({external_tensor("w", {4}, "w.data", "", "", "md5:1234")}));
    const auto r = verify_ok(model);
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].check == ops::verify_check::checksum);
    CHECK(r.problems[0].what.message.find("not a SHA-1") != std::string::npos);
}

TEST_CASE("tensors sharing one range (deduplicated) are hashed once; a partial overlap is a note") {
    temp_folder dir;
    const auto bytes = ramp(64);
    write_bytes(dir.path() / "w.data", bytes);
    const auto sum = sha1_hex(std::span(bytes).first(128));
    const auto model = write_bytes(dir.path() / "m.onnx",
                                   small_models::model({external_tensor("x", {32}, "w.data", "0", "128", sum),
                                                        external_tensor("y", {32}, "w.data", "0", "128", sum),
                                                        external_tensor("z", {32}, "w.data", "64", "128")}));
    const auto r = verify_ok(model);
    CHECK(r.clean());
    CHECK(r.checksums_matched == 2);
    CHECK(r.bytes_hashed == 128);
    REQUIRE(r.notes.size() == 1);
    CHECK(r.files[0].bytes_referenced == 192);
}

TEST_CASE("bytes that are not a model are a structure problem; a missing model is an error") {
    temp_folder dir;
    const auto junk = dir.write("junk.onnx", "this is not protobuf at all \xff\xff\xff");
    const auto r = verify_ok(junk);
    CHECK_FALSE(r.structure_ok);
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].check == ops::verify_check::structure);

    const auto missing = ops::verify(dir.path() / "nothing.onnx", {});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == error_code::io);
}

TEST_CASE("an unsafe location is refused and reported, not followed") {
    temp_folder dir;
    dir.write("secret.data", std::string(16, 'x'));
    const auto model = write_bytes(dir.path() / "m/m.onnx", small_models::model({external_tensor("w", {4}, "../secret.data")}));
    const auto r = verify_ok(model);
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].what.code == error_code::unsafe_location);
    CHECK(r.problems[0].check == ops::verify_check::data);
}

TEST_CASE("cancelling stops the hashing with `interrupted`") {
    two_tensor_model m;
    std::atomic<bool> cancel{true};
    ops::verify_options options;
    options.cancel = &cancel;
    const auto r = ops::verify(m.model, options);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == error_code::interrupted);
}

TEST_CASE("verify's progress names the tensor being hashed, and reaches the total") {
    two_tensor_model m;
    for (const unsigned threads : {1U, 2U}) {
        ops::verify_options options;
        options.threads = threads;
        options.buffer_size = 4096;
        std::vector<ops::progress_event> events;
        options.on_progress = [&](const ops::progress_event& e) { events.push_back(e); };
        REQUIRE(ops::verify(m.model, options));
        REQUIRE(!events.empty());
        CHECK(events.front().done == 0);
        CHECK(events.back().done == events.back().total);
        CHECK(events.back().total == m.a.size() + m.b.size());
        std::vector<std::string> named;
        for (const auto& e : events)
            if (e.done > 0) named.push_back(e.tensor);
        CHECK(std::find(named.begin(), named.end(), "a") != named.end());
        CHECK(std::find(named.begin(), named.end(), "b") != named.end());
        CHECK(std::all_of(named.begin(), named.end(), [](const auto& n) { return n == "a" || n == "b"; }));
    }
}
