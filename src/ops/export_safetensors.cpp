#include <onnxstream/ops/export_safetensors.hpp>

#include "bound_operation.hpp"
#include "plan_output.hpp"

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/plan/planner.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using onnx::tensor_storage;

const char* safetensors_dtype(std::int32_t onnx_type) noexcept {
    switch (static_cast<onnx::data_type>(onnx_type)) {
        case onnx::data_type::float32: return "F32";
        case onnx::data_type::float16: return "F16";
        case onnx::data_type::bfloat16: return "BF16";
        case onnx::data_type::float64: return "F64";
        case onnx::data_type::int8: return "I8";
        case onnx::data_type::int16: return "I16";
        case onnx::data_type::int32: return "I32";
        case onnx::data_type::int64: return "I64";
        case onnx::data_type::uint8: return "U8";
        case onnx::data_type::uint16: return "U16";
        case onnx::data_type::uint32: return "U32";
        case onnx::data_type::uint64: return "U64";
        case onnx::data_type::boolean: return "BOOL";
        case onnx::data_type::float8e4m3fn: return "F8_E4M3";
        case onnx::data_type::float8e5m2: return "F8_E5M2";
        default: return nullptr;
    }
}

namespace {

// A name as it may be shown to people: control characters escaped (names are untrusted).
std::string printable(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7F) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out;
}

bool valid_utf8(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t extra = 0;
        std::uint32_t code = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if ((c & 0xE0U) == 0xC0U) extra = 1, code = c & 0x1FU;
        else if ((c & 0xF0U) == 0xE0U) extra = 2, code = c & 0x0FU;
        else if ((c & 0xF8U) == 0xF0U) extra = 3, code = c & 0x07U;
        else return false;
        if (i + extra >= text.size()) return false;
        for (std::size_t k = 1; k <= extra; ++k) {
            const auto d = static_cast<unsigned char>(text[i + k]);
            if ((d & 0xC0U) != 0x80U) return false;
            code = (code << 6) | (d & 0x3FU);
        }
        const std::uint32_t minimum = extra == 1 ? 0x80U : extra == 2 ? 0x800U : 0x10000U;
        if (code < minimum || code > 0x10FFFFU || (code >= 0xD800U && code <= 0xDFFFU)) return false;
        i += extra + 1;
    }
    return true;
}

void json_string(std::string& out, std::string_view text) {
    out += '"';
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
            out += escaped;
        } else {
            out += c;
        }
    }
    out += '"';
}

struct entry {
    onnx::site_id site = none;              // the tensor
    onnx::stored_slice input;               // the bytes copied (a buffer's: its length)
    std::uint32_t buffer = onnx::no_index;  // typed values decoded to raw
    std::uint32_t shard = 0;
    std::uint64_t begin = 0;                       // data_offsets in its shard
    std::optional<io::sha1_digest> expected_sha1;  // the input's `checksum`, checked while copying
};

struct shard_layout {
    std::string header;  // length prefix not included; padded
    std::uint64_t data_bytes = 0;
    std::uint64_t tensors = 0;
};

class exporter : detail::bound_operation<safetensors_options, safetensors_report> {
public:
    using bound_operation::bound_operation;

    result<safetensors_report> run() {
        report_.input = model_path_;
        const auto folder = model_path_.parent_path();
        output_ = options_.output.empty() ? folder / (model_path_.stem().string() + ".safetensors") : options_.output;
        ONNXSTREAM_ASSIGN(bound_, onnx::bound_model::open(model_path_, options_.data));
        ONNXSTREAM_TRY(bound_.usable(options_.allow_size_mismatch));
        report_.warnings = bound_.warnings();
        inputs_ = bound_.inputs();
        sources_ = bound_.sources();
        ONNXSTREAM_TRY(collect());
        lay_out();
        ONNXSTREAM_TRY(check_outputs());
        ONNXSTREAM_TRY(write_shards());
        if (sharded()) ONNXSTREAM_TRY(write_index());
        if (options_.link) ONNXSTREAM_TRY(write_linked());
        ONNXSTREAM_TRY(commit_all());
        return std::move(report_);
    }

private:
    bool sharded() const { return options_.shard_size > 0; }

