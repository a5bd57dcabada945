// analyze on redundant_model.hpp: one finding per redundancy, each saying what its own
// removal saves, and a total that counts every removable node once (what optimize then
// removes, test_optimize.cpp).
#include <onnxstream/ops/analyze.hpp>
#include <onnxstream/passes/pass_driver.hpp>
#include <onnxstream/report/json.hpp>
#include <onnxstream/report/text.hpp>

#include "redundant_model.hpp"

#include <atomic>
#include <vector>

using namespace onnxstream;
using namespace test_passes;

TEST_CASE("analyze finds the dead node, the duplicate and the Identity, and writes nothing") {
    harness h(redundant_model());
    const auto before = test_support::read_file(h.path());
    const auto report = ops::analyze(h.path());
    REQUIRE(report);
    CHECK(report->nodes == 7);
    CHECK(report->initializers == 1);
    CHECK(report->initializer_bytes == 16);
    CHECK(report->scopes.size() == 1);

    const auto dead = report->totals(passes::finding_kind::dead_node);
    CHECK(dead.count == 1);
    CHECK(dead.nodes == 1);
    CHECK(dead.bytes == 0);
    const auto unused = report->totals(passes::finding_kind::unused_initializer);
    CHECK(unused.count == 1);  // U, read only by the dead node: dce removes it with it
    CHECK(unused.bytes == 16);
    const auto duplicate = report->totals(passes::finding_kind::duplicate_node);
    CHECK(duplicate.count == 1);
    CHECK(duplicate.nodes == 1);
    const auto identity = report->totals(passes::finding_kind::identity_node);
    CHECK(identity.count == 1);
    CHECK(identity.nodes == 1);
    CHECK(report->totals(passes::finding_kind::unused_input).count == 0);
    CHECK(report->removable_nodes == 3);
    CHECK(report->warnings.empty());
    CHECK(test_support::read_file(h.path()) == before);
}

TEST_CASE("analyze reports its passes as progress, and stops when cancelled") {
    harness h(redundant_model());
    ops::analyze_options options;
    std::vector<ops::progress_event> events;
    options.on_progress = [&events](const ops::progress_event& e) { events.push_back(e); };
    const auto report = ops::analyze(h.path(), options);
    REQUIRE(report);
    REQUIRE(!events.empty());
    for (std::size_t i = 0; i < events.size(); ++i) {
        CHECK(events[i].unit == "passes");
        CHECK(events[i].done == i);
        CHECK(events[i].done < events[i].total);
    }
    CHECK(events.back().total == events.size());  // the last round's passes, all counted

    std::atomic<bool> cancel{true};
    options.cancel = &cancel;
    const auto stopped = ops::analyze(h.path(), options);
    REQUIRE(!stopped);
    CHECK(stopped.error().code == error_code::interrupted);
}

TEST_CASE("the fixed-point driver stops between passes when cancelled, the graph as far as it got") {
    harness h(redundant_model());
    std::vector<const passes::pass_entry*> entries{passes::find_pass("dce"), passes::find_pass("identity")};
    std::vector<passes::finding> found;
    std::vector<error> warnings;
    std::atomic<bool> cancel{false};
    passes::fixed_point_options options;
    options.cancel = &cancel;
    options.on_pass = [&cancel](std::uint32_t, std::size_t p) { cancel.store(p == 0); };
    const auto sink_of = [&found](std::size_t) { return passes::finding_sink(found); };
    const auto ran = passes::run_to_fixed_point(h.model(), h.reader(), entries, sink_of, warnings, options);
    CHECK(ran.cancelled);
    CHECK(ran.changes[0] > 0);  // dce ran (the dead Mul), identity did not
    CHECK(ran.changes[1] == 0);
    CHECK(ran.rounds == 0);

    cancel.store(false);
    options.on_pass = nullptr;
    const auto rest = passes::run_to_fixed_point(h.model(), h.reader(), entries, sink_of, warnings, options);
    CHECK(!rest.cancelled);
    CHECK(rest.changes[0] == 0);
    CHECK(rest.changes[1] == 1);
    CHECK(rest.rounds == 1);
}

TEST_CASE("a model without redundancy has nothing removable") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"Y"}, "relu")};
    main.inputs = {"X", "unused_input"};
    main.outputs = {"Y"};
    harness h(model(test_passes::graph(main)));
    const auto report = ops::analyze(h.path());
    REQUIRE(report);
    CHECK(report->removable_nodes == 0);
    CHECK(report->totals(passes::finding_kind::unused_input).count == 1);  // reported, never removed
}

TEST_CASE("the analyze document streamed in small pieces is the document made whole; the text lists each finding") {
    harness h(redundant_model());
    const auto report = ops::analyze(h.path());
    REQUIRE(report);
    const auto whole = report::to_json(*report);
    std::string streamed;
    report::json_writer json([&streamed](std::string_view piece) { streamed += piece; }, 16);
    report::write_json(json, *report);
    json.flush();
    CHECK(streamed == whole);
    CHECK(whole.find(R"("unused_initializers":[{"names":["U"],"nodes":0,"bytes":16,"detail":"only dead nodes read it"}])") !=
          std::string::npos);
    const auto text = report::to_text(*report);
    CHECK(text.find("  dead nodes: 1\n    Mul dead [1 node]") != std::string::npos);
    CHECK(text.find("summary:\n") != std::string::npos);
}

TEST_CASE("analyze names unused initializers after the graph model is gone, an unnamed one too") {
    graph_spec main;
    main.nodes = {onnx_node("Identity", {"X"}, {"Y"}, "id")};
    main.initializers = {float_tensor("", {2}, {1.0F, 2.0F}), float_tensor("W2", {1}, {3.0F})};
    main.inputs = {"X", "unread_input"};
    main.outputs = {"Y"};
    harness h(model(test_passes::graph(main)));
    const auto report = ops::analyze(h.path());
    REQUIRE(report);
    std::vector<std::pair<std::string, std::vector<std::string>>> listed;
    report->findings.for_each([&](const ops::finding_list::view& v) {
        if (v.kind == passes::finding_kind::unused_initializer || v.kind == passes::finding_kind::unused_input)
            listed.emplace_back(std::string(passes::to_string(v.kind)), v.names());
    });
    REQUIRE(listed.size() == 3);
    CHECK(listed[0].second == std::vector<std::string>{"unread_input"});
    CHECK(listed[1].second == std::vector<std::string>{""});
    CHECK(listed[2].second == std::vector<std::string>{"W2"});
    CHECK(report->totals(passes::finding_kind::unused_initializer).bytes == 12);
}
