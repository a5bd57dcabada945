// The graph model and its index: scopes, values, producers, consumers, and names an
// If/Loop body reads from outside.
#include <onnxstream/graph/graph_index.hpp>
#include <onnxstream/graph/name_table.hpp>

#include "test_passes_builder.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#if !defined(_WIN32)
#include <sys/mman.h>
#include <unistd.h>
#endif

using namespace onnxstream::graph;
using namespace onnxstream::passes;
using namespace test_passes;

namespace {

std::vector<std::byte> branchy_model() {
    graph_spec then_g;
    then_g.nodes = {onnx_node("Add", {"a", "X"}, {"t"}, "then_add")};
    then_g.outputs = {"t"};
    graph_spec else_g;
    else_g.nodes = {onnx_node("Neg", {"X"}, {"a"}, "else_shadow")};  // shadows the outer 'a'
    else_g.outputs = {"a"};
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"a"}, "relu"),
                  onnx_node("If", {"c"}, {"Y"}, "if",
                            {attr_graph("then_branch", graph(then_g, "then")), attr_graph("else_branch", graph(else_g, "else"))}),
                  onnx_node("Mul", {"Y", "missing"}, {"Z"}, "mul")};
    main.initializers = {float_tensor("W", {1}, {2.0F}), bool_tensor("c", true)};
    main.inputs = {"X", "W"};  // W: an initializer that is also an input
    main.outputs = {"Z"};
    return model(graph(main));
}

}  // namespace

TEST_CASE("name_table: reserved room keeps every name and id, before and after names already held") {
    name_table names;
    const auto early = names.intern("early");
    names.reserve(1000);  // the slots are laid out again for the names already held
    CHECK(names.find("early") == early);
    CHECK(names.find("") == empty_name);
    std::vector<name_id> ids;
    for (int i = 0; i < 1000; ++i) ids.push_back(names.intern("n" + std::to_string(i)));
    for (int i = 0; i < 1000; ++i) CHECK(names.find("n" + std::to_string(i)) == ids[static_cast<std::size_t>(i)]);
    CHECK(names.size() == 1002);
    names.reserve(10);  // smaller than held: nothing changes
    CHECK(names.find("n999") == ids.back());
    CHECK(names.intern("early") == early);
}

TEST_CASE("name_table: a table three quarters full finds every name it holds, at every size it grows through") {
    // Sizes that are not powers of two: the slots are reserved for an odd count, then the
    // table grows past it several times; probes wrap from the last slot to the first.
    for (const std::size_t reserved : {std::size_t{0}, std::size_t{1}, std::size_t{47}, std::size_t{999}}) {
        CAPTURE(reserved);
        name_table names;
        names.reserve(reserved);
        std::vector<name_id> ids;
        constexpr int count = 20000;
        for (int i = 0; i < count; ++i) {
            ids.push_back(names.intern("v" + std::to_string(i)));
            if (i % 997 == 0) {  // everything so far, at this size (some of them just before a regrowth)
                for (int j = 0; j <= i; j += 61) CHECK(names.find("v" + std::to_string(j)) == ids[static_cast<std::size_t>(j)]);
            }
        }
        CHECK(names.size() == count + 1U);
        std::size_t found = 0;
        for (int i = 0; i < count; ++i)
            found += names.find("v" + std::to_string(i)) == ids[static_cast<std::size_t>(i)] ? 1U : 0U;
        CHECK(found == std::size_t{count});
        for (int i = 0; i < 1000; ++i) CHECK_FALSE(names.find("w" + std::to_string(i)));
        // Ids are dense and in order of first interning.
        for (int i = 0; i < count; ++i)
            CHECK(static_cast<std::uint32_t>(ids[static_cast<std::size_t>(i)]) == static_cast<std::uint32_t>(i) + 1U);
        CHECK(names.intern("v0") == ids.front());
    }
}

TEST_CASE("name_table: interning, the empty name and fresh names") {
    name_table names;
    CHECK(names.intern("") == empty_name);
    const auto a = names.intern("a");
    CHECK(names.intern("a") == a);
    CHECK(names.text(a) == "a");
    CHECK(!names.find("b"));
    const auto fresh = names.fresh("a");
    CHECK(names.text(fresh) == "a_1");
    CHECK(names.text(names.fresh("a")) == "a_2");
    CHECK(names.text(names.fresh("b")) == "b");
}

TEST_CASE("name_table: lasting texts are kept as views of themselves, packed or not; others are copied") {
    const std::string region((std::size_t{17} << 20) + 64, 'x');  // longer than a packed length (16 KiB)
    name_table names;
    const std::string_view first(region.data() + 10, 8);
    const std::string_view far(region.data() + (std::size_t{17} << 20), 9);  // same bytes, other length
    const std::string_view whole(region.data(), region.size());
    const auto a = names.intern_lasting(first);
    const auto b = names.intern_lasting(far);
    const auto c = names.intern_lasting(whole);
    CHECK(names.text(a).data() == first.data());
    CHECK(names.text(b).data() == far.data());
    CHECK(names.text(c).data() == whole.data());  // too long to pack, still a view
    CHECK(names.text(c).size() == whole.size());
    CHECK(names.intern_lasting(std::string_view(region.data() + 100, 8)) == a);  // equal text, same id
    CHECK(names.find(std::string(9, 'x')) == b);
    std::string buffer = "copied";
    const auto d = names.intern(buffer);
    buffer = "changed";
    CHECK(names.text(d) == "copied");
}

