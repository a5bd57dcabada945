#include <onnxstream/ops/export_safetensors.hpp>

#include "bound_operation.hpp"

#include <onnxstream/graph/name_table.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/plan/planner.hpp>
#include <onnxstream/report/json_writer.hpp>
#include <onnxstream/report/safe_text.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <string_view>

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

// `text` as a JSON string, exactly: collect() and run() refused every name that is not
// UTF-8 before any header is laid out, so there is nothing to replace.
void json_string(std::string& out, std::string_view text) {
    const auto quoted = report::exact_json_quote(text);
    out += quoted ? *quoted : report::json_quote(text);
}

// Where one initializer's bytes come from: a source slice, or typed values decoded to raw.
struct item {
    onnx::stored_slice input;               // the bytes copied (a buffer's: its length)
    std::uint32_t buffer = onnx::no_index;  // into exporter::buffers_
    std::uint32_t check = io::no_check;     // into exporter::checks_: the input's `checksum`
};

// One .safetensors file: the initializers among a run of tensor sites. Nothing is held per
// tensor: each is read again (model_file::tensor) when its header entry and its bytes are
// written, so a model of a million tensors holds no table of them here.
struct shard_layout {
    std::uint32_t first = 0, end = 0;              // sites [first, end)
    std::uint32_t first_buffer = 0;                // the first of buffers_ its typed tensors use
    std::uint32_t first_check = 0, end_check = 0;  // checks_[first_check, end_check)
    std::uint64_t header_size = 0;                 // length prefix not included; padded
    std::uint64_t data_bytes = 0;
    std::uint64_t tensors = 0;
};

bool has_control(std::string_view text) {
    return std::any_of(text.begin(), text.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7F;
    });
}

class exporter : detail::bound_operation<safetensors_options, safetensors_report> {
public:
    using bound_operation::bound_operation;

    result<safetensors_report> run() {
        report_.input = model_path_;
        const auto folder = model_path_.parent_path();
        output_ = options_.output.empty() ? folder / (model_path_.stem().string() + ".safetensors") : options_.output;
        ONNXSTREAM_TRY(check_names_in_json());
        // Tensors are read when needed, not kept; --link edits their bodies, so its tree keeps them.
        const auto reading = options_.link ? onnx::tensor_reading::on_demand_full_tree : onnx::tensor_reading::on_demand;
        ONNXSTREAM_TRY(open_session({}, reading));
        ONNXSTREAM_TRY(collect());
        ONNXSTREAM_TRY(check_outputs());
        ONNXSTREAM_TRY(write_shards());
        if (sharded()) ONNXSTREAM_TRY(write_index());
        if (options_.link) ONNXSTREAM_TRY(write_linked());
        // The linked model (written last) is renamed last, so it never points at
        // safetensors files that are not there.
        ONNXSTREAM_TRY(session_.commit());
        return std::move(report_);
    }

private:
    bool sharded() const { return options_.shard_size > 0; }

    // The header names the model's file and the index names the shards: JSON holds only
    // Unicode text, and a name with a byte replaced would point at no file (loaders
    // reject a header that is not UTF-8 outright), so such a name is refused up front.
    result<void> check_names_in_json() const {
        const auto source = model_path_.filename().string();
        if (!report::valid_utf8(source))
            return failure(error_code::unsupported,
                           "the model's file name " + report::terminal_safe(source) +
                               " is not valid UTF-8, and the safetensors header names it (JSON holds only UTF-8)",
                           "copy or rename the model to a UTF-8 name first");
        const auto output = output_.filename().string();
        if (!report::valid_utf8(output))
            return failure(error_code::invalid_argument,
                           "the output name " + report::terminal_safe(output) +
                               " is not valid UTF-8, and safetensors headers and index.json are JSON (UTF-8 only)",
                           "choose a UTF-8 name with {0}", {{remedy::choose_output, {}}});
        return {};
    }

    // The weights: the initializers; in a model without any, the values of the Constant
    // nodes of its graphs (Paddle2ONNX and some torch exports hold weights there), named by
    // the Constant's output. Beside initializers, Constants are shapes and scalars, not
    // weights. A function's Constants are part of its body, named inside it: never.
    bool candidate(onnx::site_id t) const { return initializer(t) || (constant_weights_ && constant_value(t)); }
    // What collect put in the file (a Constant of strings is no weight: it is left out).
    bool exported(onnx::site_id t) const { return in_file_[t]; }
    bool initializer(onnx::site_id t) const { return model_.sites[t].role == onnx::tensor_role::initializer; }
    bool constant_value(onnx::site_id t) const {
        const auto& site = model_.sites[t];
        const auto& tree = model_.tree;
        const auto node = onnx::node_of(tree, site);
        if (site.role != onnx::tensor_role::attribute || node == onnx::no_index) return false;
        return tree.at(onnx::graph_of(tree, site)).kind != onnx::message_kind::function &&
               tree.find_text(node, onnx::number(onnx::node_field::op_type)) == "Constant" &&
               tree.find_text(node, onnx::number(onnx::node_field::domain)).empty();
    }
    // The name a weight has in the safetensors file: the initializer's, or the Constant's output.
    std::string_view weight_name(onnx::site_id t, const onnx::tensor_info& tensor) const {
        return initializer(t) ? tensor.name : onnx::value_name(model_.tree, model_.sites[t]);
    }