    result<void> collect() {
        std::set<std::string_view> names;
        for (const auto t : model_.tensors.ids()) {
            if (model_.sites[t].role != onnx::tensor_role::initializer) continue;
            const auto& tensor = model_.tensors[t];
            const auto where = model_.tree.path(tensor.message);
            const std::string shown = printable(tensor.name);
            if (tensor.name.empty() || tensor.name == "__metadata__" || !valid_utf8(tensor.name) ||
                shown.size() != tensor.name.size())
                return failure(error_code::unsupported,
                               "initializer '" + shown + "' (" + where + ") has a name safetensors cannot hold",
                               "safetensors names must be non-empty UTF-8 without control characters and not "
                               "'__metadata__'; rename the initializer in the model first");
            if (!names.insert(tensor.name).second)
                return failure(error_code::unsupported, "two initializers are named '" + shown + "' (one at " + where + ")",
                               "safetensors maps each name to one tensor; rename one of them (subgraphs may not "
                               "reuse a name of the main graph here)");
            const char* dtype = safetensors_dtype(tensor.data_type);
            if (dtype == nullptr || !tensor.expected_bytes)
                return failure(error_code::unsupported,
                               "initializer '" + shown + "' is of type " + onnx::data_type_name(tensor.data_type) +
                                   ", which safetensors has no dtype for",
                               "safetensors holds fixed-size little-endian numbers only; export a model without such "
                               "tensors, or keep this one in ONNX");
            entry e;
            e.site = t;
            if (const auto stored = bound_.stored_bytes(t)) {
                e.input = *stored;
                e.expected_sha1 = onnx::expected_sha1(tensor, report_.warnings);
            } else if (tensor.storage == tensor_storage::typed) {
                ONNXSTREAM_ASSIGN(auto raw, onnx::typed_to_raw(model_.tree, tensor));
                e.input.length = raw.size();
                e.buffer = static_cast<std::uint32_t>(buffers_.size());
                buffers_.push_back(std::move(raw));
            } else {
                e.input.length = 0;  // no values: a zero-element tensor
            }
            if (e.input.length != *tensor.expected_bytes)
                return failure(error_code::size_mismatch,
                               "initializer '" + shown + "' has " + std::to_string(e.input.length) +
                                   " bytes but its dims and type need " + std::to_string(*tensor.expected_bytes),
                               "safetensors stores exactly dims x element size; the model is damaged");
            entries_.push_back(e);
        }
        if (entries_.empty())
            return failure(error_code::unsupported, "the model has no initializers to export",
                           "safetensors holds a model's weights; this model keeps none as initializers");
        return {};
    }

    void lay_out() {
        std::uint32_t shard = 0;
        std::uint64_t in_shard = 0;
        std::uint64_t bytes = 0;
        for (auto& e : entries_) {
            if (sharded() && bytes > 0 && bytes + e.input.length > options_.shard_size) {
                ++shard;
                bytes = 0;
                in_shard = 0;
            }
            e.shard = shard;
            e.begin = bytes;
            bytes += e.input.length;
            ++in_shard;
            report_.bytes += e.input.length;
        }
        report_.tensors = entries_.size();
        shards_.resize(shard + 1U);
        for (std::uint32_t s = 0; s < shards_.size(); ++s) {
            std::string header = "{";
            for (const auto& e : entries_) {
                if (e.shard != s) continue;
                const auto& tensor = model_.tensors[e.site];
                if (header.size() > 1) header += ',';
                json_string(header, tensor.name);
                header += ":{\"dtype\":\"";
                header += safetensors_dtype(tensor.data_type);
                header += "\",\"shape\":[";
                bool first_dim = true;
                for (const auto d : tensor.dims) {
                    if (!first_dim) header += ',';
                    first_dim = false;
                    header += std::to_string(d);
                }
                header += "],\"data_offsets\":[" + std::to_string(e.begin) + "," + std::to_string(e.begin + e.input.length) +
                          "]}";
                shards_[s].data_bytes = e.begin + e.input.length;
                ++shards_[s].tensors;
            }
            if (header.size() > 1) header += ',';
            header += "\"__metadata__\":{\"producer\":\"onnxstream\",\"source\":";
            json_string(header, model_path_.filename().string());
            header += "}}";
            // The data starts on an 8-byte boundary: 8 + header length is a multiple of 8.
            while (header.size() % 8 != 0) header += ' ';
            shards_[s].header = std::move(header);
        }
    }

    fs::path shard_path(std::uint32_t shard) const {
        if (!sharded()) return output_;
        auto stem = output_.filename().string();
        if (stem.ends_with(".safetensors")) stem.resize(stem.size() - 12);
        char suffix[64];
        std::snprintf(suffix, sizeof suffix, "-%05u-of-%05zu.safetensors", shard + 1U, shards_.size());
        return output_.parent_path() / (stem + suffix);
    }

    fs::path index_path() const {
        auto name = output_.filename().string();
        if (!name.ends_with(".safetensors")) name += ".safetensors";
        return output_.parent_path() / (name + ".index.json");
    }

    fs::path linked_path() const { return output_.parent_path() / (model_path_.stem().string() + ".linked.onnx"); }

