// The pass registry: every pass once, in the default order, and the `--passes` parser
// (an unknown name is an error that names the known passes; it never falls through).
#include <onnxstream/passes/pass_registry.hpp>

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace onnxstream::passes;

TEST_CASE("pass registry: names, order, parsing; an unknown name is an error listing the passes") {
    const auto all = pass_registry();
    REQUIRE(!all.empty());
    CHECK(all[0].name == "dce");
    CHECK(find_pass("fold-bn") != nullptr);
    CHECK(find_pass("fold-constants") != nullptr);
    CHECK(find_pass("nope") == nullptr);
    for (const auto& p : all) CHECK((p.run != nullptr && !p.summary.empty()));
    const auto parsed = parse_pass_list("cse,dce");
    REQUIRE(parsed.has_value());
    CHECK(((*parsed)[0]->name == "cse" && (*parsed)[1]->name == "dce"));
    const auto unknown = parse_pass_list("dce,nope");
    REQUIRE(!unknown.has_value());
    CHECK(unknown.error().code == error_code::invalid_argument);
    CHECK(unknown.error().message.find("'nope'") != std::string::npos);
    CHECK(unknown.error().message.find(pass_names()) != std::string::npos);
    CHECK(!parse_pass_list("dce,dce").has_value());
    CHECK(!parse_pass_list("").has_value());
}
