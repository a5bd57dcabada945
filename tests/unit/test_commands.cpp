// The command table (api/commands.hpp): one row per parameter, read the same way by every
// front end. The defaults the table shows must be the ones the operations use, and a value
// the table refuses is refused with the parameter named as the front end spells it.
#include <onnxstream/api/commands.hpp>
#include <onnxstream/ops/written_data_file.hpp>
#include <onnxstream/report/byte_size.hpp>

#include "reference_model.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

using namespace onnxstream;

namespace {

const api::command_spec& command(std::string_view name) {
    const auto* c = api::find_command(name);
    REQUIRE(c != nullptr);
    return *c;
}

std::string error_of(const api::command_spec& c, const api::parameter_values& values, api::front_end who) {
    const api::parameter_reader reader(c.parameters, values, who);
    const auto checked = reader.check();
    REQUIRE_FALSE(checked);
    CHECK(checked.error().code == error_code::invalid_argument);
    return checked.error().message;
}

}  // namespace

TEST_CASE("every default in the table is a value of its kind, and every choice default is a choice") {
    for (const auto& c : api::commands()) {
        std::set<std::string_view> names;
        for (const auto& p : c.parameters) {
            CAPTURE(c.name);
            CAPTURE(p.name);
            CHECK(names.insert(p.name).second);  // a name once per command
            CHECK_FALSE(p.help.empty());
            CHECK_FALSE(p.label.empty());
            if (p.kind != api::value_kind::flag) CHECK_FALSE(p.placeholder.empty());
            if (p.default_value.empty()) continue;
            switch (p.kind) {
                case api::value_kind::size: CHECK(report::parse_size(p.default_value)); break;
                case api::value_kind::choice:
                    CHECK(std::find(p.choices.begin(), p.choices.end(), p.default_value) != p.choices.end());
                    break;
                case api::value_kind::number: CHECK(std::strtod(std::string(p.default_value).c_str(), nullptr) > 0); break;
                default: break;
            }
        }
    }
}

TEST_CASE("the table's defaults are the operations' own: options read from no values equal the structs' defaults") {
    const api::parameter_values no_values;
    const auto read = [&](std::string_view name) {
        return api::parameter_reader(command(name).parameters, no_values, api::front_end::python);
    };

    const auto split = api::externalize_options_from(read("split"), ops::externalize_kind::split);
    REQUIRE(split);
    const auto split_defaults = ops::externalize_defaults(ops::externalize_kind::split);
    CHECK(split->threshold == split_defaults.threshold);
    CHECK(split->alignment == split_defaults.alignment);
    CHECK(split->align_threshold == split_defaults.align_threshold);
    CHECK(split->shard_size == split_defaults.shard_size);
    CHECK(split->threshold == ops::default_threshold);

    const auto repack = api::externalize_options_from(read("repack"), ops::externalize_kind::repack);
    REQUIRE(repack);
    CHECK(repack->allow_in_place);
    CHECK(repack->output_suffix == "repacked");

    const auto optimize = api::optimize_options_from(read("optimize"));
    REQUIRE(optimize);
    CHECK(optimize->fold_limit == ops::optimize_options{}.fold_limit);
    CHECK(optimize->passes == ops::optimize_options{}.passes);

    const auto caffe = api::export_caffe_options_from(read("export-caffe"));
    REQUIRE(caffe);
    const ops::export_caffe_options caffe_defaults;
    CHECK(caffe->tolerance == caffe_defaults.tolerance);
    CHECK(caffe->dialect == caffe_defaults.dialect);
    CHECK(caffe->fold_batchnorm == caffe_defaults.fold_batchnorm);

    api::parameter_values fp16;
    fp16.add("dtype", "fp16");
    const auto convert = api::convert_options_from(
        api::parameter_reader(command("convert").parameters, fp16, api::front_end::python));
    REQUIRE(convert);
    const ops::convert_options convert_defaults;
    CHECK(convert->alignment == convert_defaults.alignment);  // none: only tensors >= 1 MiB are aligned
    CHECK(convert->block_ops == convert_defaults.block_ops);
    CHECK(convert->shard_size == convert_defaults.shard_size);
}