    result<void> check_outputs() {
        std::vector<fs::path> all;
        for (std::uint32_t s = 0; s < shards_.size(); ++s) all.push_back(shard_path(s));
        if (sharded()) all.push_back(index_path());
        if (options_.link) all.push_back(linked_path());
        for (const auto& path : all) ONNXSTREAM_TRY(check_output(path, inputs_, options_.force));
        return {};
    }

    result<void> write_shards() {
        for (std::uint32_t s = 0; s < shards_.size(); ++s) {
            plan::write_plan plan;
            const auto& header = shards_[s].header;
            std::array<std::byte, 8> length{};
            for (std::size_t i = 0; i < 8; ++i) length[i] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xFFU);
            plan.emit(length);
            plan.emit(std::as_bytes(std::span(header.data(), header.size())));
            for (const auto& e : entries_) {
                if (e.shard != s) continue;
                if (e.buffer != onnx::no_index) plan.emit(buffers_[e.buffer]);
                else
                    plan.copy(e.input.source.value, e.input.offset, e.input.length,
                              e.expected_sha1 ? plan.add_check({.tensor = std::string(model_.tensors[e.site].name),
                                                                .expected_sha1 = e.expected_sha1})
                                              : io::no_check);
            }
            const auto path = shard_path(s);
            ONNXSTREAM_ASSIGN(auto output,
                              io::output_file::create(path, plan.size(), {.overwrite = options_.force, .preallocate = true}));
            ONNXSTREAM_ASSIGN(auto written, write_planned(output, plan, sources_, options_, "write " + path.filename().string(),
                                                          report_.warnings));
            report_.writer = written.backend;
            report_.files.push_back({path, plan.size(), shards_[s].tensors});
            outputs_.push_back(std::move(output));
        }
        return {};
    }

    result<void> write_index() {
        std::string text = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(report_.bytes) +
                           "\n  },\n  \"weight_map\": {";
        bool first = true;
        for (const auto& e : entries_) {
            text += first ? "\n    " : ",\n    ";
            first = false;
            json_string(text, model_.tensors[e.site].name);
            text += ": ";
            json_string(text, shard_path(e.shard).filename().string());
        }
        text += "\n  }\n}\n";
        report_.index = index_path();
        ONNXSTREAM_ASSIGN(auto output, write_text_file(index_path(), text, sources_, options_, report_.warnings));
        outputs_.push_back(std::move(output));
        return {};
    }

    // The model with every exported initializer pointing into the safetensors file(s);
    // other external tensors (Constant values...) come back inline, so the linked model
    // needs nothing but the safetensors files.
    result<void> write_linked() {
        onnx::tree_edits edits;
        indexed_vector<onnx::site_id, bool> exported(model_.tensors.size(), false);
        for (const auto& e : entries_) {
            exported[e.site] = true;
            const auto offset = 8 + shards_[e.shard].header.size() + e.begin;
            onnx::store_external(model_.tree, model_.tensors[e.site].message,
                                 {shard_path(e.shard).filename().string(), offset, e.input.length, {}}, edits);
        }
        std::vector<onnx::external_tensor> rest;
        for (const auto& b : bound_.data.tensors)
            if (!exported[b.site]) rest.push_back(b);
        onnx::inline_external(bound_, rest, edits, report_.warnings);
        ONNXSTREAM_ASSIGN(auto stream, plan::stream_rewrite(model_.tree, edits, {0, plan::protobuf_limit}));
        const auto path = linked_path();
        ONNXSTREAM_ASSIGN(auto output,
                          io::output_file::create(path, stream.size(), {.overwrite = options_.force, .preallocate = true}));
        ONNXSTREAM_TRY(write_planned(output, windows_of(stream, edits), sources_, options_, "write " + path.filename().string(),
                                     report_.warnings));
        report_.linked = path;
        report_.linked_size = stream.size();
        outputs_.push_back(std::move(output));
        return {};
    }

    // Everything on disk before the first rename, and the renames one transaction
    // (io::commit_outputs); the linked model (written last) is renamed last, so it never
    // points at safetensors files that are not there.
    result<void> commit_all() {
        std::vector<io::output_file*> outputs;
        for (auto& file : outputs_) outputs.push_back(&file);
        return io::commit_outputs(outputs);
    }

    fs::path output_;
    std::vector<io::file_identity> inputs_;
    std::vector<const io::source_file*> sources_;
    std::vector<entry> entries_;
    std::vector<std::vector<std::byte>> buffers_;
    std::vector<shard_layout> shards_;
    std::vector<io::output_file> outputs_;
};

}  // namespace

result<safetensors_report> export_safetensors(const fs::path& model, const safetensors_options& options) {
    return exporter(model, options).run();
}

}  // namespace onnxstream::ops