    // The bytes of exported tensor `t` (read as `tensor`), as collect found them; `buffer`
    // and `check` count the typed tensors and the checksums before it.
    item item_of(onnx::site_id t, const onnx::tensor_handle& tensor, std::uint32_t& buffer, std::uint32_t& check) const {
        item i;
        if (const auto stored = bound_.stored_bytes(t, tensor)) {
            i.input = *stored;
            if (const auto expected = onnx::expected_sha1(*tensor); expected && *expected) i.check = check++;
        } else if (tensor->storage == tensor_storage::typed) {
            i.buffer = buffer++;
            i.input.length = buffers_[i.buffer].size();
        }
        return i;
    }

    // Checks every initializer, decodes typed values and lays the shards out (the header
    // sizes too: the linked model's offsets need them before anything is written).
    result<void> collect() {
        constant_weights_ = std::none_of(model_.sites.begin(), model_.sites.end(), [](const onnx::tensor_site& site) {
            return site.role == onnx::tensor_role::initializer;
        });
        std::size_t initializers = 0;
        for (const auto t : model_.sites.ids())
            if (candidate(t)) ++initializers;
        // The names seen so far, for the duplicate check: views of the model's bytes, whose
        // pages go behind the pass; a probe reads one only when 46 bits of the hashes agree.
        graph::name_table names;
        names.reserve(initializers);
        onnx::tensor_pass pass(model_);
        std::string text;
        std::uint64_t header = 0;  // of the last shard, so far
        auto close = [&] {
            text.clear();
            closing_text(text, header);
            shards_.back().header_size = header + text.size();
            shards_.back().end_check = static_cast<std::uint32_t>(checks_.size());
        };
        in_file_.assign(model_.sites.size(), false);
        for (const auto t : model_.sites.ids()) {
            if (!candidate(t)) continue;
            const auto handle = pass.read(t);
            const auto& tensor = *handle;
            const char* dtype = safetensors_dtype(tensor.data_type);
            if (!initializer(t) && (dtype == nullptr || !tensor.expected_bytes)) continue;  // a string Constant is no weight
            in_file_[t] = true;
            const auto name = weight_name(t, tensor);
            const std::string what = initializer(t) ? "initializer" : "Constant";
            const auto where = [&] { return model_.tree.path(tensor.message); };
            if (name.empty() || name == "__metadata__" || !report::valid_utf8(name) || has_control(name))
                return failure(error_code::unsupported,
                               what + " '" + printable(name) + "' (" + where() + ") has a name safetensors cannot hold",
                               "safetensors names must be non-empty UTF-8 without control characters and not "
                               "'__metadata__'; rename the " +
                                   what + " in the model first");
            const auto known = names.size();
            (void)names.intern_lasting(name);
            if (names.size() == known)
                return failure(error_code::unsupported,
                               "two " + what + "s are named '" + printable(name) + "' (one at " + where() + ")",
                               "safetensors maps each name to one tensor; rename one of them (subgraphs may not "
                               "reuse a name of the main graph here)");
            if (dtype == nullptr || !tensor.expected_bytes)
                return failure(error_code::unsupported,
                               "initializer '" + printable(name) + "' is of type " + onnx::data_type_name(tensor.data_type) +
                                   ", which safetensors has no dtype for",
                               "safetensors holds fixed-size little-endian numbers only; export a model without such "
                               "tensors, or keep this one in ONNX");
            const auto stored = bound_.stored_bytes(t, handle);
            std::vector<std::byte> raw;
            if (!stored && tensor.storage == tensor_storage::typed) {
                ONNXSTREAM_ASSIGN(raw, onnx::typed_to_raw(handle.tree(), tensor));
            }
            const std::uint64_t length = stored ? stored->length : raw.size();  // no values: a zero-element tensor
            if (length != *tensor.expected_bytes)
                return failure(error_code::size_mismatch,
                               what + " '" + printable(name) + "' has " + std::to_string(length) +
                                   " bytes but its dims and type need " + std::to_string(*tensor.expected_bytes),
                               "safetensors stores exactly dims x element size; the model is damaged");
            if (shards_.empty() ||
                (sharded() && shards_.back().data_bytes > 0 && shards_.back().data_bytes + length > options_.shard_size)) {
                if (!shards_.empty()) close();
                shards_.push_back({.first = t.value,
                                   .first_buffer = static_cast<std::uint32_t>(buffers_.size()),
                                   .first_check = static_cast<std::uint32_t>(checks_.size())});
                header = 1;  // "{"
            }
            if (stored) {
                if (auto expected = onnx::expected_sha1(tensor, report_.warnings))
                    checks_.push_back({.tensor = std::string(name), .expected_sha1 = expected});
            } else if (tensor.storage == tensor_storage::typed) {
                buffers_.push_back(std::move(raw));
            }
            auto* shard = &shards_.back();
            text.clear();
            entry_text(text, name, tensor, shard->tensors == 0, shard->data_bytes, length);
            header += text.size();
            shard->data_bytes += length;
            ++shard->tensors;
            shard->end = t.value + 1;
            report_.bytes += length;
            ++report_.tensors;
        }
        if (shards_.empty())
            return failure(error_code::unsupported, "the model has no weights to export",
                           "safetensors holds a model's weights; this model keeps none as initializers or Constant nodes");
        close();
        return {};
    }