#if !defined(_WIN32)
TEST_CASE("name_table: a probe does not read a text whose hash agrees with the one sought only in its low 32 bits") {
    // Two names whose hashes agree in the 32 bits a slot keeps and differ in the bits
    // above (a birthday search: a pair is expected among a few hundred thousand names).
    std::vector<std::pair<std::uint64_t, std::uint32_t>> hashes;
    constexpr std::uint32_t candidates = 400000;
    hashes.reserve(candidates);
    const auto candidate = [](std::uint32_t i) {  // all of one length: texts of two lengths are told apart unread
        const auto digits = std::to_string(i);
        return "/model/layers." + std::string(6 - digits.size(), '0') + digits + "/output_0";
    };
    for (std::uint32_t i = 0; i < candidates; ++i) hashes.emplace_back(std::hash<std::string_view>{}(candidate(i)), i);
    std::sort(hashes.begin(), hashes.end(), [](const auto& x, const auto& y) {
        return static_cast<std::uint32_t>(x.first) < static_cast<std::uint32_t>(y.first);
    });
    std::string first;
    std::string second;
    for (std::size_t i = 1; i < hashes.size() && first.empty(); ++i) {
        const auto x = hashes[i - 1].first;
        const auto y = hashes[i].first;
        if (static_cast<std::uint32_t>(x) == static_cast<std::uint32_t>(y) && ((x ^ y) >> 32U & 0x3FFFU) != 0) {
            first = candidate(hashes[i - 1].second);
            second = candidate(hashes[i].second);
        }
    }
    REQUIRE(!first.empty());

    // The first is a lasting text on a page of its own, which is then made unreadable (as a
    // released page of a model is costly to read): a probe for the second must not read it.
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void* mapped = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mapped != MAP_FAILED);
    auto* bytes = static_cast<char*>(mapped);
    std::copy(first.begin(), first.end(), bytes);
    name_table names;
    const auto a = names.intern_lasting(std::string_view(bytes, first.size()));
    REQUIRE(::mprotect(mapped, page, PROT_NONE) == 0);
    CHECK(!names.find(second));  // a read of the first's text would fault here
    const auto b = names.intern(second);
    CHECK(b != a);
    CHECK(names.find(second) == b);
    REQUIRE(::mprotect(mapped, page, PROT_READ) == 0);
    CHECK(names.find(first) == a);
    CHECK(names.text(a) == first);
    ::munmap(mapped, page);
}
#endif

TEST_CASE("graph_model: a node's name comes from its NodeProto, or is kept for a node a pass adds") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"a"}, "relu"), onnx_node("Neg", {"a"}, {"b"}),
                  onnx_node("Transpose", {"b"}, {"Y"}, "with_attribute", {attr_int("perm_dummy", 1)})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    const auto bytes = model(graph(main));
    test_support::temp_folder folder;
    const auto path = folder.write("model.onnx", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    for (const bool on_demand : {false, true}) {
        CAPTURE(on_demand);
        // Nodes on demand: the first two are dropped from the tree (no attributes), the last kept.
        const auto file = on_demand ? onnxstream::onnx::model_file::open(path, onnxstream::onnx::nodes_on_demand())
                                    : onnxstream::onnx::model_file::open(path);
        REQUIRE(file);
        auto built = graph_model::build(*file);
        REQUIRE(built);
        auto& m = *built;
        REQUIRE(m.nodes.size() == 3);
        CHECK(m.node_name(node_id{0}) == "relu");
        CHECK(m.node_name(node_id{1}).empty());
        CHECK(m.node_label(node_id{1}) == "Neg->b");
        CHECK(m.node_name(node_id{2}) == "with_attribute");
        const auto added = m.add_node(main_scope, node_id{2}, "Identity", {m.names.intern("Y")}, {m.names.intern("Z")}, "added");
        CHECK(m.node_name(added) == "added");
        const auto unnamed = m.add_node(main_scope, added, "Identity", {m.names.intern("Z")}, {m.names.intern("W")}, "");
        CHECK(m.node_name(unnamed).empty());
    }
}

TEST_CASE("graph_model: names read whatever order a node's or a tensor's fields come in") {
    // The build looks at the names of nodes and initializers a few fields ahead (to load
    // the name table's slots), stopping at the first field past the names as writers order
    // them: fields in another order must name the same values all the same.
    proto_builder g;
    std::string previous = "X";
    for (int i = 0; i < 40; ++i) {
        const auto out = "v" + std::to_string(i);
        proto_builder n;
        if (i % 3 == 0)
            n.string_field(4, "Relu").string_field(2, out).string_field(1, previous);  // op type first, output before input
        else if (i % 3 == 1)
            n.string_field(3, "n" + std::to_string(i)).string_field(1, previous).string_field(2, out).string_field(4, "Relu");
        else n.string_field(1, previous).string_field(2, out).string_field(4, "Relu");
        g.message_field(1, n);
        proto_builder t;  // a tensor whose name comes after its data, and one before
        if (i % 2 == 0) t.varint_field(2, 1).bytes_field(9, std::vector<std::byte>(4)).string_field(8, "w" + std::to_string(i));
        else t.string_field(8, "w" + std::to_string(i)).varint_field(2, 1).bytes_field(9, std::vector<std::byte>(4));
        g.message_field(5, t);
        previous = out;
    }
    g.string_field(2, "orders");
    g.message_field(11, vinfo("X"));
    g.message_field(12, vinfo(previous));
    harness h(model(g));
    const auto& m = h.model();
    REQUIRE(m.nodes.size() == 40);
    REQUIRE(m.tensors.size() == 40);
    for (std::uint32_t i = 0; i < 40; ++i) {
        CAPTURE(i);
        const auto& nd = m.nodes[node_id{i}];
        CHECK(nd.op_type() == "Relu");
        REQUIRE(nd.inputs.size() == 1);
        REQUIRE(nd.outputs.size() == 1);
        CHECK(m.text(nd.inputs[0]) == (i == 0 ? std::string("X") : "v" + std::to_string(i - 1)));
        CHECK(m.text(nd.outputs[0]) == "v" + std::to_string(i));
        CHECK(m.text(m.tensors[tensor_id{i}].name) == "w" + std::to_string(i));
    }
    CHECK(m.names.size() == 1 + 40 + 40 + 1);  // the empty name, X, the outputs, the weights
}

