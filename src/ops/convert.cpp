#include <onnxstream/ops/convert.hpp>

#include "bound_operation.hpp"
#include "convert_typing.hpp"
#include "data_layout.hpp"

#include <onnxstream/graph/graph_model.hpp>
#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/float_conversion.hpp>
#include <onnxstream/onnx/message_fields.hpp>
#include <onnxstream/onnx/model_file.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/onnx/tensor_walker.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/plan/planner.hpp>

#include <algorithm>
#include <optional>
#include <span>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using onnx::number;
using onnx::tensor_field;
using onnx::tensor_storage;

std::vector<std::string> default_convert_block_ops() { return detail::default_block_ops(); }

namespace {

constexpr auto float32 = static_cast<std::int32_t>(onnx::data_type::float32);
// index_of_tensor_ of a tensor converted where it is (tree_edits::insert_converted) that
// no layout moves (smaller than the threshold): it has no tensor_bytes, whose 56 bytes
// would be most of what such a tensor costs (a model of a million tiny initializers).
constexpr std::uint32_t converted_in_place = onnx::no_index - 1;

// Where one tensor's output bytes come from: a source slice (copied, or converted from
// float32 on the way) or a buffer computed here (typed fields). Ordered to leave no
// padding: one is held for each tensor with bytes.
struct tensor_bytes {
    onnx::stored_slice input;  // the bytes read (a buffer's: its length)
    std::uint64_t offset = 0;
    onnx::site_id site = none;              // the tensor
    std::uint32_t buffer = onnx::no_index;  // index into buffers_, already in output form
    std::uint32_t shard = 0;
    std::uint32_t expected = onnx::no_index;  // index into expected_sha1_: the input's `checksum`, checked while reading
    bool convert = false;                     // converted on the way (false for a buffer converted already)
    bool retype = false;                      // a float32 tensor that becomes 16-bit
    bool integer = false;                     // int32 or int64 (shape-like ones stay embedded)
    bool external = false;                    // placed in a data file
    bool first_value = false;                 // input is the payload of the tensor's first value field
    bool whole = false;                       // copied_whole: an inline_body row (set by model_edits)

    [[nodiscard]] std::uint64_t output_length() const noexcept { return convert ? input.length / 2 : input.length; }
};

class engine : detail::bound_operation<convert_options, convert_report> {
public:
    using bound_operation::bound_operation;

    result<convert_report> run() {
        const bool half = options_.target == half_type::float16;
        conversion_ = half ? onnx::float_conversion::float32_to_float16 : onnx::float_conversion::float32_to_bfloat16;
        target_ = half ? 10 : 16;
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, half ? "fp16" : "bf16") : options_.output;
        ONNXSTREAM_ASSIGN(data_name_, choose_data_name(report_.output, options_.data_name));
        // No tensor_info table (120 bytes a tensor): each is read again when needed. The
        // tree drops the tensors' bodies too: their edits address fields by position.
        ONNXSTREAM_TRY(open_session(onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));

        // Which tensors float16 would saturate: read before the types are planned, since
        // they and the nodes that read them stay float32.
        if (half && !options_.allow_saturation) ONNXSTREAM_TRY(find_wide_tensors());
        ONNXSTREAM_ASSIGN(const auto float_values, plan_types(half));
        // The graph model, gone now, read names all over the file: its pages go, and the
        // passes below map them again only as far as they have reached.
        session_.release_model_pages();
        const auto census = count_tensors();
        if (census.converting == 0 && census.half > 0)
            return failure(error_code::unsupported,
                           "nothing to convert: the model's weights are 16-bit floats already (" + std::to_string(census.half) +
                               " tensors) and none of its float32 tensors would change",
                           "use the model as it is");
        if (float_values == 0 && census.float32 == 0)
            return failure(error_code::unsupported, "the model has no float32 tensor or value to convert",
                           "convert works on float32 models; this one is already in another precision");

