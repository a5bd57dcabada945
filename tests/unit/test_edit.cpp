// edit on small models built field by field: the NAME=DIMS parser, a rename reaching
// every field that names the tensor, and the refusals that write nothing. The TypeProto
// codec (private) keeps what it does not change. ONNX Runtime, python-onnx and
// update_model_dims judge real models in e2e test_edit.py.
#include <onnxstream/ops/edit.hpp>

#include "ops/value_type_edit.hpp"
#include "proto_builder.hpp"
#include "small_models.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

using namespace onnxstream;
using namespace test_support;
using namespace small_models;
namespace fs = std::filesystem;

namespace {

// Relu(alpha_in) -> beta_mid, Add(beta_mid, weight_w) -> gamma_out; no declared inputs or outputs.
fs::path small(const temp_folder& dir) {
    const auto w = ramp(4);
    return write_bytes(dir.path() / "m.onnx",
                       model({raw_tensor("weight_w", {4}, w)},
                             {node("Relu", {"alpha_in"}, {"beta_mid"}), node("Add", {"beta_mid", "weight_w"}, {"gamma_out"})}));
}

ops::edit_options options_for(const temp_folder& dir) {
    ops::edit_options options;
    options.output = dir.path() / "e.onnx";
    options.backend = io::writer_backend::portable;
    return options;
}

}  // namespace

TEST_CASE("NAME=DIMS: values, symbols, and what is refused") {
    const auto spec = ops::parse_input_shape_spec("x.1=1,N,224,seq_len", "--input-shape");
    REQUIRE(spec);
    CHECK(spec->name == "x.1");
    REQUIRE(spec->dims.size() == 4);
    CHECK(spec->dims[0] == ops::dim_spec{1, {}});
    CHECK(spec->dims[1] == ops::dim_spec{std::nullopt, "N"});
    CHECK(spec->dims[3] == ops::dim_spec{std::nullopt, "seq_len"});
    CHECK(ops::parse_input_shape_spec("a=b=3", "--input-shape")->name == "a=b");  // the last '=' splits
    for (const auto* bad : {"x", "=1", "x=", "x=1,,2", "x=-1", "x=1x", "x=99999999999999999999"}) {
        const auto r = ops::parse_input_shape_spec(bad, "--input-shape");
        REQUIRE_FALSE(r);
        CHECK(r.error().code == error_code::invalid_argument);
        CHECK_FALSE(r.error().hint.empty());
    }
}

TEST_CASE("a rename reaches nodes and initializers; metadata and producer are set") {
    const temp_folder dir;
    const auto src = small(dir);
    auto options = options_for(dir);
    options.renames = {{"beta_mid", "delta_new"}, {"weight_w", "omega_w"}};
    options.metadata = {{"k", "v"}};
    options.producer_name = "surgeon";
    const auto r = ops::edit(src, options);
    REQUIRE(r);
    REQUIRE(r->changes.size() == 4);
    CHECK(r->changes[0].kind == "rename");
    CHECK(r->changes[0].detail == "-> delta_new (2 reference(s))");
    CHECK(r->changes[1].detail == "-> omega_w (2 reference(s))");
    const auto text = read_file(options.output);
    CHECK(text.find("beta_mid") == std::string::npos);
    CHECK(text.find("weight_w") == std::string::npos);
    CHECK(text.find("delta_new") != std::string::npos);
    CHECK(text.find("surgeon") != std::string::npos);
    CHECK(text.find("tests") == std::string::npos);  // the old producer
}

TEST_CASE("refusals write nothing") {
    const temp_folder dir;
    const auto src = small(dir);
    const auto refused = [&](ops::edit_options options) {
        const auto r = ops::edit(src, options);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == error_code::invalid_argument);
        CHECK_FALSE(fs::exists(options.output));
    };
    auto options = options_for(dir);
    refused(options);  // nothing to edit
    options.renames = {{"nothing", "x"}};
    refused(options);
    options.renames = {{"beta_mid", "gamma_out"}};  // taken
    refused(options);
    options.renames = {{"beta_mid", "a"}, {"weight_w", "a"}};
    refused(options);
    options.renames = {};
    options.remove_metadata = {"absent"};
    refused(options);
    options.remove_metadata = {};
    options.input_shapes = {{"alpha_in", {{1, {}}}}};  // not a declared graph input
    refused(options);
}

TEST_CASE("the TypeProto codec changes the dims and keeps denotation and unknown fields") {
    // TypeProto{tensor_type{elem_type 1, shape{dim{dim_param "N", denotation "DATA_BATCH"}, dim{dim_value 3}}}, denotation "IMAGE"}
    proto_builder d0;
    d0.string_field(2, "N").string_field(3, "DATA_BATCH");
    proto_builder d1;
    d1.varint_field(1, 3);
    proto_builder shape;
    shape.message_field(1, d0).message_field(1, d1);
    proto_builder tensor;
    tensor.varint_field(1, 1).message_field(2, shape);
    proto_builder type;
    type.message_field(1, tensor).string_field(6, "IMAGE");
    const auto decoded = ops::detail::decode_type(type.bytes());
    REQUIRE(decoded);
    CHECK(decoded->is_tensor);
    CHECK(decoded->elem_type == 1);
    CHECK(ops::detail::dims_text(*decoded) == "[N, 3]");
    auto fixed = *decoded;
    fixed.dims[0] = {ops::detail::dimension::kind::value, 8, {}};
    const auto bytes = ops::detail::encode_type(type.bytes(), fixed);
    const auto again = ops::detail::decode_type(bytes);
    REQUIRE(again);
    CHECK(ops::detail::dims_text(*again) == "[8, 3]");
    const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    CHECK(text.find("DATA_BATCH") != std::string::npos);
    CHECK(text.find("IMAGE") != std::string::npos);
    CHECK(ops::detail::encode_type(type.bytes(), *decoded) == std::vector<std::byte>(type.bytes().begin(), type.bytes().end()));
}
