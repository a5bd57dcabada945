// The schema table against onnx.proto, with the numbers written out here (not taken from
// fields.hpp): a wrong row would misname paths and accept or refuse the wrong duplicates.
#include <onnxstream/onnx/schema.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>

using namespace onnxstream::onnx;

TEST_CASE("every row of the schema is found by its owner and number, once") {
    std::set<std::pair<message_kind, std::uint32_t>> seen;
    for (const auto& f : schema()) {
        CHECK(seen.insert({f.owner, f.number}).second);
        CHECK(find_field(f.owner, f.number) == &f);
        CHECK(std::string(f.name).size() > 0);
    }
    CHECK(seen.size() > 80);
}

TEST_CASE("fields onnx.proto does not declare are unknown, whatever their number") {
    CHECK(find_field(message_kind::model, 99) == nullptr);
    CHECK(find_field(message_kind::model, 31) == nullptr);
    CHECK(find_field(message_kind::tensor, 15) == nullptr);  // no TensorProto field 15
    CHECK(find_field(message_kind::graph, 3) == nullptr);    // GraphProto 3 and 4 were removed
    CHECK(field_name(message_kind::graph, 3) == "field3");
    CHECK(field_name(message_kind::node, 1000) == "field1000");
}

TEST_CASE("names, repetition and sub-messages match onnx.proto") {
    struct row {
        message_kind owner;
        std::uint32_t number;
        const char* name;
        bool repeated;
        field_holds holds;
    };
    const row rows[] = {
        {message_kind::model, 1, "ir_version", false, field_holds::value},
        {message_kind::model, 7, "graph", false, field_holds::child},
        {message_kind::model, 8, "opset_import", true, field_holds::child},
        {message_kind::model, 25, "functions", true, field_holds::child},
        {message_kind::graph, 1, "node", true, field_holds::child},
        {message_kind::graph, 5, "initializer", true, field_holds::child},
        {message_kind::graph, 14, "quantization_annotation", true, field_holds::message},
        {message_kind::graph, 16, "metadata_props", true, field_holds::message},
        {message_kind::node, 4, "op_type", false, field_holds::value},
        {message_kind::node, 5, "attribute", true, field_holds::child},
        {message_kind::attribute, 2, "f", false, field_holds::value},
        {message_kind::attribute, 6, "g", false, field_holds::child},
        {message_kind::attribute, 14, "tp", false, field_holds::message},
        {message_kind::attribute, 23, "sparse_tensors", true, field_holds::child},
        {message_kind::tensor, 3, "segment", false, field_holds::message},
        {message_kind::tensor, 4, "float_data", true, field_holds::value},
        {message_kind::tensor, 9, "raw_data", false, field_holds::value},
        {message_kind::tensor, 13, "external_data", true, field_holds::child},
        {message_kind::tensor, 14, "data_location", false, field_holds::value},
        {message_kind::sparse_tensor, 1, "values", false, field_holds::child},
        {message_kind::training_info, 2, "algorithm", false, field_holds::child},
        {message_kind::training_info, 4, "update_binding", true, field_holds::message},
        {message_kind::function, 11, "attribute_proto", true, field_holds::child},
        {message_kind::function, 12, "value_info", true, field_holds::message},
        {message_kind::value_info, 2, "type", false, field_holds::message},
        {message_kind::string_entry, 1, "key", false, field_holds::value},
        {message_kind::operator_set, 2, "version", false, field_holds::value},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        const auto* f = find_field(r.owner, r.number);
        REQUIRE(f != nullptr);
        CHECK(std::string(f->name) == r.name);
        CHECK(f->repeated == r.repeated);
        CHECK(f->holds == r.holds);
        CHECK(field_name(r.owner, r.number) == r.name);
        CHECK(is_singular(r.owner, r.number) == !r.repeated);
        message_kind sub{};
        CHECK(child_kind(r.owner, r.number, sub) == (r.holds == field_holds::child));
    }
}

TEST_CASE("the messages onnxstream descends into are the ones the tree builds") {
    message_kind sub{};
    REQUIRE(child_kind(message_kind::attribute, 5, sub));
    CHECK(sub == message_kind::tensor);
    REQUIRE(child_kind(message_kind::tensor, 13, sub));
    CHECK(sub == message_kind::string_entry);
    REQUIRE(child_kind(message_kind::graph, 15, sub));
    CHECK(sub == message_kind::sparse_tensor);
    REQUIRE(child_kind(message_kind::function, 9, sub));
    CHECK(sub == message_kind::operator_set);
    CHECK_FALSE(child_kind(message_kind::value_info, 2, sub));  // TypeProto stays opaque
}