        ONNXSTREAM_TRY(collect_bytes());
        warn_if_mostly_float32();
        bool external = !bound_.data.tensors.empty();
        onnx::tree_edits edits;
        if (!external) {
            edits = model_edits();
            if (session_.planned_size(edits) > plan::protobuf_limit) external = true;
        }
        if (external) {
            lay_out();
            edits = model_edits();
        }
        report_.external_layout = external;
        ONNXSTREAM_TRY(check_outputs());
        ONNXSTREAM_TRY(write_data_files());
        // The edits hold what the model needs (new bytes are in their pool): the per-tensor
        // tables go before the planner's own are made. Moved from, not `= {}`: that is
        // the initializer_list assignment, which empties a vector and keeps its memory.
        bytes_ = decltype(bytes_)();
        index_of_tensor_ = decltype(index_of_tensor_)();
        buffers_ = decltype(buffers_)();
        expected_sha1_ = decltype(expected_sha1_)();
        convert_empty_ = decltype(convert_empty_)();
        ONNXSTREAM_TRY(write_model(edits));
        report_.writer = session_.writer();
        ONNXSTREAM_TRY(session_.commit());
        edits = onnx::tree_edits();
        graph_edits_ = onnx::tree_edits();
        name_wide_tensors();
        return std::move(report_);
    }

private:
    // The graph edits and the tensors to convert (convert_typing.hpp); the graph model
    // is gone when it returns, before the edits of every tensor are made. Returns how
    // many values are float32.
    result<std::uint64_t> plan_types(bool half) {
        ONNXSTREAM_ASSIGN(auto graph, graph::graph_model::build(model_));
        if (!half && graph.opset("") != 0 && graph.opset("") < 13)
            return failure(error_code::unsupported,
                           "bfloat16 needs opset 13 or later; this model imports opset " + std::to_string(graph.opset("")),
                           "convert with {0}, or upgrade the model's opset first", {{remedy::choose_dtype, "fp16"}});
        detail::typing_options typing;
        typing.target = target_;
        typing.keep_io_types = options_.keep_io_types;
        typing.opset = graph.opset("");
        typing.block_ops = options_.block_ops ? *options_.block_ops : detail::default_block_ops();
        typing.wide_sites.reserve(wide_.size());
        for (const auto& w : wide_) typing.wide_sites.push_back(w.site);
        ONNXSTREAM_ASSIGN(auto typed, detail::plan_types(graph, typing, graph_edits_));
        blocked_op_types_ = std::move(typed.blocked_op_types);
        report_.nodes_type_checked = typed.nodes_type_checked_float32;
        convert_site_ = std::move(typed.convert_site);
        report_.casts_inserted = typed.casts_inserted;
        report_.nodes_blocked = typed.nodes_blocked;
        report_.types_changed = typed.types_changed;
        report_.cast_targets_changed = typed.cast_targets_changed;
        report_.casts_made_identity = typed.casts_made_identity;
        return typed.float_values;
    }

    struct tensor_census {
        std::uint64_t float32 = 0;
        std::uint64_t converting = 0;  // of them, those converted
        std::uint64_t half = 0;        // float16 and bfloat16 tensors
    };

    tensor_census count_tensors() const {
        tensor_census census;
        onnx::tensor_pass pass(model_);  // in file order, the pages behind released
        for (const auto t : model_.sites.ids()) {
            pass.reached(t);
            const auto type = model_.data_type(t);
            if (type == float32) {
                ++census.float32;
                if (convert_site_[t]) ++census.converting;
            } else if (type == static_cast<std::int32_t>(onnx::data_type::float16) ||
                       type == static_cast<std::int32_t>(onnx::data_type::bfloat16)) {
                ++census.half;
            }
        }
        return census;
    }

