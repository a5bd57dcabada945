#include <onnxstream/io/output_file.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace onnxstream;
using test_support::names_in;
using test_support::temp_folder;
namespace fs = std::filesystem;

TEST_CASE("nothing appears at the destination until commit; an abandoned output leaves nothing") {
    temp_folder dir;
    const auto target = dir.path() / "out.onnx";
    {
        auto out = io::output_file::create(target, 5, {false, true, false});
        REQUIRE(out);
        CHECK(fs::exists(out->temporary_path()));
        CHECK_FALSE(fs::exists(target));
        CHECK(::pwrite(out->descriptor(), "hello", 5, 0) == 5);
    }
    CHECK(fs::is_empty(dir.path()));
    {
        // Where the file system allows it, the temporary has no name at all.
        auto out = io::output_file::create(target, 5, {});
        REQUIRE(out);
        CHECK(out->temporary_path().empty());
        CHECK(fs::is_empty(dir.path()));
    }

    auto out = io::output_file::create(target, 5, {});
    REQUIRE(out);
    REQUIRE(::pwrite(out->descriptor(), "hello", 5, 0) == 5);
    REQUIRE(out->commit());
    CHECK(test_support::read_file(target) == "hello");
    CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
}

TEST_CASE("an existing output is refused without overwrite and replaced with it") {
    temp_folder dir;
    const auto target = dir.write("out.onnx", "old");
    const auto refused = io::output_file::create(target, 3, {});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == error_code::output_exists);
    auto out = io::output_file::create(target, 3, {true, true});
    REQUIRE(out);
    REQUIRE(::pwrite(out->descriptor(), "new", 3, 0) == 3);
    REQUIRE(out->commit());
    CHECK(test_support::read_file(target) == "new");
}

TEST_CASE("a directory or a missing folder as the output is a clear error") {
    temp_folder dir;
    CHECK(io::output_file::create(dir.path(), 1, {}).error().code == error_code::invalid_argument);
    const auto missing = io::output_file::create(dir.path() / "no" / "such" / "x.onnx", 1, {});
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message.find("does not exist") != std::string::npos);
}

TEST_CASE("the size is reserved up front") {
    temp_folder dir;
    auto out = io::output_file::create(dir.path() / "x", 1 << 20, {});
    REQUIRE(out);
    struct stat st {};
    REQUIRE(::fstat(out->descriptor(), &st) == 0);
    CHECK(st.st_size == 1 << 20);
}

namespace {

void put(io::output_file& out, const std::string& text) {
    REQUIRE(::pwrite(out.descriptor(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
}

}  // namespace

TEST_CASE("a failure after the first move undoes the transaction: replaced files come back, new ones go") {
    for (const bool anonymous : {true, false}) {
        CAPTURE(anonymous);
        temp_folder dir;
        const auto first = dir.write("first.data", "old first");
        const auto second = dir.path() / "second.data";
        const auto model = dir.write("model.onnx", "old model");
        const io::output_options options{true, true, anonymous};
        auto a = io::output_file::create(first, 9, options);
        auto b = io::output_file::create(second, 10, options);
        auto c = io::output_file::create(model, 9, options);
        REQUIRE((a && b && c));
        put(*a, "new first");
        put(*b, "new second");
        put(*c, "new model");
        // While writing, the model becomes something that must not be replaced.
        fs::remove(model);
        REQUIRE(::mkfifo(model.c_str(), 0644) == 0);
        io::output_file* all[] = {&*a, &*b, &*c};
        const auto committed = io::commit_outputs(all);
        REQUIRE_FALSE(committed);
        CHECK(committed.error().message.find("FIFO") != std::string::npos);
        CHECK(test_support::read_file(first) == "old first");
        CHECK_FALSE(fs::exists(second));
        CHECK(fs::is_fifo(fs::symlink_status(model)));
        CHECK(names_in(dir.path()) == std::vector<std::string>{"first.data", "model.onnx"});
    }
}

TEST_CASE("a transaction that succeeds replaces every file and leaves no backup") {
    temp_folder dir;
    const auto data = dir.write("model.onnx.data", "old data");
    const auto model = dir.write("model.onnx", "old model");
    auto a = io::output_file::create(data, 8, {true, true});
    auto b = io::output_file::create(model, 9, {true, true});
    REQUIRE((a && b));
    put(*a, "new data");
    put(*b, "new model");
    io::output_file* all[] = {&*a, &*b};
    REQUIRE(io::commit_outputs(all));
    CHECK(test_support::read_file(data) == "new data");
    CHECK(test_support::read_file(model) == "new model");
    CHECK(names_in(dir.path()) == std::vector<std::string>{"model.onnx", "model.onnx.data"});
}

TEST_CASE("only regular files are replaced; a dangling link exists") {
    temp_folder dir;
    const auto fifo = dir.path() / "fifo.onnx";
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    const auto dangling = dir.path() / "dangling.onnx";
    fs::create_symlink(dir.path() / "nowhere.onnx", dangling);
    CHECK(io::output_file::create(fifo, 1, {true, true}).error().code == error_code::invalid_argument);
    CHECK(io::output_file::create(dangling, 1, {false, true}).error().code == error_code::output_exists);
    const auto forced = io::output_file::create(dangling, 1, {true, true});
    REQUIRE_FALSE(forced);
    CHECK(forced.error().message.find("symbolic link") != std::string::npos);
    CHECK(fs::is_fifo(fs::symlink_status(fifo)));
    CHECK(fs::is_symlink(fs::symlink_status(dangling)));
    CHECK_FALSE(fs::exists(dir.path() / "nowhere.onnx"));
}

TEST_CASE("a replaced file keeps its mode") {
    for (const bool anonymous : {true, false}) {
        CAPTURE(anonymous);
        temp_folder dir;
        const auto target = dir.write("private.onnx", "old");
        fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);
        auto out = io::output_file::create(target, 3, {true, true, anonymous});
        REQUIRE(out);
        put(*out, "new");
        REQUIRE(out->commit());
        CHECK(fs::status(target).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
    }
}

TEST_CASE("a destination name of 255 bytes works: the temporary's name is short") {
    for (const bool anonymous : {true, false}) {
        CAPTURE(anonymous);
        temp_folder dir;
        const auto target = dir.path() / (std::string(250, 'm') + ".onnx");
        auto out = io::output_file::create(target, 2, {false, true, anonymous});
        REQUIRE(out);
        put(*out, "ok");
        REQUIRE(out->commit());
        CHECK(test_support::read_file(target) == "ok");
    }
}

TEST_CASE("without overwrite, an output that appears while writing undoes the outputs already placed") {
    for (const bool anonymous : {true, false}) {
        CAPTURE(anonymous);
        temp_folder dir;
        const auto data = dir.path() / "x.onnx.data";
        const auto model = dir.path() / "x.onnx";
        const io::output_options options{false, true, anonymous};
        auto a = io::output_file::create(data, 4, options);
        auto b = io::output_file::create(model, 5, options);
        REQUIRE((a && b));
        put(*a, "data");
        put(*b, "model");
        fs::create_symlink(dir.path() / "elsewhere", model);  // dangling: it exists all the same
        io::output_file* all[] = {&*a, &*b};
        const auto committed = io::commit_outputs(all);
        REQUIRE_FALSE(committed);
        CHECK(committed.error().code == error_code::output_exists);
        CHECK(names_in(dir.path()) == std::vector<std::string>{"x.onnx"});
        CHECK(fs::is_symlink(fs::symlink_status(model)));
    }
}
