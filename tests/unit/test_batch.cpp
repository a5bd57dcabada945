// A batch of merges with one thread budget (ops/batch.hpp): results in the models' order,
// progress summed, and a cancelled write that leaves nothing behind.
#include <onnxstream/ops/batch.hpp>

#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

// A model whose one tensor (`floats` floats) lives in `<name>.data`.
std::string external_model(const temp_folder& dir, const std::string& name, std::size_t floats) {
    write_bytes(dir.path() / (name + ".data"), ramp(floats));
    const auto length = std::to_string(floats * 4);
    return write_bytes(dir.path() / (name + ".onnx"), model({external_tensor("w", {floats}, name + ".data", "0", length)}))
        .string();
}

}  // namespace

TEST_CASE("a batch merges every model, in order, sharing the threads") {
    temp_folder dir;
    const std::vector<std::string> models{external_model(dir, "a", 1024), external_model(dir, "b", 2048),
                                          external_model(dir, "c", 512)};
    ops::rewrite_options options;
    options.threads = 3;
    options.backend = io::writer_backend::portable;
    std::mutex mutex;
    std::uint64_t last_total = 0;
    options.on_progress = [&](const ops::progress_event& event) {
        std::lock_guard lock(mutex);
        CHECK(event.done <= event.total);
        last_total = std::max(last_total, event.total);
    };
    ops::merge_batch batch(models, options);
    batch.start();
    std::uint64_t outputs = 0;
    for (std::size_t i = 0; i < models.size(); ++i) {
        auto& report = batch.wait_for(i);
        REQUIRE(report);
        CHECK(report->input == fs::path(models[i]));
        CHECK(report->output == ops::default_output(models[i], "merged"));
        CHECK(report->tensors_inlined == 1);
        CHECK(fs::exists(report->output));
        outputs += report->output_size;
    }
    // Progress is one stage for the batch: its total is every model's bytes at the end.
    CHECK(last_total == outputs);
}

TEST_CASE("a merge cancelled while writing leaves no output and no temporary file") {
    temp_folder dir;
    // 16 MiB of weights: the writer goes through many 1 MiB slices, checking between them.
    const auto model = external_model(dir, "big", 4U << 20);
    const auto before = names_in(dir.path());
    for (const auto backend : {io::writer_backend::portable, io::writer_backend::automatic}) {
        CAPTURE(static_cast<int>(backend));
        std::atomic<bool> cancel{false};
        ops::rewrite_options options;
        options.threads = 1;
        options.backend = backend;
        options.cancel = &cancel;
        bool saw_bytes = false;
        options.on_progress = [&](const ops::progress_event& event) {
            // As a front end's Cancel button would: once the first bytes are on their way.
            if (event.done > 0 && event.done < event.total) {
                saw_bytes = true;
                cancel.store(true);
            }
        };
        ops::merge_batch batch(std::span(&model, 1), options);
        batch.start();
        const auto& report = batch.wait_for(0);
        REQUIRE_FALSE(report);
        CHECK(report.error().code == error_code::interrupted);
        CHECK(saw_bytes);
        CHECK_FALSE(fs::exists(ops::default_output(model, "merged")));
        CHECK(names_in(dir.path()) == before);
    }
}

TEST_CASE("models a cancelled batch never started report `interrupted`") {
    temp_folder dir;
    const std::vector<std::string> models{external_model(dir, "a", 256), external_model(dir, "b", 256)};
    std::atomic<bool> cancel{true};
    ops::rewrite_options options;
    options.cancel = &cancel;
    options.threads = 1;  // one at a time: each is refused as it comes up
    ops::merge_batch batch(models, options);
    batch.start();
    for (std::size_t i = 0; i < models.size(); ++i) {
        const auto& report = batch.wait_for(i);
        REQUIRE_FALSE(report);
        CHECK(report.error().code == error_code::interrupted);
        CHECK_FALSE(fs::exists(ops::default_output(models[i], "merged")));
    }
}