    // The float32 tensors of the graphs (not of functions: those convert whole) holding
    // values float16 cannot: wide_. Each is read once, in pieces.
    result<void> find_wide_tensors() {
        std::vector<std::byte> buffer;
        io::read_ahead_window small_reads;  // the many small tensors, in file order
        // Counts the values of a stored slice beyond float16's range.
        const auto scan = [&](const onnx::stored_slice& stored, onnx::float16_overflow& found) -> result<void> {
            const auto& source = *session_.sources()[stored.source.value];
            if (stored.length <= io::read_ahead_window::window_bytes) {
                ONNXSTREAM_ASSIGN(const auto bytes, small_reads.read(source, stored.source.value, stored.offset,
                                                                     static_cast<std::size_t>(stored.length)));
                onnx::count_float16_overflow(bytes, found);
                return {};
            }
            if (buffer.empty()) buffer.resize(io::read_chunk_size);
            return io::for_each_chunk(
                source, stored.offset, stored.length,
                [&found](std::span<const std::byte> piece) { onnx::count_float16_overflow(piece, found); },
                std::span<std::byte>(buffer));
        };
        onnx::tensor_pass pass(model_);
        for (const auto t : model_.sites.ids()) {
            // The type alone first, and an external tensor's bytes from its binding: a body is
            // read whole only for an embedded float32 tensor (a million tiny external ones
            // were a full read each).
            pass.reached(t);
            if (model_.data_type(t) != float32) continue;
            const auto& site = model_.sites[t];
            if (model_.tree.at(onnx::graph_of(model_.tree, site)).kind == onnx::message_kind::function) continue;
            onnx::float16_overflow found;
            if (const auto b = bound_.binding_of(t); b != none) {
                const auto& binding = bound_.data.tensors[b];
                if (binding.length % 4 != 0) continue;  // collect_bytes refuses it
                ONNXSTREAM_TRY(scan({onnx::bound_model::source_of_file(binding.file), binding.offset, binding.length}, found));
            } else {
                const auto handle = model_.tensor(t);
                const auto& tensor = *handle;
                if (const auto stored = bound_.stored_bytes(t, handle)) {
                    if (stored->length % 4 != 0) continue;  // collect_bytes refuses it
                    ONNXSTREAM_TRY(scan(*stored, found));
                } else if (tensor.storage == tensor_storage::typed && tensor.expected_bytes) {
                    const auto raw = onnx::typed_to_raw(handle.tree(), tensor);
                    if (!raw) continue;  // collect_bytes reports it
                    onnx::count_float16_overflow(*raw, found);
                }
            }
            if (found.values > 0) wide_.push_back({t, found.largest, found.values});
        }
        return {};
    }

    // report_.kept_wide from wide_, named last: when every table of the write is gone.
    // A model of random weights has a million such tensors, and a name is a heap block.
    void name_wide_tensors() {
        report_.kept_wide.reserve(wide_.size());
        onnx::tensor_pass pass(model_);  // the names' pages released behind
        for (const auto& w : wide_) {
            pass.reached(w.site);
            report_.kept_wide.push_back({std::string(onnx::value_name(model_.tree, model_.sites[w.site])), w.values, w.largest});
        }
        wide_ = decltype(wide_)();
    }

    // A conversion that leaves most of the float32 weights as they were did little of
    // what was asked: say so, and which operators kept them.
    void warn_if_mostly_float32() {
        const auto kept = report_.bytes_kept_float32;
        if (kept == 0 || kept <= report_.bytes_before) return;
        std::string readers;
        for (std::size_t i = 0; i < blocked_op_types_.size() && i < 4; ++i)
            readers += (i == 0 ? "" : ", ") + blocked_op_types_[i].first + " (" + std::to_string(blocked_op_types_[i].second) +
                       ")";
        const bool half = options_.target == half_type::float16;
        error w{error_code::unsupported, "most float32 weights stay float32 (" + std::to_string(kept) + " of " +
                                             std::to_string(kept + report_.bytes_before) +
                                             " bytes): the nodes that read them compute in float32" +
                                             (readers.empty() ? std::string() : ": " + readers)};
        if (!half) {
            w.hint = "these operators have no bfloat16 form at the model's opset; {0} converts more of them";
            w.remedies = {{remedy::choose_dtype, "fp16"}};
        } else {
            w.hint = "the block list and tensors float16 would saturate keep them; the report names the tensors";
        }
        report_.warnings.push_back(std::move(w));
    }

    result<void> collect_bytes() {
        bytes_.reserve(model_.sites.size());
        index_of_tensor_.assign(model_.sites.size(), onnx::no_index);
        onnx::tensor_pass pass(model_);
        for (const auto t : model_.sites.ids()) {
            if (const auto known = known_external(t)) {
                ONNXSTREAM_TRY(collect(t, model_.data_type(t), known, nullptr));
                continue;
            }
            const auto handle = pass.read(t);
            ONNXSTREAM_TRY(collect(t, handle->data_type, bound_.stored_bytes(t, handle), &handle));
        }
        report_.tensors_converted += convert_empty_.size();
        return {};
    }

