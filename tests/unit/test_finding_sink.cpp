// finding_sink: a view of a vector of findings or of any list with `add` (and maybe
// `reserve`), handing each finding on unchanged and in order.
#include <onnxstream/passes/finding_sink.hpp>

#include <onnxstream/ops/finding_list.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace onnxstream;
using passes::finding;
using passes::finding_kind;
using passes::finding_sink;

namespace {

finding make(finding_kind kind, std::string name, std::uint64_t bytes) {
    finding f;
    f.kind = kind;
    f.scope = "graph";
    f.names = {std::move(name)};
    f.bytes = bytes;
    return f;
}

// A list with `add` only: `reserve` on its sink does nothing.
struct counting_list {
    std::vector<std::string> names;
    void add(const finding& f) { names.push_back(f.names.at(0)); }
};

// A list that remembers what it was told to reserve.
struct reserving_list {
    std::uint64_t findings = 0;
    std::uint64_t bytes_each = 0;
    void add(const finding&) {}
    void reserve(std::uint64_t count, std::uint64_t bytes) {
        findings += count;
        bytes_each = bytes;
    }
};

}  // namespace

TEST_CASE("a sink of a vector appends to it, in order") {
    std::vector<finding> findings;
    const finding_sink sink(findings);
    sink.reserve(1000, 64);
    CHECK(findings.capacity() >= 1000);
    CHECK(findings.empty());
    sink.add(make(finding_kind::unused_initializer, "a", 4));
    sink.add(make(finding_kind::dead_node, "b", 0));
    REQUIRE(findings.size() == 2);
    CHECK(findings[0].kind == finding_kind::unused_initializer);
    CHECK(findings[0].names == std::vector<std::string>{"a"});
    CHECK(findings[0].bytes == 4);
    CHECK(findings[1].kind == finding_kind::dead_node);
    CHECK(findings[1].names == std::vector<std::string>{"b"});
}

TEST_CASE("a sink of a finding_list stores every field compactly") {
    ops::finding_list list;
    const finding_sink sink(list);
    sink.reserve(2, 32);
    auto f = make(finding_kind::skipped, "bn", 0);
    f.op_type = "BatchNormalization";
    f.nodes = 3;
    f.count = 7;
    f.detail = "why";
    f.names.push_back("second");
    sink.add(f);
    sink.add(make(finding_kind::unused_initializer, "w", 16));
    REQUIRE(list.size() == 2);
    std::vector<finding> back;
    list.for_each([&back](const ops::finding_list::view& v) { back.push_back(v.to_finding()); });
    CHECK(back[0].kind == finding_kind::skipped);
    CHECK(back[0].scope == "graph");
    CHECK(back[0].op_type == "BatchNormalization");
    CHECK(back[0].names == std::vector<std::string>{"bn", "second"});
    CHECK(back[0].nodes == 3);
    CHECK(back[0].count == 7);
    CHECK(back[0].detail == "why");
    CHECK(back[1].kind == finding_kind::unused_initializer);
    CHECK(back[1].bytes == 16);
    CHECK(list.totals(finding_kind::unused_initializer).bytes == 16);
}

TEST_CASE("a sink passes reserve on to a list that has one, and skips it otherwise") {
    reserving_list reserving;
    finding_sink(reserving).reserve(5, 40);
    CHECK(reserving.findings == 5);
    CHECK(reserving.bytes_each == 40);

    counting_list counting;
    const finding_sink sink(counting);
    sink.reserve(5, 40);  // nothing to call: compiles and does nothing
    sink.add(make(finding_kind::dead_node, "n", 0));
    CHECK(counting.names == std::vector<std::string>{"n"});
}

TEST_CASE("a copy of a sink adds to the same list") {
    std::vector<finding> findings;
    const finding_sink sink(findings);
    const finding_sink copy = sink;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
    copy.add(make(finding_kind::dead_node, "x", 0));
    sink.add(make(finding_kind::dead_node, "y", 0));
    REQUIRE(findings.size() == 2);
    CHECK(findings[1].names == std::vector<std::string>{"y"});
}