TEST_CASE("graph_model: site_of finds each tensor's site by its message, none for any other message") {
    // Initializers in two scopes and a tensor attribute: sites of every role, in file order.
    graph_spec inner;
    inner.nodes = {onnx_node("Constant", {}, {"k"}, "konst", {attr_tensor("value", float_tensor("", {1}, {3.0F}))})};
    inner.initializers = {float_tensor("inner_w", {1}, {1.0F})};
    inner.outputs = {"k"};
    graph_spec main;
    main.nodes = {onnx_node("If", {"c"}, {"Y"}, "if",
                            {attr_graph("then_branch", graph(inner, "then")), attr_graph("else_branch", graph(inner, "else"))})};
    main.initializers = {float_tensor("W", {1}, {2.0F}), bool_tensor("c", true)};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    const auto& m = h.model();
    const auto& sites = m.file().sites;
    REQUIRE(sites.size() == 6);
    std::size_t found = 0;
    for (std::uint32_t message = 0; message < m.tree().messages().size(); ++message) {
        const auto site = m.site_of(message);
        if (m.tree().at(message).kind != onnxstream::onnx::message_kind::tensor) {
            CHECK(site == none);
            continue;
        }
        REQUIRE(site != none);
        CHECK(sites[site].message == message);
        ++found;
    }
    CHECK(found == sites.size());
    CHECK(m.site_of(static_cast<std::uint32_t>(m.tree().messages().size())) == none);
    // Every initializer read has its site (a float W and inner_w twice, a bool c).
    REQUIRE(m.tensors.size() == 4);
    for (const auto t : m.tensors.ids()) {
        REQUIRE(m.tensors[t].site != none);
        CHECK(m.tensor_type(t) == (m.text(m.tensors[t].name) == "c" ? 9 : 1));
    }
}