    // The slice of an external tensor whose binding answers all collect asks of it (usable,
    // a length its dims agree with, no checksum) and whose type open recorded; else empty,
    // and its body is read (a million tiny external tensors read each once more). A length
    // that is no whole number of 4-byte values is left to the read too, whose error names
    // the tensor (a float32 one whose length fits its dims never has one).
    [[nodiscard]] std::optional<onnx::stored_slice> known_external(onnx::site_id t) const {
        if (model_.sites[t].data_type == onnx::tensor_site::unrecorded_type) return std::nullopt;
        const auto b = bound_.binding_of(t);
        if (b == none) return std::nullopt;
        const auto& binding = bound_.data.tensors[b];
        if (!binding.usable || !binding.length_fits || binding.has_checksum || binding.length % 4 != 0) return std::nullopt;
        return onnx::stored_slice{onnx::bound_model::source_of_file(binding.file), binding.offset, binding.length};
    }

    // Tensor t's row: `stored` is where its bytes are, if anywhere; `handle` its read, or
    // null for a known_external one.
    result<void> collect(onnx::site_id t, std::int32_t data_type, std::optional<onnx::stored_slice> stored,
                         const onnx::tensor_handle* handle) {
        const bool convert = convert_site_[t] && data_type == float32;
        const bool kept = data_type == float32 && !convert;
        if (kept) ++report_.tensors_kept_float32;
        tensor_bytes b;
        b.site = t;
        b.convert = convert;
        b.retype = convert;
        const auto type = static_cast<onnx::data_type>(data_type);
        b.integer = type == onnx::data_type::int64 || type == onnx::data_type::int32;
        if (stored) {
            b.input = *stored;
            if (kept) report_.bytes_kept_float32 += stored->length;
            if (handle != nullptr)
                if (const auto expected = onnx::expected_sha1(**handle, report_.warnings)) {
                    b.expected = static_cast<std::uint32_t>(expected_sha1_.size());
                    expected_sha1_.push_back(*expected);
                }
        } else if ((*handle)->storage == tensor_storage::typed && (*handle)->expected_bytes) {
            ONNXSTREAM_TRY(typed_bytes(*handle, b));
            if (kept) report_.bytes_kept_float32 += b.input.length;
        } else {
            if (convert) convert_empty_.push_back(t);  // no values: only the type changes
            return {};
        }
        // known_external leaves a tensor whose length is not a multiple of 4 to the read.
        if (b.convert && b.input.length % 4 != 0) {
            const auto& tensor = **handle;
            error e{error_code::size_mismatch,
                    "tensor '" + std::string(tensor.name) + "' has " + std::to_string(b.input.length) +
                        " bytes, not a whole number of float32 values",
                    "the model is damaged; repair or re-export it"};
            e.field_path = model_.tree.path(tensor.message);
            return failure(std::move(e));
        }
        // A known_external tensor's length fits (external_tensor::length_fits).
        if (handle != nullptr) {
            const auto& tensor = **handle;
            if (tensor.expected_bytes && *tensor.expected_bytes != b.input.length && b.buffer == onnx::no_index) {
                error e{error_code::size_mismatch,
                        "tensor '" + std::string(tensor.name) + "' has " + std::to_string(b.input.length) +
                            " bytes but its dims and type need " + std::to_string(*tensor.expected_bytes),
                        "the model is damaged; {0} converts the bytes anyway"};
                e.remedies = {{remedy::accept_size_mismatch, {}}};
                e.field_path = model_.tree.path(tensor.message);
                if (!options_.allow_size_mismatch) return failure(std::move(e));
                report_.warnings.push_back(std::move(e));
            }
        }
        if (b.convert) {
            ++report_.tensors_converted;
            report_.bytes_before += b.input.length;
            report_.bytes_after += b.output_length();
        }
        // A known_external tensor's bytes are in a data file: never its first value field.
        b.first_value = handle != nullptr && is_first_value(*handle, b);
        if (in_place(b) && b.output_length() < options_.threshold) {
            index_of_tensor_[t] = converted_in_place;
            return {};
        }
        // Tensors whose stored form changes; others move only if lay_out says so.
        if (convert || handle == nullptr || (*handle)->storage == tensor_storage::external)
            index_of_tensor_[t] = static_cast<std::uint32_t>(bytes_.size());
        bytes_.push_back(b);
        return {};
    }

