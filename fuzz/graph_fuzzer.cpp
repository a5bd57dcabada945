// Fuzz target: the graph commands (analyze, optimize, infer-shapes, extract, edit) on a
// model written to a scratch folder beside two small data files (model.onnx.data and
// weights.data, 4 KiB each), as the model_ops target does for inspect, merge and split.
// These build the graph model, its index, the passes and shape inference over whatever
// graph the bytes hold: cycles, values defined twice, dangling inputs, subgraphs naming
// outer values, hostile attributes and dims. extract and edit are given names drawn from
// the model's main graph (a node's output, a node's input), and a batch size.
//
// Invariants: no crash whatever the model says; a failure has a message, leaves no output
// and no temporary file behind; a written model opens again and has the size reported;
// a model analyze reads is, once optimized, read by analyze again, and optimizing it a
// second time writes a model too.
#include "fuzz_support.hpp"

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/ops/analyze.hpp>
#include <onnxstream/ops/edit.hpp>
#include <onnxstream/ops/extract.hpp>
#include <onnxstream/ops/infer_shapes.hpp>
#include <onnxstream/ops/optimize.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace {

using namespace onnxstream;
namespace fs = std::filesystem;

const fs::path& folder() {
    static const fs::path path = fuzz::folder_with_data_files("graph");
    return path;
}

constexpr const char* outputs[] = {"optimized.onnx", "optimized.onnx.data", "again.onnx",          "again.onnx.data",
                                   "shapes.onnx",    "extracted.onnx",      "extracted.onnx.data", "edited.onnx"};

void remove_outputs(const fs::path& dir) {
    std::error_code ignored;
    for (const auto* name : outputs) fs::remove(dir / name, ignored);
}

// A written model opens again, with the size its command reported.
void require_opens(const fs::path& path, std::uint64_t reported_size, const char* after) {
    auto written = onnx::model_file::open(path);
    if (!written) std::fprintf(stderr, "the output of %s does not open: %s\n", after, written.error().describe().c_str());
    ONNXSTREAM_REQUIRE(written.has_value());
    ONNXSTREAM_REQUIRE(written->file.size() == reported_size);
}

template <class Report>
void require_written_or_absent(const result<Report>& report, const fs::path& output, const char* after) {
    fuzz::require_no_leftovers(output.parent_path(), after);
    if (report) {
        require_opens(output, report->output_size, after);
    } else {
        ONNXSTREAM_REQUIRE(!report.error().message.empty());
        ONNXSTREAM_REQUIRE(!fs::exists(output));
    }
}

ops::optimize_options optimize_to(const fs::path& output) {
    ops::optimize_options options;
    options.output = output;
    options.threads = 1;
    options.max_rounds = 8;  // the fixed point of a small model is reached in a few
    return options;
}

// Names of the main graph for extract and edit: a node's output (the value to extract,
// rename, make an output) and an input of a node before it (where to cut), drawn from
// `pick`. Nothing when the model has no graph the graph model reads.
struct picked_names {
    std::string value;
    std::optional<std::string> cut;
};

std::optional<picked_names> pick_names(const fs::path& model, fuzz::choices& pick) {
    auto file = onnx::model_file::open(model);
    if (!file) return std::nullopt;
    auto built = graph::graph_model::build(*file);
    if (!built) return std::nullopt;
    const auto& g = *built;
    const auto& nodes = g.scopes[graph::main_scope].nodes;
    if (nodes.empty()) return std::nullopt;
    const auto at = static_cast<std::size_t>(pick.next() % nodes.size());
    const auto& n = g.nodes[nodes[at]];
    if (n.outputs.size() == 0) return std::nullopt;
    picked_names names{std::string(g.text(n.outputs[pick.next() % n.outputs.size()])), std::nullopt};
    const auto& first = g.nodes[nodes[static_cast<std::size_t>(pick.next() % (at + 1))]];
    if (first.inputs.size() != 0 && pick.one_in(2)) names.cut = std::string(g.text(first.inputs[0]));
    return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto& dir = folder();
    const auto model = dir / "model.onnx";
    fuzz::write_file(model, fuzz::as_bytes(data, size));
    remove_outputs(dir);

    const auto analyzed = ops::analyze(model, onnx::open_options{});
    if (!analyzed) ONNXSTREAM_REQUIRE(!analyzed.error().message.empty());

    ops::infer_shapes_options shapes;
    shapes.output = dir / "shapes.onnx";
    shapes.threads = 1;
    require_written_or_absent(ops::infer_shapes(model, shapes), shapes.output, "infer-shapes");

    fuzz::choices pick(fuzz::as_bytes(data, size));
    if (const auto names = pick_names(model, pick)) {
        ops::extract_options extract;
        extract.output = dir / "extracted.onnx";
        extract.threads = 1;
        extract.outputs = {names->value};
        if (names->cut) extract.inputs = {*names->cut};
        extract.reuse_data = pick.one_in(2);
        require_written_or_absent(ops::extract(model, extract), extract.output, "extract");

        ops::edit_options edit;
        edit.output = dir / "edited.onnx";
        edit.threads = 1;
        if (pick.one_in(2)) edit.renames = {{names->value, names->value + "_renamed"}};
        else edit.add_outputs = {names->value};
        if (pick.one_in(2)) edit.batch = static_cast<std::int64_t>(pick.next() % 4);  // 0 is refused
        edit.strip_doc = pick.one_in(2);
        require_written_or_absent(ops::edit(model, edit), edit.output, "edit");
    }

    const auto optimized_path = dir / "optimized.onnx";
    const auto optimized = ops::optimize(model, optimize_to(optimized_path));
    require_written_or_absent(optimized, optimized_path, "optimize");
    if (!optimized) return 0;

    // What optimize wrote is a model the graph commands read: analyze reads it whenever it
    // read the input, and a second optimize writes it again.
    const auto reanalyzed = ops::analyze(optimized_path, onnx::open_options{});
    if (analyzed && !reanalyzed)
        std::fprintf(stderr, "the optimized model does not analyze: %s\n", reanalyzed.error().describe().c_str());
    if (analyzed) ONNXSTREAM_REQUIRE(reanalyzed.has_value());
    const auto again_path = dir / "again.onnx";
    const auto again = ops::optimize(optimized_path, optimize_to(again_path));
    if (!again) std::fprintf(stderr, "the optimized model does not optimize again: %s\n", again.error().describe().c_str());
    require_written_or_absent(again, again_path, "the second optimize");
    ONNXSTREAM_REQUIRE(again.has_value());
    return 0;
}
