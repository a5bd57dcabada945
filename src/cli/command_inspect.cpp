#include "cli_common.hpp"

#include <onnxstream/ops/inspect.hpp>

#include <array>
#include <cstdio>

namespace onnxstream::cli {
namespace {

// ---------------------------------------------------------------- inspect

constexpr std::string_view inspect_help =
    "usage: onnxstream inspect MODEL [--data FILE]... [--data-dir DIR]... [--json]\n"
    "\n"
    "What a model is and what it needs: IR version, opsets, producer, inputs and outputs,\n"
    "nodes per op type, tensors per data type, subgraphs and functions, and every external\n"
    "data file (how it was found, or every place tried; tensors and bytes it must hold; its\n"
    "real size; problems). Ends with the size the merged model would have and whether it\n"
    "fits in one .onnx file (under 2 GB). Weights are never read.\n"
    "\n"
    "  --data FILE      an external data file (matched by name; a single one serves all)\n"
    "  --data-dir DIR   a folder to look for external data files in\n"
    "  --json           print a JSON document on stdout\n"
    "  --quiet          print nothing but warnings and errors\n";

constexpr std::array inspect_options{opt_help, opt_quiet, opt_json, opt_data, opt_data_dir};

std::string describe_value(const ops::value_summary& v) {
    std::string text = v.name + ": " + (v.type.empty() ? "?" : v.type);
    if (v.has_shape) {
        text += "[";
        for (std::size_t i = 0; i < v.shape.size(); ++i) text += (i ? ", " : "") + v.shape[i];
        text += "]";
    }
    return text;
}

void print_inspect_json(const ops::inspect_report& r) { print_text(stdout, "%s\n", report::to_json(r).c_str()); }

void print_inspect_text(const ops::inspect_report& r) {
    print_text(stdout, "%s  (%s)\n", terminal_safe(r.path.string()).c_str(), human_bytes(r.file_size).c_str());
    print_text(stdout, "  IR version %lld", static_cast<long long>(r.ir_version));
    if (!r.producer_name.empty())
        print_text(stdout, ", produced by %s%s%s", terminal_safe(r.producer_name).c_str(), r.producer_version.empty() ? "" : " ",
                           terminal_safe(r.producer_version).c_str());
    print_text(stdout, "\n  opsets:");
    for (const auto& [domain, version] : r.opsets)
        print_text(stdout, " %s %lld", domain.empty() ? "ai.onnx" : terminal_safe(domain).c_str(), static_cast<long long>(version));
    print_text(stdout, "\n");
    if (!r.graph_name.empty()) print_text(stdout, "  graph: %s\n", terminal_safe(r.graph_name).c_str());
    for (const auto& v : r.inputs) print_text(stdout, "  input  %s\n", terminal_safe(describe_value(v)).c_str());
    for (const auto& v : r.outputs) print_text(stdout, "  output %s\n", terminal_safe(describe_value(v)).c_str());
    print_text(stdout, "  %s (%llu in the main graph), %s, %s\n", plural(r.nodes, "node").c_str(),
                       static_cast<unsigned long long>(r.main_graph_nodes), plural(r.subgraphs, "subgraph").c_str(),
                       plural(r.functions.size(), "function").c_str());
    std::string ops_line;
    for (const auto& [op, count] : r.op_types) ops_line += " " + terminal_safe(op) + " " + std::to_string(count) + ",";
    if (!ops_line.empty()) {
        ops_line.pop_back();
        print_text(stdout, "   %s\n", ops_line.c_str());
    }
    print_text(stdout, "  %s, %s\n", plural(r.tensors, "tensor").c_str(), human_bytes(r.tensor_bytes).c_str());
    for (const auto& [type, count] : r.by_type)
        print_text(stdout, "    %-10s %6llu  %s\n", type.c_str(), static_cast<unsigned long long>(count.tensors),
                           human_bytes(count.bytes).c_str());
    for (const auto& [storage, count] : r.by_storage)
        print_text(stdout, "    stored %-8s %llu tensors, %s\n", storage.c_str(), static_cast<unsigned long long>(count.tensors),
                           human_bytes(count.bytes).c_str());
    if (r.data_files.empty()) print_text(stdout, "  no external data\n");
    for (const auto& f : r.data_files) {
        print_text(stdout, "  external data '%s'\n", terminal_safe(f.location).c_str());
        if (f.path) print_text(stdout, "    found: %s (%s)\n", terminal_safe(f.path->string()).c_str(), f.how.c_str());
        else print_text(stdout, "    NOT FOUND\n");
        print_text(stdout, "    %s, needs %s", plural(f.tensors, "tensor").c_str(), human_bytes(f.bytes_needed).c_str());
        if (f.size) print_text(stdout, ", file is %s", human_bytes(*f.size).c_str());
        print_text(stdout, "\n");
        for (const auto& p : f.problems) print_text(stdout, "    problem: %s\n", p.c_str());
        if (!f.hint.empty()) print_text(stdout, "    %s\n", f.hint.c_str());
    }
    if (r.merged_size)
        print_text(stdout, "  merged: %s (%llu bytes), %s\n", human_bytes(*r.merged_size).c_str(),
                           static_cast<unsigned long long>(*r.merged_size),
                           r.fits_in_one_file ? "fits in one .onnx file" : "over the 2 GB limit: keep external data (repack)");
    else print_text(stdout, "  merged: unknown until the problems above are fixed\n");
}

}  // namespace

int run_inspect(std::span<const std::string> argv, const command_context&) {
    auto p = prepare("inspect", inspect_help, argv, inspect_options);
    if (!p.args) return p.status;
    const auto& args = *p.args;
    if (args.positionals.size() != 1) return usage_error("inspect", "inspect takes exactly one MODEL");
    auto report = ops::inspect(args.positionals[0], data_options(args));
    if (!report) return fail(report.error(), p.flags.json);
    for (const auto& w : report->warnings) print_warning(w);
    if (p.flags.json) print_inspect_json(*report);
    else if (!p.flags.quiet) print_inspect_text(*report);
    return exit_ok;
}

}  // namespace onnxstream::cli
