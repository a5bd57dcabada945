#include <onnxstream/onnx/tree_edits.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace onnxstream;
using body_drop = onnx::tree_edits::body_drop;

namespace {

std::vector<body_drop> listed(std::span<const body_drop> drops) { return {drops.begin(), drops.end()}; }

}  // namespace

TEST_CASE("drops in bodies come back sorted by message and position, each once, and per message") {
    onnx::tree_edits edits;
    CHECK(edits.empty());
    edits.drop_in_body(7, 3);
    edits.drop_in_body(7, 1);
    edits.drop_in_body(2, 5);
    edits.drop_in_body(7, 3);  // twice, not in a row
    edits.drop_in_body(9, 0);
    edits.drop_in_body(9, 0);  // twice in a row
    CHECK_FALSE(edits.empty());
    CHECK(listed(edits.body_drops()) == std::vector<body_drop>{{2, 5}, {7, 1}, {7, 3}, {9, 0}});
    CHECK(listed(edits.body_drops(7)) == std::vector<body_drop>{{7, 1}, {7, 3}});
    CHECK(listed(edits.body_drops(2)) == std::vector<body_drop>{{2, 5}});
    CHECK(edits.body_drops(3).empty());
    CHECK(edits.body_drops(10).empty());
    // A drop in a body is not a drop of a stored field of the same number.
    CHECK_FALSE(edits.dropped(3));
    CHECK(edits.dropped_fields().empty());
    // Added after a sort: sorted again.
    edits.drop_in_body(1, 4);
    CHECK(listed(edits.body_drops()).front() == body_drop{1, 4});
    CHECK(edits.body_drops().size() == 5);
}

TEST_CASE("drops in bodies added in order stay as added") {
    onnx::tree_edits edits;
    edits.reserve(0, 0, 0, 3);
    edits.drop_in_body(1, 0);
    edits.drop_in_body(1, 2);
    edits.drop_in_body(4, 1);
    CHECK(listed(edits.body_drops()) == std::vector<body_drop>{{1, 0}, {1, 2}, {4, 1}});
}
