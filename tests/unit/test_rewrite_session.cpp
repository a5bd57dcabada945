// The rewrite session every rewriting command runs on: an identity rewrite reproduces the
// model python-onnx wrote, nothing is in place before the commit, outputs are claimed by
// the rules of check_output (and repack's in-place rule), and the writer's sources stay
// right when the session moves (the bound model's sources are its members).
#include <onnxstream/ops/rewrite_session.hpp>

#include "reference_model.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <utility>

using namespace onnxstream;
using test_support::temp_folder;

namespace {

ops::rewrite_options options_for(const std::filesystem::path& output) {
    ops::rewrite_options options;
    options.output = output;
    options.backend = io::writer_backend::portable;
    options.threads = 1;
    return options;
}

std::size_t files_in(const std::filesystem::path& folder) {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++count;
    return count;
}

}  // namespace

TEST_CASE("an identity rewrite reproduces the model byte for byte, in place only after the commit") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto output = dir.path() / "same.onnx";
    const auto options = options_for(output);
    std::vector<error> warnings;
    auto opened = ops::rewrite_session::open(model, options, warnings);
    REQUIRE(opened);
    // Moved before use: the writer's sources must follow the bound model.
    auto session = std::move(*opened);
    REQUIRE(session.claim_output(output));
    const onnx::tree_edits edits;
    auto planned = session.plan_model(edits);
    REQUIRE(planned);
    CHECK(planned->size() == sizeof test_support::reference_model);
    REQUIRE(session.write(output, *planned, edits));
    CHECK(std::string(session.writer()) != "");
    CHECK_FALSE(std::filesystem::exists(output));
    REQUIRE(session.commit());
    CHECK(test_support::read_file(output) == test_support::text_of(test_support::reference_model));
    CHECK(warnings.empty());
}

TEST_CASE("a session dropped before its commit leaves no output") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto before = files_in(dir.path());
    const auto options = options_for(dir.path() / "out.onnx");
    std::vector<error> warnings;
    {
        auto session = ops::rewrite_session::open(model, options, warnings);
        REQUIRE(session);
        REQUIRE(session->write_text(dir.path() / "notes.txt", "text"));
        plan::write_plan plan;
        plan.copy(onnx::bound_model::source_of_file(onnx::data_file_id(0)).value, 0, 64);
        REQUIRE(session->write(dir.path() / "out.data", plan));
    }
    CHECK(files_in(dir.path()) == before);
}

TEST_CASE("claim_output refuses the inputs; repack's in-place rule lets them go only with the model and --force") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto data = dir.path() / "w.bin";
    auto options = options_for(model);
    std::vector<error> warnings;
    auto session = ops::rewrite_session::open(model, options, warnings);
    REQUIRE(session);
    for (const auto& input : {model, data}) {
        const auto claimed = session->claim_output(input);
        REQUIRE_FALSE(claimed);
        CHECK(claimed.error().code == error_code::output_is_input);
    }
    // A data file of another model output: the input model would be left reading new bytes.
    session->allow_in_place(dir.path() / "other.onnx");
    const auto elsewhere = session->claim_output(data);
    REQUIRE_FALSE(elsewhere);
    CHECK(elsewhere.error().message.find("still needs") != std::string::npos);
    // In place, but without --force.
    session->allow_in_place(model);
    CHECK_FALSE(session->claim_output(data));
    options.force = true;
    CHECK(session->claim_output(data));
    CHECK(session->claim_output(model));
    // A data file may never be the model it belongs to.
    const auto data_as_model = session->claim_output(model, {.model_output = model});
    REQUIRE_FALSE(data_as_model);
}

TEST_CASE("checksum_check adds no check for a tensor without a checksum key") {
    temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto options = options_for(dir.path() / "out.onnx");
    std::vector<error> warnings;
    auto session = ops::rewrite_session::open(model, options, warnings);
    REQUIRE(session);
    plan::write_plan plan;
    CHECK(session->checksum_check(plan, onnx::site_id(0)) == io::no_check);
    CHECK(plan.checks().empty());
    CHECK(session->verify_checksums());
    CHECK(warnings.empty());
}
