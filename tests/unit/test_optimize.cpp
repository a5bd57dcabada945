// optimize on redundant_model.hpp: the passes remove what analyze reported (test_analyze.cpp),
// the output holds the four nodes that compute Y, and parse_pass_list takes known names once.
#include <onnxstream/ops/optimize.hpp>

#include "redundant_model.hpp"

using namespace onnxstream;
using namespace test_passes;

TEST_CASE("optimize removes the dead node with its initializer, the duplicate and the Identity") {
    harness h(redundant_model());
    ops::optimize_options options;
    options.output = h.folder().path() / "optimized.onnx";
    options.backend = io::writer_backend::portable;
    const auto report = ops::optimize(h.path(), options);
    REQUIRE(report);
    CHECK(report->before.nodes == 7);
    CHECK(report->before.initializers == 1);
    CHECK(report->after.nodes == 4);
    CHECK(report->after.initializers == 0);
    CHECK(report->after.initializer_bytes == 0);
    CHECK(report->storage == "embedded");
    CHECK(report->output_size == std::filesystem::file_size(options.output));

    const auto bytes = test_support::read_file(options.output);
    harness out(std::as_bytes(std::span(bytes.data(), bytes.size())));
    CHECK(out.op_counts() == std::map<std::string, int>{{"Add", 2}, {"Relu", 1}, {"Sigmoid", 1}});
}

TEST_CASE("a dry run reports the same and writes nothing") {
    harness h(redundant_model());
    ops::optimize_options options;
    options.output = h.folder().path() / "optimized.onnx";
    options.dry_run = true;
    const auto report = ops::optimize(h.path(), options);
    REQUIRE(report);
    CHECK(report->dry_run);
    CHECK(report->after.nodes == 4);
    CHECK_FALSE(std::filesystem::exists(options.output));
}

TEST_CASE("parse_pass_list: known names, in the order given, each once") {
    const auto two = ops::parse_pass_list("dce,cse");
    REQUIRE(two);
    CHECK(*two == std::vector<std::string>{"dce", "cse"});
    CHECK(ops::parse_pass_list("dce,dce").error().code == error_code::invalid_argument);
    CHECK(ops::parse_pass_list("no-such-pass").error().code == error_code::invalid_argument);
    CHECK_FALSE(ops::parse_pass_list(""));
}

TEST_CASE("with findings only counted, every pass reports the same totals and the same skips") {
    harness h(redundant_model());
    ops::optimize_options options;
    options.output = h.folder().path() / "optimized.onnx";
    options.dry_run = true;
    const auto kept = ops::optimize(h.path(), options);
    options.keep_findings = false;
    const auto counted = ops::optimize(h.path(), options);
    REQUIRE(kept);
    REQUIRE(counted);
    REQUIRE(kept->passes.size() == counted->passes.size());
    std::uint64_t kept_findings = 0;
    for (std::size_t p = 0; p < kept->passes.size(); ++p) {
        CAPTURE(kept->passes[p].name);
        const auto a = ops::totals(kept->passes[p]);
        const auto b = ops::totals(counted->passes[p]);
        CHECK(a.nodes == b.nodes);
        CHECK(a.initializers == b.initializers);
        CHECK(a.bytes == b.bytes);
        CHECK(a.value_info == b.value_info);
        CHECK(a.skipped == b.skipped);
        CHECK(kept->passes[p].changes == counted->passes[p].changes);
        // Only skips are kept as findings.
        counted->passes[p].findings.for_each(
            [](const ops::finding_list::view& f) { CHECK(f.kind == passes::finding_kind::skipped); });
        kept_findings += kept->passes[p].findings.size();
    }
    CHECK(kept_findings >= 3);  // the dead node, the duplicate and the Identity at least
    CHECK(counted->after.nodes == kept->after.nodes);
}
