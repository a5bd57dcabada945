// Small ONNX models written by hand for the graph-pass unit tests (independent of the
// code under test: the bytes come from test_support::proto_builder), and a harness that
// opens one, builds its graph model, runs passes and reads results back.
#pragma once

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/graph/tensor_reader.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/ops/optimize.hpp>

#include "proto_builder.hpp"
#include "temp_folder.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace test_passes {

using test_support::proto_builder;

// Field numbers written out here on purpose: the tests do not trust fields.hpp.
inline proto_builder attr_int(std::string_view name, std::int64_t value) {
    proto_builder a;
    a.string_field(1, name).varint_field(20, 2).varint_field(3, static_cast<std::uint64_t>(value));
    return a;
}

inline proto_builder attr_float(std::string_view name, float value) {
    proto_builder a;
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, 4);
    a.string_field(1, name).varint_field(20, 1).fixed32_field(2, bits);
    return a;
}

inline proto_builder attr_graph(std::string_view name, const proto_builder& graph) {
    proto_builder a;
    a.string_field(1, name).varint_field(20, 5).message_field(6, graph);
    return a;
}

/// An INTS attribute (type 7), its values unpacked.
inline proto_builder attr_ints(std::string_view name, const std::vector<std::int64_t>& values) {
    proto_builder a;
    a.string_field(1, name).varint_field(20, 7);
    for (const auto v : values) a.varint_field(8, static_cast<std::uint64_t>(v));
    return a;
}

inline proto_builder attr_tensor(std::string_view name, const proto_builder& tensor) {
    proto_builder a;
    a.string_field(1, name).varint_field(20, 4).message_field(5, tensor);
    return a;
}

inline proto_builder onnx_node(std::string_view op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                               std::string_view name = {}, std::vector<proto_builder> attributes = {},
                               std::string_view domain = {}) {
    proto_builder n;
    for (const auto& i : inputs) n.string_field(1, i);
    for (const auto& o : outputs) n.string_field(2, o);
    if (!name.empty()) n.string_field(3, name);
    n.string_field(4, op);
    for (const auto& a : attributes) n.message_field(5, a);
    if (!domain.empty()) n.string_field(7, domain);
    return n;
}

/// A FLOAT tensor (raw_data); data_type 1.
inline proto_builder float_tensor(std::string_view name, std::vector<std::int64_t> dims, std::vector<float> values) {
    proto_builder t;
    for (const auto d : dims) t.varint_field(1, static_cast<std::uint64_t>(d));
    t.varint_field(2, 1).string_field(8, name);
    std::vector<std::byte> raw(values.size() * 4);
    if (!raw.empty()) std::memcpy(raw.data(), values.data(), raw.size());  // memcpy of a null pointer is undefined
    t.bytes_field(9, raw);
    return t;
}

/// A scalar tensor of another type from its little-endian bytes.
inline proto_builder scalar_tensor(std::string_view name, std::int32_t data_type, std::vector<std::byte> raw) {
    proto_builder t;
    t.varint_field(2, static_cast<std::uint64_t>(data_type)).string_field(8, name).bytes_field(9, raw);
    return t;
}

inline proto_builder bool_tensor(std::string_view name, bool value) {
    return scalar_tensor(name, 9, {static_cast<std::byte>(value ? 1 : 0)});
}

inline proto_builder int64_tensor(std::string_view name, std::int64_t value) {
    std::vector<std::byte> raw(8);
    for (int i = 0; i < 8; ++i)
        raw[static_cast<std::size_t>(i)] = static_cast<std::byte>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xFF);
    return scalar_tensor(name, 7, raw);
}

inline proto_builder vinfo(std::string_view name) {
    proto_builder v;
    v.string_field(1, name);
    return v;
}

struct graph_spec {
    std::vector<proto_builder> nodes;
    std::vector<proto_builder> initializers;
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    std::vector<std::string> value_infos;
};

inline proto_builder graph(const graph_spec& spec, std::string_view name = "g") {
    proto_builder g;
    for (const auto& n : spec.nodes) g.message_field(1, n);
    g.string_field(2, name);
    for (const auto& t : spec.initializers) g.message_field(5, t);
    for (const auto& i : spec.inputs) g.message_field(11, vinfo(i));
    for (const auto& o : spec.outputs) g.message_field(12, vinfo(o));
    for (const auto& v : spec.value_infos) g.message_field(13, vinfo(v));
    return g;
}

inline std::vector<std::byte> model(const proto_builder& main_graph, std::int64_t opset = 13,
                                    std::vector<proto_builder> functions = {}) {
    proto_builder opset_import;
    opset_import.string_field(1, "").varint_field(2, static_cast<std::uint64_t>(opset));
    proto_builder m;
    m.varint_field(1, 8).message_field(7, main_graph).message_field(8, opset_import);
    for (const auto& f : functions) m.message_field(25, f);
    return m.take();
}

/// A model on disk, opened, with its graph model.
class harness {
public:
    explicit harness(std::span<const std::byte> bytes) {
        const auto text = std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        path_ = folder_.write("model.onnx", text);
        auto opened = onnxstream::onnx::model_file::open(path_);
        REQUIRE(opened);
        file_ = std::make_unique<onnxstream::onnx::model_file>(std::move(opened).value());
        auto built = onnxstream::graph::graph_model::build(*file_);
        REQUIRE(built);
        model_ = std::make_unique<onnxstream::graph::graph_model>(std::move(built).value());
        reader_ = std::make_unique<onnxstream::graph::tensor_reader>(*file_, nullptr);
    }

    onnxstream::graph::graph_model& model() { return *model_; }
    const onnxstream::graph::tensor_reader& reader() const { return *reader_; }
    const std::filesystem::path& path() const { return path_; }
    const test_support::temp_folder& folder() const { return folder_; }

    /// The live node of the given name, or none.
    onnxstream::graph::node_id node_named(std::string_view name) const {
        for (const auto n : model_->nodes.ids())
            if (model_->node_live(n) && model_->node_name(n) == name) return n;
        return onnxstream::graph::none;
    }

    /// Live op types over all scopes, counted.
    std::map<std::string, int> op_counts() const {
        std::map<std::string, int> counts;
        for (const auto n : model_->nodes.ids())
            if (model_->node_live(n)) ++counts[std::string(model_->nodes[n].op_type())];
        return counts;
    }

    /// Runs `optimize` on the file with these passes and opens the result as a new harness.
    std::unique_ptr<harness> optimized(std::vector<std::string> passes) const {
        onnxstream::ops::optimize_options options;
        options.passes = std::move(passes);
        options.output = folder_.path() / "out.onnx";
        options.force = true;
        options.backend = onnxstream::io::writer_backend::portable;
        auto report = onnxstream::ops::optimize(path_, options);
        if (!report) FAIL(report.error().describe());
        const auto bytes = test_support::read_file(options.output);
        return std::make_unique<harness>(std::as_bytes(std::span(bytes.data(), bytes.size())));
    }

private:
    test_support::temp_folder folder_;
    std::filesystem::path path_;
    std::unique_ptr<onnxstream::onnx::model_file> file_;
    std::unique_ptr<onnxstream::graph::graph_model> model_;
    std::unique_ptr<onnxstream::graph::tensor_reader> reader_;
};

}  // namespace test_passes