TEST_CASE("graph_model: a node's overload is read out of line, and only a node with one has its extras made") {
    graph_spec main;
    auto with_overload = onnx_node("Relu", {"X"}, {"a"}, "calls_v2");
    with_overload.string_field(8, "v2");  // NodeProto.overload
    auto empty_overload = onnx_node("Neg", {"a"}, {"b"}, "empty_field");
    empty_overload.string_field(8, "");
    main.nodes = {with_overload, empty_overload, onnx_node("Neg", {"b"}, {"Y"}, "none")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    const auto& m = h.model();
    const auto& v2 = m.nodes[h.node_named("calls_v2")];
    CHECK(v2.overload() == "v2");
    CHECK(v2.op_type() == "Relu");
    for (const auto* name : {"empty_field", "none"}) {
        CAPTURE(name);
        const auto& nd = m.nodes[h.node_named(name)];
        CHECK(nd.overload().empty());
        CHECK(nd.lists.get() == nullptr);  // 72 bytes, nothing out of line
    }
}

TEST_CASE("graph_model: scopes in pre-order, subgraphs tied to their node") {
    harness h(branchy_model());
    auto& m = h.model();
    REQUIRE(m.scopes.size() == 3);
    CHECK(m.scopes[main_scope].kind == scope_kind::main);
    CHECK(m.scopes[scope_id{1}].attribute == "then_branch");
    CHECK(m.scopes[scope_id{2}].attribute == "else_branch");
    const auto if_node = h.node_named("if");
    CHECK(m.scopes[scope_id{1}].owner == if_node);
    CHECK(m.scopes[scope_id{1}].parent == scope_id{0});
    CHECK(std::ranges::equal(m.nodes[if_node].subgraphs(), std::vector<scope_id>{scope_id{1}, scope_id{2}}));
    CHECK(m.scope_path(scope_id{1}) == "graph/If 'if'/then_branch");
    CHECK(m.opset("") == 13);
    CHECK(m.opset("ai.onnx") == 13);
    CHECK(m.live_node_count() == 5);
}

namespace {

// graph_model::build of `bytes`: the model, or the error's message.
std::string build_error(const std::vector<std::byte>& bytes) {
    test_support::temp_folder folder;
    const auto path = folder.write("model.onnx", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    auto file = onnxstream::onnx::model_file::open(path);
    REQUIRE(file);
    const auto built = graph_model::build(file.value());
    return built ? std::string() : built.error().describe();
}

std::vector<std::byte> main_graph_with(std::vector<proto_builder> nodes, std::vector<proto_builder> initializers = {}) {
    graph_spec main;
    main.nodes = std::move(nodes);
    main.initializers = std::move(initializers);
    main.inputs = {"X"};
    main.outputs = {"Y"};
    return model(graph(main));
}

}  // namespace

TEST_CASE("graph_model: a node writing a name its own graph already defines is refused, saying what defined it") {
    const auto two_nodes = build_error(
        main_graph_with({onnx_node("Relu", {"X"}, {"r"}, "relu1"), onnx_node("Neg", {"X"}, {"r"}, "neg1"),
                         onnx_node("Abs", {"r"}, {"Y"}, "abs")}));
    CHECK(two_nodes ==
          "'r' is defined twice in the main graph: as the output of node 'relu1' (Relu) and as the output of node 'neg1' (Neg)");
    CHECK(build_error(main_graph_with({onnx_node("Relu", {"X"}, {"X"}, "relu1"), onnx_node("Neg", {"X"}, {"Y"}, "neg")})) ==
          "'X' is defined twice in the main graph: as a graph input and as the output of node 'relu1' (Relu)");
    CHECK(build_error(main_graph_with({onnx_node("Relu", {"X"}, {"W"}, "relu1"), onnx_node("Add", {"X", "W"}, {"Y"}, "add")},
                                      {float_tensor("W", {1}, {2.0F})})) ==
          "'W' is defined twice in the main graph: as an initializer and as the output of node 'relu1' (Relu)");
    CHECK(build_error(
              main_graph_with({onnx_node("Split", {"X"}, {"s", "", "s"}, "split"), onnx_node("Neg", {"s"}, {"Y"}, "neg")})) ==
          "'s' is defined twice in the main graph: as two outputs of node 'split' (Split)");
    // A sparse initializer (GraphProto field 15, named by its values tensor).
    graph_spec sparse_main;
    sparse_main.nodes = {onnx_node("Relu", {"X"}, {"S"}, "relu1"), onnx_node("Add", {"X", "S"}, {"Y"}, "add")};
    sparse_main.inputs = {"X"};
    sparse_main.outputs = {"Y"};
    auto sparse_graph = graph(sparse_main);
    proto_builder sparse;
    sparse.message_field(1, float_tensor("S", {1}, {2.0F}));
    sparse_graph.message_field(15, sparse);
    CHECK(build_error(model(sparse_graph)) ==
          "'S' is defined twice in the main graph: as a sparse initializer and as the output of node 'relu1' (Relu)");
    // Unnamed nodes by their place in their graph (graph.node[k]): their labels would read alike.
    CHECK(build_error(main_graph_with(
              {onnx_node("Identity", {"X"}, {"i"}), onnx_node("Identity", {"X"}, {"i"}), onnx_node("Neg", {"i"}, {"Y"})})) ==
          "'i' is defined twice in the main graph: as the output of unnamed node #0 (Identity) and as the output of unnamed "
          "node #1 (Identity)");
    // In a subgraph: its own input written by one of its nodes.
    graph_spec body;
    body.nodes = {onnx_node("Neg", {"b"}, {"b"}, "body_neg")};
    body.inputs = {"b"};
    body.outputs = {"b"};
    CHECK(build_error(main_graph_with(
              {onnx_node("Relu", {"X"}, {"c"}, "relu1"),
               onnx_node("If", {"c"}, {"Y"}, "if",
                         {attr_graph("then_branch", graph(body, "then")), attr_graph("else_branch", graph(body, "else"))})})) ==
          "'b' is defined twice in graph/If 'if'/then_branch: as a graph input and as the output of node 'body_neg' (Neg)");
}

TEST_CASE("graph_model: an initializer given twice, and a subgraph defining an outer name again, are read") {
    // ONNX Runtime runs both (the last initializer of a name wins, as in the index); a
    // subgraph's own definition hides the outer one (branchy_model's else branch).
    CHECK(build_error(main_graph_with({onnx_node("Add", {"X", "W"}, {"Y"}, "add")},
                                      {float_tensor("W", {1}, {1.0F}), float_tensor("W", {1}, {2.0F})}))
              .empty());
    CHECK(build_error(branchy_model()).empty());
    // Sibling subgraphs each define 't', and the main graph defines it after them.
    graph_spec branch;
    branch.nodes = {onnx_node("Neg", {"X"}, {"t"}, "neg")};
    branch.outputs = {"t"};
    CHECK(build_error(main_graph_with({onnx_node("Relu", {"X"}, {"c"}, "relu1"),
                                       onnx_node("If", {"c"}, {"i"}, "if",
                                                 {attr_graph("then_branch", graph(branch, "then")),
                                                  attr_graph("else_branch", graph(branch, "else"))}),
                                       onnx_node("Abs", {"i"}, {"t"}, "abs"), onnx_node("Neg", {"t"}, {"Y"}, "neg")}))
              .empty());
}

TEST_CASE("graph_index: outer-scope references, shadowing, undefined and overridable values") {
    harness h(branchy_model());
    auto& m = h.model();
    const graph_index index(m);
    const auto relu = h.node_named("relu");
    const auto then_add = h.node_named("then_add");
    const auto a = index.output(relu, 0);
    REQUIRE(a != none);
    // The then-branch reads the outer 'a': its consumer is in the subgraph.
    CHECK(index.input(then_add, 0) == a);
    REQUIRE(index.uses(a).size() == 1);
    CHECK(index.uses(a)[0].scope == scope_id{1});
    // The else-branch defines its own 'a', which hides the outer one there.
    const auto inner_a = index.graph_output(scope_id{2}, 0);
    CHECK(inner_a != a);
    CHECK(index.at(inner_a).scope == scope_id{2});
    CHECK(index.at(inner_a).node == h.node_named("else_shadow"));
    CHECK(index.at(a).node == relu);
    CHECK(index.at(a).tensor == none);
    CHECK(index.producer(a) == relu);
    CHECK(index.resolve(scope_id{2}, index.at(a).name) == inner_a);
    CHECK(index.resolve(scope_id{1}, index.at(a).name) == a);
    // W is an initializer and an input: its value can be overridden at run time.
    const auto w = index.resolve(main_scope, *m.names.find("W"));
    CHECK(index.at(w).kind == value_kind::initializer);
    CHECK(index.at(w).overridable);
    CHECK(index.at(w).slot == 1);  // its place among the inputs
    CHECK(index.at(w).node == none);
    REQUIRE(index.at(w).tensor != none);
    CHECK(m.text(m.tensors[index.at(w).tensor].name) == "W");
    CHECK(index.producer(w) == none);
    CHECK(!index.at(index.resolve(main_scope, *m.names.find("c"))).overridable);
    // 'missing' is read but defined nowhere.
    const auto missing = index.input(h.node_named("mul"), 1);
    CHECK(index.at(missing).kind == value_kind::undefined);
    // Z is the model's output.
    CHECK(index.is_graph_output(index.output(h.node_named("mul"), 0)));
    CHECK(index.within(scope_id{1}, scope_id{0}));
    CHECK(!index.within(scope_id{0}, scope_id{1}));
}

TEST_CASE("graph_index: visibility of a replacement at every use") {
    harness h(branchy_model());
    const graph_index index(h.model());
    const auto a = index.output(h.node_named("relu"), 0);
    const auto x = index.resolve(main_scope, *h.model().names.find("X"));
    CHECK(index.visible_at_uses(a, x));
    // The else-branch's own 'a' would hide the outer one: not a valid replacement for X there.
    const auto x_uses_in_else = index.visible_at_uses(x, a);
    CHECK(!x_uses_in_else);
}

TEST_CASE("graph_model: removing a node removes the scopes it holds") {
    harness h(branchy_model());
    auto& m = h.model();
    const auto then_add = h.node_named("then_add");
    CHECK(m.node_live(then_add));
    m.remove_node(h.node_named("if"));
    CHECK(m.scopes[scope_id{1}].removed);
    CHECK(m.scopes[scope_id{2}].removed);
    CHECK(!m.node_live(then_add));
    CHECK(m.scopes[main_scope].changed);
    m.compact();
    CHECK(m.scopes[main_scope].nodes.size() == 2);
}

TEST_CASE("graph_model: compact drops what each removal since the last compact removed, and only that") {
    harness h(branchy_model());
    auto& m = h.model();
    auto& main_graph = m.scopes[main_scope];
    const auto nodes = main_graph.nodes;
    const auto initializers = main_graph.initializers;
    m.compact();  // nothing removed: the lists as they were
    CHECK(main_graph.nodes == nodes);
    CHECK(main_graph.initializers == initializers);
    m.remove_node(h.node_named("mul"));
    m.compact();
    CHECK(main_graph.nodes == std::vector<node_id>{nodes[0], nodes[1]});
    m.remove_tensor(initializers[0]);  // a removal after a compact is dropped by the next
    m.compact();
    CHECK(main_graph.initializers == std::vector<tensor_id>{initializers[1]});
    CHECK(main_graph.nodes.size() == 2);
    const auto relu = h.node_named("relu");
    m.remove_node(relu);
    m.remove_node(relu);  // a second removal of the same node changes nothing more
    m.compact();
    CHECK(main_graph.nodes == std::vector<node_id>{nodes[1]});
    m.compact();
    CHECK(main_graph.nodes == std::vector<node_id>{nodes[1]});
}

TEST_CASE("graph_model: every edit marks what it dirties") {
    harness h(branchy_model());
    auto& m = h.model();
    const auto fresh = m.names.fresh("renamed");
    CHECK(!m.scopes[main_scope].changed);
    // Renaming an initializer: the tensor is re-encoded and its graph's list changes.
    const auto w = m.scopes[main_scope].initializers[0];
    m.rename_tensor(w, fresh);
    CHECK(m.tensors[w].renamed);
    CHECK(m.tensors[w].name == fresh);
    CHECK(m.scopes[main_scope].changed);
    // A subgraph output rewired: that subgraph changes, not its parent.
    CHECK(!m.scopes[scope_id{1}].changed);
    m.set_graph_output(scope_id{1}, 0, fresh);
    CHECK(m.scopes[scope_id{1}].outputs[0] == fresh);
    CHECK(m.scopes[scope_id{1}].changed);
    CHECK(!m.scopes[scope_id{2}].changed);
    // Setting a name a slot already has changes nothing.
    m.set_graph_output(scope_id{2}, 0, m.scopes[scope_id{2}].outputs[0]);
    CHECK(!m.scopes[scope_id{2}].changed);
    // A dropped attribute marks the node changed.
    const auto relu = h.node_named("relu");
    CHECK(!m.nodes[relu].changed);
    m.drop_attribute(relu, "alpha");
    CHECK(m.nodes[relu].changed);
}

TEST_CASE("graph_model: every edit and every name added moves the revision; reads and compact do not") {
    // analyze reuses a model whose revision did not move instead of building it again: an
    // edit that did not move it would leak into the next pass's findings.
    harness h(branchy_model());
    auto& m = h.model();
    auto last = m.revision();
    const auto moved = [&] {
        const auto now = m.revision();
        const bool forward = now > last;
        last = now;
        return forward;
    };
    const graph_index index(m);  // reads change nothing
    (void)m.attributes(h.node_named("relu"));
    (void)m.node_label(h.node_named("if"));
    (void)m.names.find("X");
    m.compact();
    CHECK(!moved());
    const auto fresh = m.names.fresh("renamed");
    CHECK(moved());
    const auto relu = h.node_named("relu");
    const auto w = m.scopes[main_scope].initializers[0];
    m.set_input(relu, 0, fresh);
    CHECK(moved());
    m.set_output(relu, 0, fresh);
    CHECK(moved());
    m.set_graph_output(main_scope, 0, fresh);
    CHECK(moved());
    m.drop_attribute(relu, "alpha");
    CHECK(moved());
    m.set_attribute(relu, {.name = "axis", .i = 1, .ints = {}});
    CHECK(moved());
    m.rename_tensor(w, fresh);
    CHECK(moved());
    m.rename_value_infos(main_scope, fresh, fresh);
    CHECK(moved());
    (void)m.add_node(main_scope, relu, "Neg", {fresh}, {fresh}, "");
    CHECK(moved());
    (void)m.add_tensor(main_scope, fresh, 1, {1}, {});
    CHECK(moved());
    (void)m.move_contents(scope_id{1}, main_scope, h.node_named("if"));
    CHECK(moved());
    m.remove_tensor(w);
    CHECK(moved());
    m.remove_node(h.node_named("mul"));
    CHECK(moved());
    m.compact();
    CHECK(!moved());
}

TEST_CASE("graph_model: moving a branch's contents up places its nodes before the node given") {
    harness h(branchy_model());
    auto& m = h.model();
    const auto if_node = h.node_named("if");
    const auto moved = m.move_contents(scope_id{1}, main_scope, if_node);
    REQUIRE(moved.size() == 1);
    CHECK(moved[0] == h.node_named("then_add"));
    CHECK(m.nodes[moved[0]].scope == main_scope);
    CHECK(m.scopes[scope_id{1}].nodes.empty());
    CHECK(m.scopes[main_scope].changed);
    const auto& order = m.scopes[main_scope].nodes;
    const auto at = std::find(order.begin(), order.end(), moved[0]);
    REQUIRE(at != order.end());
    REQUIRE(at + 1 != order.end());
    CHECK(*(at + 1) == if_node);
}

TEST_CASE("graph_model: a walk visits the nodes listed when it began, whatever the visits change") {
    harness h(branchy_model());
    auto& m = h.model();
    const auto relu = h.node_named("relu");
    const auto if_node = h.node_named("if");
    const auto mul = h.node_named("mul");
    const auto then_add = h.node_named("then_add");
    const std::vector<node_id> listed{relu, if_node, mul};
    REQUIRE(m.scopes[main_scope].nodes == listed);
    const auto walk = [&m](scope_id s, const std::function<void(node_id)>& visit) {
        std::vector<node_id> seen;
        m.for_each_listed_node(s, [&](node_id n) {
            seen.push_back(n);
            visit(n);
        });
        return seen;
    };

    SUBCASE("nothing changes: the list itself, nothing copied") {
        CHECK(walk(main_scope, [](node_id) {}) == listed);
    }
    SUBCASE("a node added after the one visited, and one at the end, are not visited") {
        std::vector<node_id> added;
        const auto seen = walk(main_scope, [&](node_id n) {
            if (n == relu) added.push_back(m.add_node(main_scope, relu, "Identity", name_list{}, name_list{}, ""));
            if (n == mul) added.push_back(m.add_node(main_scope, mul, "Identity", name_list{}, name_list{}, ""));
        });
        CHECK(seen == listed);
        CHECK(m.scopes[main_scope].nodes == std::vector<node_id>{relu, added[0], if_node, mul, added[1]});
    }
    SUBCASE("a branch's contents moved in before the node visited") {
        const auto seen = walk(main_scope, [&](node_id n) {
            if (n == if_node) m.move_contents(scope_id{1}, main_scope, if_node);
        });
        CHECK(seen == listed);
        CHECK(m.scopes[main_scope].nodes == std::vector<node_id>{relu, then_add, if_node, mul});
    }
    SUBCASE("the walked branch's contents moved out, and a compact: every node listed is still visited, removed ones too") {
        m.remove_node(relu);
        const auto seen_inside = walk(scope_id{1}, [&](node_id n) {
            m.move_contents(scope_id{1}, main_scope, if_node);
            CHECK(n == then_add);
        });
        CHECK(seen_inside == std::vector<node_id>{then_add});
        const auto seen = walk(main_scope, [&](node_id n) {
            if (n == if_node) m.compact();
        });
        CHECK(seen == std::vector<node_id>{relu, then_add, if_node, mul});
        CHECK(m.scopes[main_scope].nodes == std::vector<node_id>{then_add, if_node, mul});
    }
    SUBCASE("walks nest: each keeps its own list, the inner one ends first") {
        std::vector<node_id> inner_seen;
        node_id added = none;
        const auto seen = walk(main_scope, [&](node_id n) {
            if (n != relu) return;
            inner_seen = walk(main_scope, [&](node_id inner) {
                if (inner == if_node) added = m.add_node(main_scope, if_node, "Identity", name_list{}, name_list{}, "");
            });
        });
        CHECK(seen == listed);
        CHECK(inner_seen == listed);
        CHECK(m.scopes[main_scope].nodes == std::vector<node_id>{relu, if_node, added, mul});
        CHECK(walk(main_scope, [](node_id) {}) == m.scopes[main_scope].nodes);  // a walk after them: the list now
    }
    SUBCASE("for_each_live_node leaves out removed nodes and those a visit adds") {
        std::vector<node_id> seen;
        m.for_each_live_node([&](node_id n) {
            seen.push_back(n);
            if (n == relu) {
                m.remove_node(mul);
                m.add_node(main_scope, relu, "Identity", name_list{}, name_list{}, "");
            }
        });
        CHECK(seen == std::vector<node_id>{relu, if_node, then_add, h.node_named("else_shadow")});
    }
}

TEST_CASE("graph_model: names used by training graphs are pinned") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"Y"}, "relu")};
    main.initializers = {float_tensor("W", {1}, {1.0F})};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    graph_spec algorithm;
    algorithm.nodes = {onnx_node("Add", {"W", "W"}, {"W_new"})};
    algorithm.outputs = {"W_new"};
    proto_builder binding;
    binding.string_field(1, "W").string_field(2, "W_new");
    proto_builder training;
    training.message_field(2, graph(algorithm, "algorithm")).message_field(4, binding);
    proto_builder opset_import;
    opset_import.string_field(1, "").varint_field(2, 13);
    proto_builder m;
    m.varint_field(1, 8).message_field(7, graph(main)).message_field(8, opset_import).message_field(20, training);
    harness h(m.take());
    const auto w = *h.model().names.find("W");
    CHECK(h.model().pinned.contains(w));
    CHECK(h.model().pinned.contains(*h.model().names.find("W_new")));
    const graph_index index(h.model());
    CHECK(index.at(index.resolve(main_scope, w)).pinned);
}

