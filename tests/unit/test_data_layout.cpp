// The one layout split, repack, convert and optimize give their data files (a private
// header of the ops layer): aligned large tensors, dense small ones, shards.
#include "ops/data_layout.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using ops::data_layout;

TEST_CASE("large tensors start on the alignment, small ones stay dense") {
    data_layout layout({4096, 1000, 0});
    CHECK(layout.shard_count() == 0);
    CHECK(layout.add(10).offset == 0);
    CHECK(layout.add(10).offset == 10);      // under the threshold: right after
    CHECK(layout.add(2000).offset == 4096);  // at least the threshold: aligned
    CHECK(layout.add(1).offset == 6096);
    CHECK(layout.shard_count() == 1);
}

TEST_CASE("alignment 0 or 1 is dense whatever the size") {
    for (const std::uint64_t alignment : {0U, 1U}) {
        data_layout layout({alignment, 0, 0});
        CHECK(layout.add(3).offset == 0);
        CHECK(layout.add(5000).offset == 3);
    }
}

TEST_CASE("a tensor that would pass the shard size starts the next shard, but never leaves one empty") {
    data_layout layout({0, 0, 100});
    auto p = layout.add(60);
    CHECK((p.shard == 0 && p.offset == 0));
    p = layout.add(60);
    CHECK((p.shard == 1 && p.offset == 0));
    p = layout.add(500);  // larger than a shard: alone in its own
    CHECK((p.shard == 2 && p.offset == 0));
    p = layout.add(1);
    CHECK((p.shard == 3 && p.offset == 0));
    CHECK(layout.shard_count() == 4);
}

TEST_CASE("data file names: the name itself, or numbered shards") {
    CHECK(ops::data_file_name("m.data", 0, 0, 1) == "m.data");
    CHECK(ops::data_file_name("m.data", 100, 0, 1) == "m-00001-of-00001.data");
    CHECK(ops::data_file_name("m.data", 0, 1, 3) == "m-00002-of-00003.data");
    CHECK(ops::choose_data_name("out/m.onnx", "").value() == "m.onnx.data");
    CHECK_FALSE(ops::choose_data_name("m.onnx", "../x.data"));
    CHECK_FALSE(ops::choose_data_name("m.onnx", ".."));
}