    // Whether b's input is the payload of the first value field of its tensor (raw_data or
    // a packed float_data): the field the edits' insertion replaces (drop_value_fields).
    static bool is_first_value(const onnx::tensor_handle& handle, const tensor_bytes& b) {
        if (b.buffer != onnx::no_index || b.input.source != onnx::bound_model::model_source) return false;
        const auto& tensor = *handle;
        const auto field = tensor.storage == tensor_storage::raw                                     ? tensor.raw_field
                           : tensor.storage == tensor_storage::typed && !tensor.typed_fields.empty() ? tensor.typed_fields[0]
                                                                                                     : onnx::no_index;
        if (field == onnx::no_index) return false;
        const auto& tree = handle.tree();
        const auto owner = tree.owner(field);
        const auto fields = tree.fields(owner);
        const auto first = std::find_if(fields.begin(), fields.end(),
                                        [](const onnx::field_entry& f) { return onnx::holds_tensor_value(f.number()); });
        return first != fields.end() && first->payload_offset() == b.input.offset && first->payload_length() == b.input.length;
    }

    // A tensor whose new raw_data is its first value field converted as the plan is
    // written (tree_edits::insert_converted): the edits hold 16 bytes for it. One with a
    // checksum is a convert operation of the writer, which checks it.
    static bool in_place(const tensor_bytes& b) {
        return b.convert && b.first_value && !b.external && b.expected == onnx::no_index;
    }

    // An external tensor whose bytes go into the model as they are (kept float32, below the
    // threshold) and whose binding knows its value fields, with no checksum to check: an
    // inline_body row, as merge makes (8 bytes, where an insertion of a slice takes 76).
    [[nodiscard]] bool copied_whole(const tensor_bytes& b) const {
        if (b.convert || b.retype || b.external || b.buffer != onnx::no_index || b.expected != onnx::no_index) return false;
        const auto id = bound_.binding_of(b.site);
        if (id == none) return false;
        const auto& binding = bound_.data.tensors[id];
        return binding.usable && onnx::inlined_by_row(binding) &&
               onnx::bound_model::source_of_file(binding.file) == b.input.source && binding.offset == b.input.offset &&
               binding.length == b.input.length;
    }

    // Typed values: a single packed float_data is float32 little-endian already, so it is
    // converted straight from the model file; anything else is decoded to raw first.
    result<void> typed_bytes(const onnx::tensor_handle& handle, tensor_bytes& b) {
        const auto& tensor = *handle;
        if (b.convert && tensor.typed_fields.size() == 1) {
            const auto& f = handle.tree().field(tensor.typed_fields[0]);
            if (f.number() == number(tensor_field::float_data) && f.type() == proto::wire_type::length_delimited &&
                f.payload_length() == *tensor.expected_bytes) {
                b.input.offset = f.payload_offset();
                b.input.length = f.payload_length();
                return {};
            }
        }
        ONNXSTREAM_ASSIGN(auto raw, onnx::typed_to_raw(handle.tree(), tensor));
        b.input.length = raw.size();
        if (b.convert && raw.size() % 4 == 0) {
            std::vector<std::byte> out(raw.size() / 2);
            report_.saturated += onnx::convert_float32_bytes(conversion_, raw, out);
            raw = std::move(out);
            b.convert = false;  // already converted (counted here, not by the caller)
            b.input.length = raw.size();
            ++report_.tensors_converted;
            report_.bytes_before += raw.size() * 2;
            report_.bytes_after += raw.size();
        }
        b.buffer = static_cast<std::uint32_t>(buffers_.size());
        buffers_.push_back(std::move(raw));
        return {};
    }

    // External layout: tensors at least `threshold` bytes (not shape-like integers) go to
    // fresh data files, as repack lays them out.
    void lay_out() {
        const auto shape_like = onnx::shape_like_values(model_.tree, &model_.file.mapping());
        // An --align given applies to every tensor; by default only large ones are aligned.
        data_layout layout({options_.alignment.value_or(default_alignment), options_.alignment ? 0 : aligned_tensor_minimum,
                            options_.shard_size});
        for (auto& b : bytes_) {
            if (b.output_length() < options_.threshold ||
                (b.integer && shape_like.contains(onnx::value_name(model_.tree, model_.sites[b.site]))))
                continue;
            // An embedded tensor that is not converted moves too, as in repack.
            index_of_tensor_[b.site] = static_cast<std::uint32_t>(&b - bytes_.data());
            b.external = true;
            const auto place = layout.add(b.output_length());
            b.shard = place.shard;
            b.offset = place.offset;
        }
        shard_count_ = layout.shard_count();
    }

