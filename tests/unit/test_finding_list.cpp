// finding_list: what goes in comes out, in order, whatever the texts (empty, shared,
// inline past the table of shared texts, bytes of every value), with totals per kind and
// groups by scope and category.
#include <onnxstream/ops/finding_list.hpp>

#include <doctest/doctest.h>

#include <array>
#include <string>
#include <vector>

using namespace onnxstream;
using passes::finding;
using passes::finding_kind;

namespace {

finding make(finding_kind kind, std::string scope, std::string op_type, std::vector<std::string> names, std::uint64_t nodes,
             std::uint64_t bytes, std::uint64_t count, std::string detail) {
    return {kind, std::move(scope), std::move(op_type), std::move(names), nodes, bytes, count, std::move(detail)};
}

void check_same(const finding& a, const finding& b) {
    CHECK(a.kind == b.kind);
    CHECK(a.scope == b.scope);
    CHECK(a.op_type == b.op_type);
    CHECK(a.names == b.names);
    CHECK(a.nodes == b.nodes);
    CHECK(a.bytes == b.bytes);
    CHECK(a.count == b.count);
    CHECK(a.detail == b.detail);
}

}  // namespace

TEST_CASE("finding_list: every field back as added, in order, with totals per kind") {
    std::string binary("a\0b\xff\x1b", 5);
    const std::vector<finding> in{
        make(finding_kind::dead_node, "graph", "Relu", {"r"}, 1, 0, 1, ""),
        make(finding_kind::unused_initializer, "graph", "", {binary, ""}, 0, 1ULL << 40, 1, "nothing reads it"),
        make(finding_kind::removed_value_info, "graph/If 'x'/then_branch", "", {}, 0, 0, 7, ""),
        make(finding_kind::dead_node, "graph", "Conv", {std::string(300, 'n')}, 1ULL << 62, 5, 1, std::string(200, 'd')),
    };
    ops::finding_list list;
    for (const auto& f : in) list.add(f);
    CHECK(list.size() == 4);
    std::vector<finding> out;
    std::vector<std::uint64_t> positions;
    list.for_each([&](const ops::finding_list::view& v) {
        out.push_back(v.to_finding());
        positions.push_back(v.position);
    });
    REQUIRE(out.size() == in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        check_same(out[i], in[i]);
        check_same(list.at(positions[i]).to_finding(), in[i]);
    }
    const auto dead = list.totals(finding_kind::dead_node);
    CHECK(dead.count == 2);
    CHECK(dead.nodes == (1ULL << 62) + 1);
    CHECK(list.totals(finding_kind::removed_value_info).count == 7);
    CHECK(list.totals(finding_kind::skipped).count == 0);
}

TEST_CASE("finding_list: past the table of shared texts, details are written inline and still read back") {
    ops::finding_list list;
    const std::size_t n = (1U << 16) + 100;
    for (std::size_t i = 0; i < n; ++i) {
        const std::array<std::string, 1> names{"v" + std::to_string(i)};
        list.add(finding_kind::duplicate_node, "graph", "Add", names, 1, 0, 1, "same as n" + std::to_string(i));
    }
    std::size_t i = 0;
    bool all_same = true;
    list.for_each([&](const ops::finding_list::view& v) {
        all_same = all_same && v.detail == "same as n" + std::to_string(i) &&
                   v.names() == std::vector<std::string>{"v" + std::to_string(i)} && v.scope == "graph" && v.op_type == "Add";
        ++i;
    });
    CHECK(i == n);
    CHECK(all_same);
}

