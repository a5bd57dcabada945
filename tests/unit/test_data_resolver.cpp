#include <onnxstream/onnx/data_resolver.hpp>

#include "temp_folder.hpp"

#include <onnxstream/io/hashing.hpp>

#include <sys/stat.h>

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::temp_folder;
namespace fs = std::filesystem;

namespace {

// Why resolving `location` beside `model` fails (the test fails when it does not).
error refusal(const fs::path& model, resolve_options options, std::string_view location, const data_needs& needs = {}) {
    data_resolver r(model, std::move(options));
    const auto found = r.resolve(location, needs);
    REQUIRE_FALSE(found);
    return found.error();
}

// Where resolving `location` beside `model` finds the file (the test fails when it does not).
resolved_location located(const fs::path& model, resolve_options options, std::string_view location,
                          const data_needs& needs = {}) {
    data_resolver r(model, std::move(options));
    const auto found = r.resolve(location, needs);
    REQUIRE(found);
    return found->where;
}

}  // namespace

TEST_CASE("locations written in a model may not be absolute or leave the folder") {
    CHECK(data_resolver::check_location_text("weights.bin"));
    CHECK(data_resolver::check_location_text("data/weights.bin"));
    for (const auto* bad : {"/etc/passwd", "../secret.bin", "data/../../x", "..", "C:\\x", "\\\\server\\x"}) {
        const auto status = data_resolver::check_location_text(bad);
        REQUIRE_FALSE(status);
        CHECK(status.error().code == error_code::unsafe_location);
    }
    const std::string with_nul("a\0b", 3);
    CHECK_FALSE(data_resolver::check_location_text(with_nul));
}

TEST_CASE("the search order of DESIGN.md") {
    temp_folder dir;
    const auto model = dir.write("model/model.onnx", "m");
    SUBCASE("next to the model, in a subfolder") {
        dir.write("model/data/w.bin", "x");
        data_resolver r(model, {});
        const auto found = r.resolve("data/w.bin");
        REQUIRE(found);
        CHECK(found->where.how == how_found{.step = found_by::model_folder});
        CHECK(found->where.path == found->where.as_written);
    }
    SUBCASE("a single --data serves every location") {
        const auto data = dir.write("elsewhere/anything.bin", "x");
        data_resolver r(model, {{data}, {}});
        const auto found = r.resolve("model.onnx.data");
        REQUIRE(found);
        CHECK(found->where.how == how_found{.step = found_by::data_flag});  // the file given is the path
        CHECK(found->where.path == data);
        CHECK_FALSE(found->where.guess());
    }
    SUBCASE("several --data match by file name") {
        const auto a = dir.write("x/a.bin", "x");
        const auto b = dir.write("y/b.bin", "x");
        data_resolver r(model, {{a, b}, {}});
        CHECK(r.resolve("b.bin")->where.path == b);
        CHECK(r.resolve("a.bin")->where.path == a);
        const auto missing = r.resolve("c.bin");
        REQUIRE_FALSE(missing);
        CHECK(missing.error().code == error_code::missing_data);
    }
    SUBCASE("--data-dir: the location, then its file name") {
        dir.write("store/sub/w.bin", "x");
        dir.write("store/v.bin", "x");
        dir.write("second/u.bin", "x");
        const auto store = dir.path() / "store";
        const auto second = dir.path() / "second";
        data_resolver r(model, {{}, {store, second}});
        const auto by_location = r.resolve("sub/w.bin");
        REQUIRE(by_location);
        // The folder given that held it is carried as data, for a front end to word.
        CHECK(by_location->where.how == how_found{.step = found_by::data_dir, .data_dir = store});
        CHECK(by_location->where.path == store / "sub" / "w.bin");
        CHECK(r.resolve("other/v.bin")->where.how == how_found{.step = found_by::data_dir_file_name, .data_dir = store});
        // The second folder, when the first holds nothing of that name.
        CHECK(r.resolve("u.bin")->where.how == how_found{.step = found_by::data_dir, .data_dir = second});
        CHECK_FALSE(r.resolve("u.bin")->where.guess());
    }
    SUBCASE("the file name in the model's folder") {
        dir.write("model/w.bin", "x");
        data_resolver r(model, {});
        const auto found = r.resolve("gone/w.bin");
        REQUIRE(found);
        CHECK(found->where.how == how_found{.step = found_by::file_name_in_model_folder});
        CHECK(found->where.guess());
        CHECK(found->where.as_written == dir.path() / "model" / "gone" / "w.bin");
    }
    SUBCASE("common names") {
        dir.write("model/model.data", "x");
        data_resolver r(model, {});
        const auto found = r.resolve("model.onnx.data");
        REQUIRE(found);
        CHECK(found->where.how == how_found{.step = found_by::common_name, .common_name = "model.data"});
        CHECK(found->where.path.filename() == "model.data");
        CHECK(found->where.guess());
    }
    SUBCASE("the only data-like file") {
        dir.write("model/export_weights.bin", "x");
        dir.write("model/README.md", "x");
        data_resolver r(model, {});
        const auto found = r.resolve("renamed.data");
        REQUIRE(found);
        CHECK(found->where.how == how_found{.step = found_by::only_data_file});
        CHECK(found->where.path.filename() == "export_weights.bin");
    }
    SUBCASE("nothing found: the hint lists what was tried and names the data file or folder to give") {
        const auto refused = refusal(model, {}, "missing.data");
        CHECK(refused.code == error_code::missing_data);
        CHECK(refused.hint.find((dir.path() / "model" / "missing.data").string()) != std::string::npos);
        CHECK(refused.hint.ends_with("{0}"));  // worded by each front end: --data FILE, --data-dir DIR
        REQUIRE(refused.remedies.size() == 1);
        CHECK(refused.remedies[0].change == remedy::give_data_location);
    }
    SUBCASE("unsafe locations are refused even when a fallback would exist") {
        dir.write("model/model.onnx.data", "x");
        data_resolver r(model, {});
        CHECK(r.resolve("../model/model.onnx.data").error().code == error_code::unsafe_location);
        CHECK(r.resolve("/etc/passwd").error().code == error_code::unsafe_location);
    }
}