    std::string data_file_name(std::uint32_t shard) const {
        return ops::data_file_name(data_name_, options_.shard_size, shard, shard_count_);
    }

    // The graph edits plus, for each tensor that changes, its type and where its bytes go.
    onnx::tree_edits model_edits() {
        onnx::tree_edits edits = graph_edits_;
        std::size_t changing = 0;
        std::size_t with_field = 0;    // of them, those whose insertion holds a new_field
        std::size_t rows = 0;          // of them, those copied whole: an inline_body row each
        std::uint64_t pool_bytes = 0;  // the new bytes the edits hold
        for (const auto i : index_of_tensor_) {
            if (i == onnx::no_index) continue;
            if (i == converted_in_place) {  // no tensor_bytes: an insert_converted
                ++changing;
                continue;
            }
            auto& b = bytes_[i];
            b.whole = copied_whole(b);
            if (b.whole) {
                ++rows;
                continue;
            }
            ++changing;
            if (in_place(b) || b.external) continue;
            ++with_field;
            if (b.buffer != onnx::no_index) pool_bytes += buffers_[b.buffer].size();
        }
        // A retyped tensor gets a new data_type (one shared field) and new bytes (an
        // external one more fields).
        edits.reserve(2 * (changing + convert_empty_.size()), with_field + 1, 0, 2 * (changing + convert_empty_.size()),
                      static_cast<std::size_t>(pool_bytes));
        edits.reserve_inlined_bodies(rows);
        // A row's record is the tensor's binding: the bound model outlives the edits.
        edits.set_inlined_values(onnx::inlined_bindings(bound_));
        const auto data_type = edits.add_shared(
            edits.varint(number(tensor_field::data_type), static_cast<std::uint64_t>(target_)));
        // Bodies are read in file order (convert_empty_ and the sites are in site order), by
        // a pass that releases the pages behind it, as the session does behind the planner.
        onnx::tensor_pass pass(model_);
        // Each body that changes is read once, for all of its edits. One that no longer
        // tokenizes (the file changed under a released page) is read as no fields: it keeps
        // its type and its fields, and the writer's check that the sources are unchanged
        // refuses the output.
        auto read_body = [&](onnx::site_id t) {
            pass.reached(t);
            return onnx::message_fields::read(model_.tree, model_.sites[t].message);
        };
        auto fields_of = [](const result<onnx::message_fields>& read) {
            return read ? read->fields() : std::span<const onnx::field_entry>{};
        };
        auto retype = [&](std::uint32_t message, std::span<const onnx::field_entry> fields) {
            for (std::uint32_t i = 0; i < fields.size(); ++i) {
                if (fields[i].number() != number(tensor_field::data_type)) continue;
                edits.drop(model_.tree, message, i);
                edits.insert_shared(message, i, data_type);
            }
        };
        for (const auto t : convert_empty_) retype(model_.sites[t].message, fields_of(read_body(t)));
        const auto raw = number(tensor_field::raw_data);
        for (const auto t : index_of_tensor_.ids()) {
            if (index_of_tensor_[t] == onnx::no_index) continue;
            const auto message = model_.sites[t].message;
            if (index_of_tensor_[t] == converted_in_place) {
                const auto read = read_body(t);
                retype(message, fields_of(read));
                edits.insert_converted(message, onnx::drop_value_fields(model_.tree, message, fields_of(read), edits), raw,
                                       conversion_);
                continue;
            }
            const auto& b = bytes_[index_of_tensor_[t]];
            if (b.whole) {
                // Its value fields as open's read found them: one 8-byte row, the body not
                // read again (a model of random weights keeps most of a million float32).
                pass.reached(t);
                edits.inline_body(model_.tree, message, bound_.binding_of(t).value);
                continue;
            }
            const auto read = read_body(t);
            const auto fields = fields_of(read);
            if (b.retype) retype(message, fields);
            if (b.external) {
                onnx::store_external(model_.tree, message, fields, {data_file_name(b.shard), b.offset, b.output_length(), {}},
                                     edits);
                continue;
            }
            const auto position = onnx::drop_value_fields(model_.tree, message, fields, edits);
            if (in_place(b)) {
                edits.insert_converted(message, position, raw, conversion_);
                continue;
            }
            const auto check = b.expected != onnx::no_index ? edits.add_check({.tensor = std::string(model_.tensor(t)->name),
                                                                               .expected_sha1 = expected_sha1_[b.expected]})
                                                            : io::no_check;
            if (b.buffer != onnx::no_index) edits.insert(message, position, edits.bytes(raw, buffers_[b.buffer]));
            else if (b.convert)
                edits.insert(
                    message, position,
                    edits.converted_slice(raw, b.input.source.value, b.input.offset, b.output_length(), conversion_, check));
            else edits.insert(message, position, edits.slice(raw, b.input.source.value, b.input.offset, b.input.length, check));
        }
        return edits;
    }