TEST_CASE("a refused value names the parameter as each front end spells it") {
    const auto& split = command("split");
    api::parameter_values values;
    values.add("threshold", "1Q");
    CHECK(error_of(split, values, api::front_end::cli) == "--threshold takes a size such as 4096, 64K, 1M or 2G, not '1Q'");
    CHECK(error_of(split, values, api::front_end::page).starts_with("the field 'threshold' takes a size"));
    CHECK(error_of(split, values, api::front_end::python).starts_with("threshold= takes a size"));

    api::parameter_values dtype;
    dtype.add("model", "m.onnx");
    dtype.add("dtype", "fp32");
    CHECK(error_of(command("convert"), dtype, api::front_end::python) == "dtype= takes fp16 or bf16, not 'fp32'");

    api::parameter_values flag;
    flag.add("model", "m.onnx");
    flag.add("force", "maybe");
    CHECK(error_of(split, flag, api::front_end::python).starts_with("force= takes on or off"));
}

TEST_CASE("unknown, repeated and missing parameters are refused before anything runs") {
    const auto& merge = command("merge");
    api::parameter_values unknown;
    unknown.add("model", "m.onnx");
    unknown.add("treshold", "1K");
    const auto message = error_of(merge, unknown, api::front_end::python);
    CHECK(message.starts_with("unknown parameter 'treshold'"));
    CHECK(message.find("data_dir") != std::string::npos);  // Python's names
    CHECK(message.find("writer") == std::string::npos);    // a command line test hook is not offered

    // The command line's test hook is not a Python keyword.
    api::parameter_values writer;
    writer.add("model", "m.onnx");
    writer.add("writer", "portable");
    CHECK(error_of(merge, writer, api::front_end::python).starts_with("unknown parameter 'writer'"));

    api::parameter_values twice;
    twice.add("model", "m.onnx");
    twice.add("output", "a.onnx");
    twice.add("output", "b.onnx");
    CHECK(error_of(merge, twice, api::front_end::python) == "output= is given more than once");

    const api::parameter_values no_values;
    CHECK(error_of(merge, no_values, api::front_end::cli) == "missing MODEL");
    api::parameter_values no_dtype;
    no_dtype.add("model", "m.onnx");
    CHECK(error_of(command("convert"), no_dtype, api::front_end::cli) == "missing --dtype (fp16 or bf16)");
}

TEST_CASE("flags take on/off words, and a repeatable parameter keeps every value") {
    const auto& split = command("split");
    api::parameter_values values;
    values.add("model", "m.onnx");
    values.add("force", "0");
    values.add("strict", "true");
    values.add("data", "a.data");
    values.add("data", "b.data");
    const api::parameter_reader reader(split.parameters, values, api::front_end::python);
    REQUIRE(reader.check());
    CHECK_FALSE(reader.flag("force"));
    CHECK_FALSE(reader.given("force"));
    CHECK(reader.flag("strict"));
    const auto data = reader.paths("data");
    REQUIRE(data);
    CHECK(data->size() == 2);
}

TEST_CASE("run_command merges a model and reports it as JSON, with hints worded as keywords") {
    test_support::temp_folder dir;
    const auto model = test_support::write_reference_model(dir);
    const auto output = dir.path() / "out.onnx";
    api::parameter_values values;
    values.add("model", model.string());
    values.add("output", output.string());
    const auto outcome = api::run_command(command("merge"), values, api::front_end::python, {});
    REQUIRE(outcome);
    CHECK(std::filesystem::exists(output));
    CHECK(outcome->outputs == std::vector<std::filesystem::path>{output});
    CHECK(outcome->report_json.find("\"tensors_inlined\":1") != std::string::npos);

    const auto again = api::run_command(command("merge"), values, api::front_end::python, {});
    REQUIRE_FALSE(again);
    CHECK(again.error().code == error_code::output_exists);
    CHECK(report::worded_hint(again.error(), api::api_wording()).find("force=True") != std::string::npos);
}

TEST_CASE("the page is offered only the commands and parameters that name it") {
    const auto json = api::commands_json();
    CHECK(json.starts_with("[{\"name\":\"inspect\""));
    CHECK(json.find("\"writer\"") != std::string::npos);  // listed, with its surfaces
    for (const auto& c : api::commands())
        for (const auto& p : c.parameters)
            if (p.hidden) CHECK_FALSE(p.on(api::surface::page));
    CHECK(api::parameter_help(command("split"), *command("split").find("output")).find("<stem>.split.onnx") != std::string::npos);
}