TEST_CASE("symlinks must stay inside the model's folder, or the Hugging Face blobs") {
    temp_folder dir;
    const auto secret = dir.write("outside/secret.bin", "s");
    const auto model = dir.write("model/model.onnx", "m");
    fs::create_symlink(secret, dir.path() / "model" / "w.bin");
    const auto refused = refusal(model, {}, "w.bin");
    CHECK(refused.code == error_code::unsafe_location);
    CHECK(refused.message.find("secret.bin") != std::string::npos);

    // <repo>/snapshots/<rev>/model.onnx -> ../../blobs/<hash>
    const auto blob = dir.write("hub/models--x/blobs/abc123", "weights");
    dir.write("hub/models--x/blobs/def456", "model");
    const auto snapshot = dir.path() / "hub/models--x/snapshots/rev1";
    fs::create_directories(snapshot);
    fs::create_symlink("../../blobs/def456", snapshot / "model.onnx");
    fs::create_symlink("../../blobs/abc123", snapshot / "model.onnx.data");
    data_resolver hub(snapshot / "model.onnx", {});
    const auto hub_found = hub.resolve("model.onnx.data");
    REQUIRE(hub_found);
    CHECK(fs::canonical(hub_found->where.path) == fs::canonical(blob));
}

TEST_CASE("the Hugging Face rule holds only for a real blobs folder inside the repository") {
    temp_folder dir;
    const auto secret = dir.write("outside/secret.bin", "s");
    const auto snapshot = dir.path() / "hub/models--x/snapshots/rev1";
    const auto model = dir.write("hub/models--x/snapshots/rev1/model.onnx", "m");
    SUBCASE("blobs is a link to /") {
        fs::create_directory_symlink("/", dir.path() / "hub/models--x/blobs");
        fs::create_symlink("../../blobs" + secret.string(), snapshot / "model.onnx.data");
        data_resolver r(model, {});
        const auto found = r.resolve("model.onnx.data");
        REQUIRE_FALSE(found);
        CHECK(found.error().code == error_code::unsafe_location);
        CHECK(r.allowed_roots().size() == 1);
    }
    SUBCASE("blobs is a link to a folder outside the repository") {
        fs::create_directory_symlink(secret.parent_path(), dir.path() / "hub/models--x/blobs");
        fs::create_symlink("../../blobs/secret.bin", snapshot / "model.onnx.data");
        const auto refused = refusal(model, {}, "model.onnx.data");
        CHECK(refused.code == error_code::unsafe_location);
        CHECK(refused.message.find("secret.bin") != std::string::npos);
    }
}

