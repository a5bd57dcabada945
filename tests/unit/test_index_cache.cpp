// The index the passes of a run share: reused while the model is as it was, built again
// after an edit, and a snapshot to whoever holds it. The passes find the same things and
// make the same edits with it as with an index of their own each.
#include <onnxstream/graph/index_cache.hpp>
#include <onnxstream/passes/pass_driver.hpp>
#include <onnxstream/passes/pass_registry.hpp>

#include "redundant_model.hpp"

#include <string>
#include <vector>

using namespace onnxstream;
using namespace onnxstream::graph;
using namespace test_passes;

namespace {

// Every value of an index, with its uses, as text: two indexes of one model compare equal.
std::vector<std::string> described(const graph_model& m, const graph_index& index) {
    std::vector<std::string> out;
    for (const auto v : index.value_ids()) {
        const auto val = index.at(v);
        std::string line = std::string(m.text(val.name)) + " kind " + std::to_string(static_cast<int>(val.kind)) + " node " +
                           std::to_string(val.node.value) + " uses";
        for (const auto& u : index.uses(v)) line += " " + std::to_string(u.node.value) + ":" + std::to_string(u.slot);
        out.push_back(std::move(line));
    }
    return out;
}

std::vector<const passes::pass_entry*> every_pass() {
    std::vector<const passes::pass_entry*> all;
    for (const auto& p : passes::pass_registry()) all.push_back(&p);
    return all;
}

// The driver's loop as it was before the cache: every pass builds an index of its own.
void run_each_with_its_own_index(graph_model& model, const tensor_reader& reader) {
    std::vector<passes::finding> found;
    std::vector<error> warnings;
    const auto all = every_pass();
    for (int round = 0; round < 100; ++round) {
        std::uint64_t changes = 0;
        for (const auto* p : all) {
            passes::pass_context context{model, reader, found, warnings};
            changes += p->run(context);
        }
        if (changes == 0) break;
    }
}

}  // namespace

TEST_CASE("index_cache: one index while the model is unchanged, a new one after an edit, the old one kept by its holder") {
    harness h(redundant_model());
    auto& m = h.model();
    index_cache cache(m);
    const auto first = cache.current();
    CHECK(cache.current() == first);
    CHECK(cache.builds() == 1);
    CHECK(described(m, *first) == described(m, graph_index(m)));

    // Add reads Sigmoid s2 in place of s1: the model changed, so the cache builds again.
    const auto add = h.node_named("add");
    const auto s1_before = first->input(add, 1);
    m.set_input(add, 1, *m.names.find("s2"));
    const auto second = cache.current();
    CHECK(second != first);
    CHECK(cache.builds() == 2);
    CHECK(described(m, *second) == described(m, graph_index(m)));
    // The holder of the first still sees the model as it was when it was built.
    CHECK(first->input(add, 1) == s1_before);
    CHECK(m.text(first->at(first->input(add, 1)).name) == "s1");
    CHECK(m.text(second->at(second->input(add, 1)).name) == "s2");

    // A name added moves the revision too (a pass's fresh name).
    (void)m.names.intern("fresh");
    CHECK(cache.current() != second);
    CHECK(cache.builds() == 3);

    // Released, it builds again although nothing changed.
    cache.release();
    (void)cache.current();
    CHECK(cache.builds() == 4);
}

TEST_CASE("index_cache: the shapes of the current index are kept with it, and made again when it is") {
    harness h(redundant_model());
    auto& m = h.model();
    index_cache cache(m);
    const auto index = cache.current();
    const auto shapes = cache.shapes(*index, h.reader());
    CHECK(cache.shapes(*index, h.reader()) == shapes);
    CHECK(cache.shape_builds() == 1);
    // Another index of the same model (not the cache's): shapes of its own, not kept.
    const graph_index other(m);
    CHECK(cache.shapes(other, h.reader()) != shapes);
    CHECK(cache.shapes(*index, h.reader()) == shapes);
    CHECK(cache.shape_builds() == 1);
    // Another reader: made again.
    auto file = onnx::model_file::open(h.path());
    REQUIRE(file);
    const tensor_reader reader(*file, nullptr);
    CHECK(cache.shapes(*index, reader) != shapes);
    CHECK(cache.shape_builds() == 2);
    CHECK(cache.shapes(*index, h.reader()) != shapes);
    CHECK(cache.shape_builds() == 3);
    const auto kept = cache.shapes(*index, h.reader());

    // An edit: the index held is a snapshot, and its shapes are not kept for it any more.
    m.set_input(h.node_named("add"), 1, *m.names.find("s2"));
    CHECK(cache.shapes(*index, h.reader()) != kept);
    CHECK(cache.shape_builds() == 3);
    const auto after = cache.current();
    const auto after_shapes = cache.shapes(*after, h.reader());
    CHECK(after_shapes != kept);
    CHECK(cache.shape_builds() == 4);
    // The holder's shapes are as they were.
    CHECK(kept->size() == index->size());

    cache.release();
    const auto again = cache.current();
    CHECK(cache.shapes(*again, h.reader()) != after_shapes);
    CHECK(cache.shape_builds() == 5);
}

TEST_CASE("index_cache: every pass of a run that changes nothing reads one index") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"a"}, "relu"), onnx_node("Sigmoid", {"a"}, {"Y"}, "sig")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(test_passes::graph(main)));
    index_cache cache(h.model());
    std::vector<passes::finding> found;
    std::vector<error> warnings;
    passes::fixed_point_options options;
    options.indexes = &cache;
    const auto all = every_pass();
    const auto ran = passes::run_to_fixed_point(
        h.model(), h.reader(), all, [&found](std::size_t) { return passes::finding_sink(found); }, warnings, options);
    CHECK(ran.rounds == 0);
    CHECK(all.size() > 5);
    CHECK(cache.builds() == 1);
    CHECK(cache.shape_builds() == 1);  // fusion, nop removal and shape folding read one table
}

TEST_CASE("index_cache: the passes sharing an index leave the model as passes with an index each do") {
    harness shared(redundant_model());
    harness own(redundant_model());
    std::vector<passes::finding> found;
    std::vector<error> warnings;
    passes::fixed_point_options options;
    const auto ran = passes::run_to_fixed_point(
        shared.model(), shared.reader(), every_pass(), [&found](std::size_t) { return passes::finding_sink(found); }, warnings,
        options);
    CHECK(ran.rounds > 0);
    run_each_with_its_own_index(own.model(), own.reader());
    CHECK(shared.op_counts() == own.op_counts());
    CHECK(shared.op_counts() == std::map<std::string, int>{{"Add", 2}, {"Relu", 1}, {"Sigmoid", 1}});
    CHECK(described(shared.model(), graph_index(shared.model())) == described(own.model(), graph_index(own.model())));
}