TEST_CASE("graph_index: every use listed once, under the value it reads, and found again from its node") {
    harness h(branchy_model());
    auto& m = h.model();
    const graph_index index(m);
    std::size_t node_inputs = 0;
    for (const auto n : m.nodes.ids())
        for (std::size_t k = 0; k < m.nodes[n].inputs.size(); ++k) node_inputs += m.nodes[n].inputs[k] != empty_name ? 1U : 0U;
    std::size_t graph_outputs = 0;
    for (const auto& s : m.scopes) graph_outputs += s.outputs.size();
    std::size_t uses = 0;
    for (const auto v : index.value_ids()) {
        for (const auto& u : index.uses(v)) {
            ++uses;
            if (u.node != none) CHECK(index.input(u.node, u.slot) == v);
            else CHECK(index.graph_output(u.scope, u.slot) == v);
        }
    }
    CHECK(uses == node_inputs + graph_outputs);
    // The last value's uses end the list: 'missing', defined last, is read once.
    const auto last = value_id{static_cast<std::uint32_t>(index.size() - 1)};
    CHECK(index.uses(last).size() == 1);
}

TEST_CASE("graph_model: a tensor a pass adds keeps its type, dims and recipe out of line; a file's tensor has none") {
    harness h(branchy_model());
    auto& m = h.model();
    const auto w = m.scopes[main_scope].initializers.front();
    CHECK(m.computed(w) == nullptr);
    CHECK(m.tensor_type(w) == 1);
    CHECK(m.tensor_dims(w) == std::vector<std::int64_t>{1});
    computed_values values;
    values.values = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
    const auto added = m.add_tensor(main_scope, m.names.fresh("folded"), 1, {2, 3}, values);
    REQUIRE(m.computed(added) != nullptr);
    CHECK(m.computed(added)->values.values == values.values);
    CHECK(m.tensors[added].site == none);
    CHECK(m.tensor_type(added) == 1);
    CHECK(m.tensor_dims(added) == std::vector<std::int64_t>{2, 3});
    CHECK(m.dims_view(added).to_vector() == std::vector<std::int64_t>{2, 3});
    CHECK(m.tensor_bytes(added) == 24);
    // Recipes stay where they are as more are added.
    const auto* first = m.computed(added);
    for (int i = 0; i < 100; ++i) (void)m.add_tensor(main_scope, m.names.fresh("more"), 7, {1}, {});
    CHECK(m.computed(added) == first);
    CHECK(m.tensor_bytes(m.scopes[main_scope].initializers.back()) == 8);
}