TEST_CASE("the Hugging Face layout at any depth inside the snapshot") {
    temp_folder dir;
    const auto blob = dir.write("hub/models--x/blobs/abc123", "weights");
    const auto onnx_folder = dir.path() / "hub/models--x/snapshots/rev1/onnx/fp16";
    const auto model = dir.write("hub/models--x/snapshots/rev1/onnx/fp16/model.onnx", "m");
    fs::create_symlink("../../../../blobs/abc123", onnx_folder / "model.onnx_data");
    data_resolver r(model, {});
    const auto found = r.resolve("model.onnx_data");
    REQUIRE(found);
    CHECK(found->where.how.step == found_by::model_folder);
    CHECK(found->file.size() == 7);
    CHECK(found->file.identity() == *io::identity_of(blob));
}

TEST_CASE("a link into a --data-dir is followed: the user named that folder") {
    temp_folder dir;
    const auto blob = dir.write("store/blobs/abc123", "weights");
    const auto model = dir.write("m/model.onnx", "m");
    fs::create_symlink(blob, dir.path() / "m/model.onnx.data");
    CHECK(data_resolver(model, {}).resolve("model.onnx.data").error().code == error_code::unsafe_location);
    data_resolver r(model, {{}, {dir.path() / "store/blobs"}});
    const auto found = r.resolve("model.onnx.data");
    REQUIRE(found);
    CHECK(found->file.identity() == *io::identity_of(blob));
}

TEST_CASE("a guess is taken only when it fits what the tensors need") {
    temp_folder dir;
    const auto model = dir.write("m/model.onnx", "m");
    dir.write("m/model.data", "0123456789");
    data_needs needs;
    SUBCASE("long enough, no checksum: taken, and it says it is a guess") {
        needs.bytes = 10;
        const auto where = located(model, {}, "model.onnx.data", needs);
        CHECK(where.guess());
        CHECK(where.as_written == dir.path() / "m/model.onnx.data");
    }
    SUBCASE("too short: not taken, and the error says why") {
        needs.bytes = 11;
        const auto refused = refusal(model, {}, "model.onnx.data", needs);
        CHECK(refused.code == error_code::missing_data);
        CHECK(refused.hint.find("model.data (common name model.data: a guess, not taken: it is 10 bytes, the "
                                "tensors need 11)") != std::string::npos);
    }
    SUBCASE("a checksum that does not match: not taken") {
        needs.bytes = 10;
        const auto digest = io::sha1_of(std::as_bytes(std::span(std::string_view("0123"))));
        needs.checksums.push_back({0, 4, digest});
        data_resolver good(model, {});
        CHECK(good.resolve("model.onnx.data", needs));
        needs.checksums.push_back({4, 4, digest});
        const auto refused = refusal(model, {}, "model.onnx.data", needs);
        CHECK(refused.hint.find("do not match their SHA-1 checksum") != std::string::npos);
    }
    SUBCASE("a FIFO under a common name is not taken, and not opened") {
        fs::remove(dir.path() / "m/model.data");
        REQUIRE(::mkfifo((dir.path() / "m/model.data").c_str(), 0600) == 0);
        const auto refused = refusal(model, {}, "model.onnx.data");
        CHECK(refused.code == error_code::missing_data);
        CHECK(refused.hint.find("not a regular file") != std::string::npos);
    }
    SUBCASE("guesses off (--strict): not taken") {
        const auto refused = refusal(model, {{}, {}, false}, "model.onnx.data");
        CHECK(refused.hint.find("a guess, not taken with {1}") != std::string::npos);  // --strict, or the page's 'strict'
        REQUIRE(refused.remedies.size() == 2);
        CHECK(refused.remedies[1].change == remedy::refuse_guesses);
    }
    SUBCASE("the location as written and what the user gave are not guesses") {
        dir.write("m/model.onnx.data", "x");
        const auto given = dir.write("elsewhere/w.bin", "x");
        data_resolver r(model, {{}, {}, false});
        CHECK_FALSE(r.resolve("model.onnx.data")->where.guess());
        data_resolver flagged(model, {{given}, {}, false});
        CHECK_FALSE(flagged.resolve("other.bin")->where.guess());
        data_resolver in_dir(model, {{}, {given.parent_path()}, false});
        CHECK_FALSE(in_dir.resolve("sub/w.bin")->where.guess());
    }
}

