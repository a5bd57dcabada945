#include <onnxstream/onnx/data_resolver.hpp>

#include "temp_folder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace onnxstream::onnx;
using test_support::temp_folder;
namespace fs = std::filesystem;

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
        CHECK(found->how == found_by::model_folder);
    }
    SUBCASE("a single --data serves every location") {
        const auto data = dir.write("elsewhere/anything.bin", "x");
        data_resolver r(model, {{data}, {}});
        const auto found = r.resolve("model.onnx.data");
        REQUIRE(found);
        CHECK(found->how == found_by::data_flag);
        CHECK(found->path == data);
    }
    SUBCASE("several --data match by file name") {
        const auto a = dir.write("x/a.bin", "x");
        const auto b = dir.write("y/b.bin", "x");
        data_resolver r(model, {{a, b}, {}});
        CHECK(r.resolve("b.bin")->path == b);
        CHECK(r.resolve("a.bin")->path == a);
        const auto missing = r.resolve("c.bin");
        REQUIRE_FALSE(missing);
        CHECK(missing.error().code == error_code::missing_data);
    }
    SUBCASE("--data-dir: the location, then its file name") {
        dir.write("store/sub/w.bin", "x");
        dir.write("store/v.bin", "x");
        data_resolver r(model, {{}, {dir.path() / "store"}});
        CHECK(r.resolve("sub/w.bin")->how == found_by::data_dir);
        CHECK(r.resolve("other/v.bin")->how == found_by::data_dir_file_name);
    }
    SUBCASE("the file name in the model's folder") {
        dir.write("model/w.bin", "x");
        data_resolver r(model, {});
        CHECK(r.resolve("gone/w.bin")->how == found_by::file_name_in_model_folder);
    }
    SUBCASE("common names") {
        dir.write("model/model.data", "x");
        data_resolver r(model, {});
        const auto found = r.resolve("model.onnx.data");
        REQUIRE(found);
        CHECK(found->how == found_by::common_name);
        CHECK(found->path.filename() == "model.data");
    }
    SUBCASE("the only data-like file") {
        dir.write("model/export_weights.bin", "x");
        dir.write("model/README.md", "x");
        data_resolver r(model, {});
        CHECK(r.resolve("renamed.data")->how == found_by::only_data_file);
    }
    SUBCASE("nothing found: the hint lists what was tried and the flags") {
        data_resolver r(model, {});
        const auto found = r.resolve("missing.data");
        REQUIRE_FALSE(found);
        CHECK(found.error().code == error_code::missing_data);
        CHECK(found.error().hint.find((dir.path() / "model" / "missing.data").string()) != std::string::npos);
        CHECK(found.error().hint.find("--data FILE") != std::string::npos);
        CHECK(found.error().hint.find("--data-dir DIR") != std::string::npos);
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
    data_resolver r(model, {});
    const auto found = r.resolve("w.bin");
    REQUIRE_FALSE(found);
    CHECK(found.error().code == error_code::unsafe_location);
    CHECK(found.error().message.find("secret.bin") != std::string::npos);

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
    CHECK(fs::canonical(hub_found->path) == fs::canonical(blob));
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