    result<void> check_outputs() {
        ONNXSTREAM_TRY(session_.claim_output(report_.output));
        for (std::uint32_t s = 0; s < shard_count_; ++s)
            ONNXSTREAM_TRY(
                session_.claim_output(report_.output.parent_path() / data_file_name(s), {.model_output = report_.output}));
        return {};
    }

    result<void> write_data_files() {
        for (std::uint32_t s = 0; s < shard_count_; ++s) {
            plan::write_plan plan;
            std::uint64_t tensors = 0;
            for (const auto& b : bytes_) {
                if (!b.external || b.shard != s) continue;
                ++tensors;
                if (b.offset > plan.size()) plan.skip(b.offset - plan.size());
                const auto check = b.expected != onnx::no_index
                                       ? plan.add_check({.tensor = std::string(model_.tensor(b.site)->name),
                                                         .expected_sha1 = expected_sha1_[b.expected]})
                                       : io::no_check;
                if (b.buffer != onnx::no_index) plan.emit(buffers_[b.buffer]);
                else if (b.convert) plan.convert(b.input.source.value, b.input.offset, b.output_length(), conversion_, check);
                else plan.copy(b.input.source.value, b.input.offset, b.input.length, check);
            }
            const auto path = report_.output.parent_path() / data_file_name(s);
            ONNXSTREAM_ASSIGN(auto written, session_.write(path, plan));
            report_.saturated += written.saturated;
            report_.data_files.push_back({path, plan.size(), tensors});
        }
        return {};
    }

    result<void> write_model(const onnx::tree_edits& edits) {
        ONNXSTREAM_ASSIGN(auto planned, session_.plan_model(edits));
        report_.output_size = planned.size();
        ONNXSTREAM_ASSIGN(auto written,
                          session_.write(report_.output, planned, edits, "convert " + report_.output.filename().string()));
        report_.saturated += written.saturated + planned.saturated();
        return {};
    }

    onnx::float_conversion conversion_ = onnx::float_conversion::float32_to_float16;
    std::int32_t target_ = 10;
    std::string data_name_;
    onnx::tree_edits graph_edits_;
    indexed_vector<onnx::site_id, bool> convert_site_;
    std::vector<tensor_bytes> bytes_;
    std::vector<io::sha1_digest> expected_sha1_;
    // By site: the tensors whose bytes may change, as an index into bytes_ (or no_index).
    indexed_vector<onnx::site_id, std::uint32_t> index_of_tensor_;
    std::vector<std::vector<std::byte>> buffers_;
    std::vector<onnx::site_id> convert_empty_;
    std::uint32_t shard_count_ = 0;
    std::vector<std::pair<std::string, std::uint64_t>> blocked_op_types_;
    // The tensors float16 would saturate, kept float32, in file order: report_.kept_wide
    // when the write is done (16 bytes each here, where a named one takes ~100).
    struct wide_site {
        onnx::site_id site = none;
        float largest = 0;
        std::uint64_t values = 0;
    };
    std::vector<wide_site> wide_;
};

}  // namespace

result<convert_report> convert(const fs::path& model, const convert_options& options) { return engine(model, options).run(); }

}  // namespace onnxstream::ops