TEST_CASE("finding_list: groups by scope and category, each in the order added; hidden kinds and unknown scopes are empty") {
    ops::finding_list list;
    list.add(make(finding_kind::dead_node, "graph", "", {"a"}, 1, 0, 1, ""));
    list.add(make(finding_kind::identity_node, "graph/Loop 'l'/body", "", {"b"}, 1, 0, 1, ""));
    list.add(make(finding_kind::dead_node, "graph", "", {"c"}, 1, 0, 1, ""));
    list.add(make(finding_kind::removed_value_info, "graph", "", {"d"}, 0, 0, 1, ""));
    list.add(make(finding_kind::identity_node, "graph", "", {"e"}, 1, 0, 1, ""));
    const auto groups = list.grouped(2, [](finding_kind kind) {
        return kind == finding_kind::dead_node ? 0U : kind == finding_kind::identity_node ? 1U : 2U;
    });
    const auto names_of = [&](std::string_view scope, std::size_t category) {
        std::vector<std::string> names;
        for (const auto position : groups.of(list.key_of_scope(scope), category)) names.push_back(list.at(position).names()[0]);
        return names;
    };
    CHECK(names_of("graph", 0) == std::vector<std::string>{"a", "c"});
    CHECK(names_of("graph", 1) == std::vector<std::string>{"e"});
    CHECK(names_of("graph/Loop 'l'/body", 1) == std::vector<std::string>{"b"});
    CHECK(names_of("graph/Loop 'l'/body", 0).empty());
    CHECK(names_of("nowhere", 0).empty());
    CHECK(list.key_of_scope("nowhere") == ops::finding_list::no_key);
}

TEST_CASE("finding_list: append copies another list's findings after its own, texts shared or not, and into itself") {
    ops::finding_list a;
    a.add(make(finding_kind::unused_initializer, "graph", "", {"w"}, 0, 16, 1, "nothing reads it"));
    ops::finding_list b;
    b.add(make(finding_kind::dead_node, "graph/If 'i'/else_branch", "Abs", {"x", "y"}, 2, 0, 1, "dead"));
    b.add(make(finding_kind::unused_initializer, "graph", "", {"v"}, 0, 8, 1, "nothing reads it"));
    a.append(b);
    a.append(a);
    std::vector<finding> out;
    a.for_each([&](const ops::finding_list::view& v) { out.push_back(v.to_finding()); });
    REQUIRE(out.size() == 6);
    check_same(out[1], make(finding_kind::dead_node, "graph/If 'i'/else_branch", "Abs", {"x", "y"}, 2, 0, 1, "dead"));
    check_same(out[2], make(finding_kind::unused_initializer, "graph", "", {"v"}, 0, 8, 1, "nothing reads it"));
    for (std::size_t i = 0; i < 3; ++i) check_same(out[i + 3], out[i]);
    CHECK(a.totals(finding_kind::unused_initializer).bytes == 2 * (16 + 8));
    CHECK(a.key_of_scope("graph") == a.at(0).scope_key);
}

TEST_CASE("finding_list: a counted finding is in the totals and the counts, not in the list; append and add_counted carry it") {
    ops::finding_list list;
    list.add(make(finding_kind::skipped, "graph", "BatchNormalization", {"bn"}, 0, 0, 1, "why"));
    list.count(make(finding_kind::unused_initializer, "graph", "", {"w1"}, 0, 100, 1, ""));
    list.count(make(finding_kind::unused_initializer, "graph", "", {"w2"}, 0, 28, 1, ""));
    list.count(make(finding_kind::removed_value_info, "graph", "", {}, 0, 0, 5, ""));
    CHECK(list.size() == 1);
    CHECK(list.totals(finding_kind::unused_initializer).count == 2);
    CHECK(list.totals(finding_kind::unused_initializer).bytes == 128);
    CHECK(list.counted(finding_kind::unused_initializer).findings == 2);
    CHECK(list.counted(finding_kind::removed_value_info).findings == 1);
    CHECK(list.counted(finding_kind::removed_value_info).totals.count == 5);
    CHECK(list.counted(finding_kind::skipped).findings == 0);
    CHECK(list.totals(finding_kind::skipped).count == 1);

    ops::finding_list appended;
    appended.count(make(finding_kind::unused_initializer, "graph", "", {"w3"}, 0, 2, 1, ""));
    appended.append(list);
    CHECK(appended.size() == 1);
    CHECK(appended.counted(finding_kind::unused_initializer).findings == 3);
    CHECK(appended.totals(finding_kind::unused_initializer).bytes == 130);

    ops::finding_list counts_only;
    counts_only.add_counted(list);
    CHECK(counts_only.empty());
    CHECK(counts_only.counted(finding_kind::unused_initializer).totals.bytes == 128);
    CHECK(counts_only.totals(finding_kind::removed_value_info).count == 5);
    CHECK(counts_only.totals(finding_kind::skipped).count == 0);
}