TEST_CASE("a location that names a folder says so") {
    temp_folder dir;
    const auto model = dir.write("m/model.onnx", "m");
    fs::create_directories(dir.path() / "m/weights.data");
    data_resolver r(model, {});
    const auto slash = r.resolve("weights.data/");
    REQUIRE_FALSE(slash);
    CHECK(slash.error().message.find("'weights.data/' ends with a separator") != std::string::npos);
    const auto folder = r.resolve("weights.data");
    REQUIRE_FALSE(folder);
    CHECK(folder.error().message.find("'weights.data' is a directory") != std::string::npos);
}

TEST_CASE("a located file opens as the file that was checked, whatever its name leads to by then") {
    temp_folder dir;
    const auto good = dir.write("m/good.bin", "good");
    dir.write("outside/secret.bin", "secret");
    const auto link = dir.path() / "m/w.bin";
    fs::create_symlink("good.bin", link);
    auto located = io::located_file::locate(link);
    REQUIRE(located);
    CHECK(located->real_path() == fs::canonical(good));
    CHECK(located->is_regular());
    fs::remove(link);
    fs::create_symlink(dir.path() / "outside/secret.bin", link);  // flipped after the check
    auto file = located->open(false);
    REQUIRE(file);
    std::string content(4, '\0');
    REQUIRE(file->read_at(0, std::as_writable_bytes(std::span(content))));
    CHECK(content == "good");
    CHECK(file->identity() == *io::identity_of(good));
    // A name that leads nowhere is missing data, not an I/O failure.
    const auto missing = io::located_file::locate(dir.path() / "m/nothing.bin");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == error_code::missing_data);
}

TEST_CASE("a path given to a front end stays inside its folder, links included") {
    temp_folder root;
    temp_folder outside;
    root.write("models/m.onnx", "x");
    outside.write("secret.txt", "s");
    fs::create_symlink(outside.path() / "secret.txt", root.path() / "link.txt");
    fs::create_symlink(outside.path(), root.path() / "linkdir");
    fs::create_symlink(root.path() / "models", root.path() / "inside");
    const auto real_root = fs::canonical(root.path());
    CHECK(contained_path(root.path(), "").value() == real_root);
    CHECK(contained_path(root.path(), "models/m.onnx").value() == real_root / "models" / "m.onnx");
    CHECK(contained_path(root.path(), "models/new.onnx").value() == real_root / "models" / "new.onnx");  // outputs
    CHECK(contained_path(root.path(), "inside/m.onnx").value() == real_root / "models" / "m.onnx");
    for (const auto* bad : {"../x", "models/../../x", "/etc/passwd", "link.txt", "linkdir/secret.txt", "linkdir/new.onnx"}) {
        const auto refused = contained_path(root.path(), bad);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == error_code::unsafe_location);
    }
}
