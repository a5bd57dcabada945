// graph_view: the graphs of a model as the page draws them (the main graph, the bodies of
// its If / Loop / Scan nodes, its local functions), in one JSON document, read without a
// weight (only the few small integer constants shape inference looks at). Nodes name their
// values by index into one table of values, and their op types and domains by index into
// short tables, so a graph of a million nodes takes tens of MB, not hundreds.
//
// The document, one table of values for every graph:
// {"ok": true, "graph": name, "nodes_total": every node of every graph,
//  "ops": [op type...], "domains": [domain...], "files": [data file location...],
//  "values": [[name, kind, type, shape or null]...]   kind: "input", "initializer",
//            "output" (of a node) or "undefined"; type "FLOAT" or ""; shape ["1", "N", "?"]
//  "nodes": [[name, op, domain, [value...], [value...], [graph...], [[attribute, type, value]...]]...]
//            an empty input is -1; an attribute's value is its text, cut short when long;
//            graphs: what the node opens, by index into "subgraphs" (its If / Loop / Scan
//            bodies in attribute order, or the local function it calls)
//  "inputs": [value...], "outputs": [value...],
//  "subgraphs": [{"kind": "body" or "function", "name", "domain" (functions),
//            "parent": graph or -1 (main), "node": its node there or -1, "attribute": "then_branch",
//            "nodes": [as above], "inputs": [value...], "outputs": [value...],
//            "outer": [value...] the values of graphs around it that it (or a body in it) reads}...]
//            every body at any depth and every local function; a body comes after the graph holding it
//  "initializers": [[name, value or -1, dtype, [dims], bytes, storage, file or -1, offset, scope]...]}
//            storage "raw", "typed", "external", ...; scope "" for the main graph, else its path.
// Types and shapes are the declared ones (graph inputs, outputs, value_info) where given,
// else what value_shapes.hpp infers with certainty.
#pragma once

#include <onnxstream/onnx/open_options.hpp>
#include <onnxstream/result.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxstream::ops {

struct graph_view_options : onnx::open_options {
    /// The document may not grow past this many bytes: `too_large` when it would.
    std::uint64_t max_bytes = std::uint64_t{100} << 20U;
    /// Attribute values longer than this many bytes of text are cut short ("...").
    std::uint32_t max_attribute_text = 80;
};

/// Errors: the model cannot be read; `too_large` when the document passes options.max_bytes.
[[nodiscard]] result<std::string> graph_view_json(const std::filesystem::path& model, const graph_view_options& options = {});
/// The same document in pieces of about 64 KiB, in order, for a server to send one by one
/// (and free as it goes) instead of joining them, which would hold the document twice.
[[nodiscard]] result<std::vector<std::string>> graph_view_pieces(const std::filesystem::path& model,
                                                                 const graph_view_options& options = {});

}  // namespace onnxstream::ops