    // One entry of a header: `"name":{"dtype":...,"data_offsets":[begin,end]}`, after a
    // comma unless it is the shard's first.
    static void entry_text(std::string& out, std::string_view name, const onnx::tensor_info& tensor, bool first,
                           std::uint64_t begin, std::uint64_t length) {
        if (!first) out += ',';
        json_string(out, name);
        out += ":{\"dtype\":\"";
        out += safetensors_dtype(tensor.data_type);
        out += "\",\"shape\":[";
        bool first_dim = true;
        for (const auto d : tensor.dims) {
            if (!first_dim) out += ',';
            first_dim = false;
            out += std::to_string(d);
        }
        out += "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(begin + length) + "]}";
    }

    // The header's end, after `written` bytes of it: the metadata, then spaces so that the
    // data starts on an 8-byte boundary (8 + header length is a multiple of 8).
    void closing_text(std::string& out, std::uint64_t written) const {
        out += ",\"__metadata__\":{\"producer\":\"onnxstream\",\"source\":";
        json_string(out, model_path_.filename().string());
        out += "}}";
        while ((written + out.size()) % 8 != 0) out += ' ';
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
        for (const auto& path : all) ONNXSTREAM_TRY(session_.claim_output(path));
        return {};
    }

    static constexpr std::size_t window_operations = 4096;
    static constexpr std::size_t window_bytes = 1U << 20;

    // A walk over one shard's tensors in site order, each read again.
    struct shard_walk {
        onnx::tensor_pass pass;
        std::uint32_t next;
        std::uint32_t buffer;  // the typed tensors and checksums before `next`
        std::uint32_t check;
        std::uint64_t begin = 0;  // data_offsets of `next`
    };

    // A shard written in windows: the length prefix, the header made again entry by entry,
    // then every tensor's bytes.
    result<void> write_shard(std::uint32_t s) {
        const auto& shard = shards_[s];
        const auto checks = std::span(checks_).subspan(shard.first_check, shard.end_check - shard.first_check);
        shard_walk header{onnx::tensor_pass(model_), shard.first, shard.first_buffer, shard.first_check};
        shard_walk data{onnx::tensor_pass(model_), shard.first, shard.first_buffer, shard.first_check};
        std::string text;
        bool started = false;
        bool closed = false;
        auto emit = [](plan::write_plan& window, std::string_view bytes) {
            window.emit(std::as_bytes(std::span(bytes.data(), bytes.size())));
        };
        const windowed_plan plan{8 + shard.header_size + shard.data_bytes, checks, [&](plan::write_plan& window) {
                                     window.next_window();
                                     if (!started) {
                                         started = true;
                                         std::array<std::byte, 8> length{};
                                         for (std::size_t i = 0; i < 8; ++i)
                                             length[i] = static_cast<std::byte>((shard.header_size >> (8 * i)) & 0xFFU);
                                         window.emit(length);
                                         emit(window, "{");
                                     }
                                     for (; header.next < shard.end && window.pool().size() < window_bytes; ++header.next) {
                                         const onnx::site_id t(header.next);
                                         if (!exported(t)) continue;
                                         const auto tensor = header.pass.read(t);
                                         const auto i = item_of(t, tensor, header.buffer, header.check);
                                         text.clear();
                                         entry_text(text, weight_name(t, *tensor), *tensor, t.value == shard.first, header.begin,
                                                    i.input.length);
                                         emit(window, text);
                                         header.begin += i.input.length;
                                     }
                                     if (header.next == shard.end && !closed) {
                                         closed = true;
                                         text.clear();
                                         closing_text(text, window.size() - 8);
                                         emit(window, text);
                                     }
                                     for (; closed && data.next < shard.end && window.operations().size() < window_operations &&
                                            window.pool().size() < window_bytes;
                                          ++data.next) {
                                         const onnx::site_id t(data.next);
                                         if (!exported(t)) continue;
                                         const auto i = item_of(t, data.pass.read(t), data.buffer, data.check);
                                         if (i.buffer != onnx::no_index) window.emit(buffers_[i.buffer]);
                                         else
                                             window.copy(i.input.source.value, i.input.offset, i.input.length,
                                                         i.check != io::no_check ? i.check - shard.first_check : io::no_check);
                                     }
                                     return !window.operations().empty();
                                 }};
        const auto path = shard_path(s);
        ONNXSTREAM_TRY(session_.write(path, plan));
        report_.writer = session_.writer();
        report_.files.push_back({path, plan.size, shard.tensors});
        return {};
    }

    result<void> write_shards() {
        for (std::uint32_t s = 0; s < shards_.size(); ++s) ONNXSTREAM_TRY(write_shard(s));
        return {};
    }

    result<void> write_index() {
        std::string text = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(report_.bytes) +
                           "\n  },\n  \"weight_map\": {";
        bool first = true;
        onnx::tensor_pass pass(model_);
        for (std::uint32_t s = 0; s < shards_.size(); ++s) {
            const auto file = shard_path(s).filename().string();
            for (auto t = onnx::site_id(shards_[s].first); t.value < shards_[s].end; t = onnx::site_id(t.value + 1)) {
                if (!exported(t)) continue;
                text += first ? "\n    " : ",\n    ";
                first = false;
                const auto tensor = pass.read(t);
                json_string(text, weight_name(t, *tensor));
                text += ": ";
                json_string(text, file);
            }
        }
        text += "\n  }\n}\n";
        report_.index = index_path();
        return session_.write_text(index_path(), text);
    }

    // The model with every exported initializer pointing into the safetensors file(s);
    // other external tensors (Constant values...) come back inline, so the linked model
    // needs nothing but the safetensors files.
    result<void> write_linked() {
        onnx::tree_edits edits;
        indexed_vector<onnx::site_id, bool> linked(model_.sites.size(), false);
        // What a runtime reads while loading (shape inputs, axes, Resize scales...) fails
        // there as external data: those stay in the linked model as split keeps them (the
        // safetensors file holds them too). ONNX Runtime refused Silero VAD's linked model
        // for a Squeeze's axes inside an If.
        const auto load_time = onnx::shape_like_values(model_.tree, &model_.file.mapping());
        // Each tensor is read again for its length, and store_external reads its body: in
        // site order, through a pass that releases the pages behind it.
        onnx::tensor_pass pass(model_);
        for (std::uint32_t s = 0; s < shards_.size(); ++s) {
            const auto& shard = shards_[s];
            const auto file = shard_path(s).filename().string();
            std::uint64_t offset = 8 + shard.header_size;
            std::uint32_t buffer = shard.first_buffer;
            std::uint32_t check = shard.first_check;
            for (auto t = onnx::site_id(shard.first); t.value < shard.end; t = onnx::site_id(t.value + 1)) {
                if (!exported(t)) continue;
                const auto length = item_of(t, pass.read(t), buffer, check).input.length;
                // A Constant's value stays in its node: runtimes read external data for
                // initializers; the file holds it all the same. What a runtime reads while
                // loading stays embedded too (as split keeps it).
                if (!initializer(t)) {
                    offset += length;
                    continue;
                }
                if (load_time.contains(onnx::value_name(model_.tree, model_.sites[t]))) {
                    ++report_.kept_embedded;
                    offset += length;
                    continue;
                }
                linked[t] = true;
                onnx::store_external(model_.tree, model_.sites[t].message, {file, offset, length, {}}, edits);
                offset += length;
            }
        }
        std::vector<onnx::external_tensor> rest;
        for (const auto& b : bound_.data.tensors)
            if (!linked[b.site]) rest.push_back(b);
        onnx::inline_external(bound_, rest, edits, report_.warnings);
        ONNXSTREAM_ASSIGN(auto planned, session_.plan_model(edits));
        const auto path = linked_path();
        ONNXSTREAM_TRY(session_.write(path, planned, edits));
        report_.linked = path;
        report_.linked_size = planned.size();
        return {};
    }

    fs::path output_;
    std::vector<io::stream_check> checks_;         // the expected `checksum`s, in site order
    std::vector<std::vector<std::byte>> buffers_;  // typed values decoded to raw, in site order
    std::vector<shard_layout> shards_;
    indexed_vector<onnx::site_id, bool> in_file_;  // by site: the weights collect put in the file
    bool constant_weights_ = false;                // no initializer: the Constants' values are the weights
};

}  // namespace

result<safetensors_report> export_safetensors(const fs::path& model, const safetensors_options& options) {
    return exporter(model, options).run();
}

}  // namespace onnxstream::ops