TEST_CASE("file_walk: what the graph model reads through the mapping is the same after the pages behind a walk went") {
    harness kept(branchy_model());
    auto opened = onnxstream::onnx::model_file::open(kept.path(), {}, onnxstream::onnx::tensor_reading::on_demand);
    REQUIRE(opened);
    auto built = graph_model::build(*opened);
    REQUIRE(built);
    const auto& m = *built;
    const auto seen = [&m] {
        std::vector<std::string> texts;
        for (const auto n : m.nodes.ids())
            texts.push_back(std::string(m.nodes[n].op_type()) + " " + std::string(m.node_name(n)) + " " +
                            std::string(m.text(m.nodes[n].outputs[0])));
        for (const auto t : m.tensors.ids())
            texts.push_back(std::string(m.text(m.tensors[t].name)) + " " + std::to_string(m.tensor_type(t)) + " " +
                            std::to_string(m.tensor_bytes(t)));
        return texts;
    };
    const auto before = seen();
    {
        file_walk walk(m);
        for (const auto n : m.nodes.ids()) walk.reached(n);
        for (const auto t : m.tensors.ids()) walk.reached(t);
    }  // and the rest of the file goes at the end
    CHECK(seen() == before);
    std::vector<node_id> visited;
    m.for_each_live_node([&](node_id n) { visited.push_back(n); });
    CHECK(visited.size() == m.live_node_count());
    CHECK(seen() == before);
}

namespace {

// Nodes of every shape of slot list, over several blocks of the index's node slots: no
// inputs, empty input names, 15 and more inputs or outputs, a body reading outer values
// and naming one as its output.
std::vector<std::byte> slot_shapes_model() {
    graph_spec body;
    body.nodes = {onnx_node("Add", {"r0", "X"}, {"b"}, "body_add")};
    body.outputs = {"r5"};  // a graph output that is an outer value
    graph_spec main;
    std::string last = "X";
    for (int i = 0; i < 200; ++i) {
        const auto name = "r" + std::to_string(i);
        if (i == 3) {  // no inputs
            main.nodes.push_back(onnx_node("RandomNormal", {}, {name}, "no_inputs"));
        } else if (i == 40) {  // empty names among the inputs
            main.nodes.push_back(onnx_node("Clip", {last, "", ""}, {name}, "empty_inputs"));
        } else if (i == 70 || i == 71) {  // 20 outputs (the first and last used)
            std::vector<std::string> outs;
            for (int k = 0; k < 20; ++k) outs.push_back(k == 0 ? name : name + "_" + std::to_string(k));
            main.nodes.push_back(onnx_node("Split", {last}, outs, "split" + std::to_string(i)));
        } else if (i == 130) {  // 16 inputs
            main.nodes.push_back(onnx_node("Concat", std::vector<std::string>(16, last), {name}, "concat"));
        } else if (i == 150) {
            main.nodes.push_back(onnx_node("If", {"c"}, {name}, "if", {attr_graph("then_branch", graph(body, "then"))}));
        } else if (i == 160) {
            main.nodes.push_back(onnx_node("Relu", {last}, {name}, "removed"));
        } else {
            main.nodes.push_back(onnx_node("Relu", {last}, {name}, name));
        }
        last = i == 160 ? last : name;
    }
    main.nodes.push_back(onnx_node("Neg", {"r71_19"}, {"Y"}, "last"));
    main.initializers = {bool_tensor("c", true)};
    main.inputs = {"X"};
    main.outputs = {"Y", "r0"};
    return model(graph(main));
}

}  // namespace

TEST_CASE("graph_index: each node's slots found again, whatever their counts, across blocks of nodes") {
    harness h(slot_shapes_model());
    auto& m = h.model();
    const auto removed = h.node_named("removed");
    m.remove_node(removed);
    const graph_index index(m);
    for (const auto n : m.nodes.ids()) {
        const auto& nd = m.nodes[n];
        if (!m.node_live(n)) {
            CHECK(index.input(n, 0) == none);
            CHECK(index.output(n, 0) == none);
            continue;
        }
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
            const auto v = index.input(n, k);
            if (nd.inputs[k] == empty_name) CHECK(v == none);
            else CHECK(v == index.resolve(nd.scope, nd.inputs[k]));
        }
        CHECK(index.input(n, nd.inputs.size()) == none);
        for (std::size_t k = 0; k < nd.outputs.size(); ++k) {
            const auto v = index.output(n, k);
            REQUIRE(v != none);
            CHECK(index.at(v).name == nd.outputs[k]);
            CHECK(index.at(v).scope == nd.scope);
        }
        CHECK(index.output(n, nd.outputs.size()) == none);
    }
    CHECK(index.input(h.node_named("no_inputs"), 0) == none);
    CHECK(index.output(h.node_named("split71"), 19) == index.input(h.node_named("last"), 0));
    CHECK(index.input(h.node_named("concat"), 15) == index.output(h.node_named("r129"), 0));
    CHECK(index.input(h.node_named("r72"), 0) == index.output(h.node_named("split71"), 0));
    // A node added after the index was built has no slots in it.
    const auto added = m.add_node(main_scope, none, "Relu", {*m.names.find("X")}, {m.names.intern("late")}, "late");
    CHECK(index.input(added, 0) == none);
    CHECK(index.output(added, 0) == none);
}

TEST_CASE("graph_index: a use's scope is the one at build time; graph outputs read from inner scopes keep theirs") {
    harness h(slot_shapes_model());
    auto& m = h.model();
    const graph_index index(m);
    const auto body = scope_id{1};
    REQUIRE(m.scopes[body].kind == scope_kind::subgraph);
    const auto r0 = index.output(h.node_named("r0"), 0);
    const auto r5 = index.output(h.node_named("r5"), 0);
    // r0: read by r1 (main), by the body's Add (inside), and a main graph output.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> seen;  // (scope, node or none)
    for (const auto& u : index.uses(r0)) seen.emplace_back(u.scope.value, u.node.value);
    const auto body_add = h.node_named("body_add");
    CHECK(seen == std::vector<std::pair<std::uint32_t, std::uint32_t>>{
                      {0, h.node_named("r1").value}, {body.value, body_add.value}, {0, none}});
    CHECK(index.is_graph_output(r0));
    // r5 is the body's output: a use with no node, in the body's scope, at its slot.
    bool found = false;
    for (const auto& u : index.uses(r5)) {
        if (u.node != none) continue;
        found = true;
        CHECK(u.scope == body);
        CHECK(u.slot == 0);
        CHECK(index.graph_output(u.scope, u.slot) == r5);
    }
    CHECK(found);
    CHECK(index.is_graph_output(r5));
    CHECK(!index.is_graph_output(index.output(h.node_named("r6"), 0)));
    // A pass moves the body up: the snapshot still places the Add's use where it was.
    m.move_contents(body, main_scope, h.node_named("if"));
    CHECK(m.nodes[body_add].scope == main_scope);
    CHECK(index.uses(r0)[1].node == body_add);
    CHECK(index.uses(r0)[1].scope == body);
    // An index built now sees it in the main graph.
    const graph_index after(m);
    CHECK(after.uses(after.output(h.node_named("r0"), 0))[1].scope == main_scope);
}

TEST_CASE("graph_model: a node's operator is kept once for each distinct (domain, op type); ai.onnx is the default domain") {
    graph_spec main;
    main.nodes = {onnx_node("Relu", {"X"}, {"a"}, "r1"), onnx_node("Relu", {"a"}, {"b"}, "r2"),
                  onnx_node("Relu", {"b"}, {"c"}, "r3", {}, "ai.onnx"),
                  onnx_node("Relu", {"c"}, {"Y"}, "custom", {}, "my.domain")};
    main.inputs = {"X"};
    main.outputs = {"Y"};
    harness h(model(graph(main)));
    auto& m = h.model();
    const auto& r1 = m.nodes[h.node_named("r1")];
    CHECK(r1.op_type() == "Relu");
    CHECK(r1.domain().empty());
    CHECK(r1.op == m.nodes[h.node_named("r2")].op);
    CHECK(r1.op == m.nodes[h.node_named("r3")].op);  // "ai.onnx" is ""
    const auto& custom = m.nodes[h.node_named("custom")];
    CHECK(custom.op != r1.op);
    CHECK(custom.domain() == "my.domain");
    CHECK(custom.op_type() == "Relu");
    CHECK(m.operator_of("ai.onnx", "Relu") == r1.op);
    // Kept before add_node: adding a node may move m.nodes, and r1 with it.
    const auto* const relu = r1.op;
    const auto added = m.add_node(main_scope, none, "Relu", {}, {}, {});
    CHECK(m.nodes[added].op == relu);
    CHECK(node{}.op_type().empty());
    CHECK(node{}.domain().empty());
}
