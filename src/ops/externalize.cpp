#include <onnxstream/ops/externalize.hpp>

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/ops/plan_output.hpp>
#include <onnxstream/plan/planner.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using onnx::number;
using onnx::tensor_field;
using onnx::tensor_storage;

std::string shard_name(const std::string& data_name, std::uint64_t index, std::uint64_t count) {
    std::string base = data_name;
    if (base.size() > 5 && base.ends_with(".data")) base.resize(base.size() - 5);
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, "-%05llu-of-%05llu.data", static_cast<unsigned long long>(index + 1),
                  static_cast<unsigned long long>(count));
    return base + suffix;
}

namespace {

// Where one moved tensor's bytes come from and where they go.
struct placement {
    std::uint32_t tensor = 0;        // index into model_file::tensors
    std::uint32_t source = 0;        // writer source index (0: the model)
    std::uint64_t source_offset = 0;
    std::uint64_t length = 0;
    std::uint32_t converted = onnx::no_index;  // index into converted buffers (typed fields)
    std::optional<io::sha1_digest> expected_sha1;
    std::uint32_t shard = 0;
    std::uint64_t offset = 0;        // in the shard
    std::uint32_t same_as = onnx::no_index;  // dedupe: the placement whose bytes these are
    std::uint32_t check = io::no_check;
};

void put_varint(std::vector<std::byte>& out, std::uint64_t value) {
    const auto encoded = proto::encode_varint(value);
    out.insert(out.end(), encoded.view().begin(), encoded.view().end());
}

void put_string_field(std::vector<std::byte>& out, std::uint32_t field, std::string_view text) {
    put_varint(out, proto::make_tag(field, proto::wire_type::length_delimited));
    put_varint(out, text.size());
    const auto bytes = std::as_bytes(std::span(text.data(), text.size()));
    out.insert(out.end(), bytes.begin(), bytes.end());
}

std::vector<std::byte> string_entry(std::string_view key, std::string_view value) {
    std::vector<std::byte> out;
    put_string_field(out, number(onnx::string_entry_field::key), key);
    put_string_field(out, number(onnx::string_entry_field::value), value);
    return out;
}

bool is_value_field(std::uint32_t n) {
    return n == number(tensor_field::raw_data) || n == number(tensor_field::float_data) ||
           n == number(tensor_field::int32_data) || n == number(tensor_field::int64_data) ||
           n == number(tensor_field::double_data) || n == number(tensor_field::uint64_data) ||
           n == number(tensor_field::external_data) || n == number(tensor_field::data_location);
}

// Streams a slice through a fixed buffer; `visit` sees each piece.
template <class Visit>
result<void> stream_slice(const io::source_file& file, std::uint64_t offset, std::uint64_t length, std::vector<std::byte>& buffer,
                          Visit&& visit) {
    std::uint64_t done = 0;
    while (done < length) {
        const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(length - done, buffer.size()));
        const auto view = std::span(buffer).first(piece);
        ONNXSTREAM_TRY(file.read_at(offset + done, view));
        visit(std::span<const std::byte>(view), done);
        done += piece;
    }
    return {};
}

class engine {
public:
    engine(const fs::path& model_path, const externalize_options& options) : model_path_(model_path), options_(options) {}

    result<externalize_report> run() {
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, options_.output_suffix) : options_.output;
        data_name_ = options_.data_name.empty() ? report_.output.filename().string() + ".data" : options_.data_name;
        if (fs::path(data_name_).has_parent_path() || data_name_ == "." || data_name_ == "..")
            return failure(error_code::invalid_argument, "--data-name must be a file name, not a path ('" + data_name_ + "')",
                           "the data file is always written beside the output");

        ONNXSTREAM_ASSIGN(model_, onnx::model_file::open(model_path_));
        onnx::data_resolver resolver(model_path_, options_.data);
        data_ = onnx::external_data::bind(model_, resolver);
        if (const auto* problem = data_.blocking_problem(options_.allow_size_mismatch)) return failure(problem->what);
        for (const auto& p : data_.problems) report_.warnings.push_back(p.what);

        inputs_.push_back(model_.file.identity());
        sources_.push_back(&model_.file);
        for (const auto& f : data_.files) {
            inputs_.push_back(f.file->identity());
            sources_.push_back(&*f.file);
        }
        ONNXSTREAM_TRY(choose_placements());
        if (options_.dedupe) ONNXSTREAM_TRY(deduplicate());
        lay_out();
        ONNXSTREAM_TRY(check_outputs());
        ONNXSTREAM_TRY(write_data_files());
        ONNXSTREAM_TRY(write_model());
        for (auto& file : data_outputs_) ONNXSTREAM_TRY(file.commit());
        ONNXSTREAM_TRY(model_output_.commit());
        return std::move(report_);
    }

private:
    result<void> choose_placements() {
        const auto shape_like = onnx::shape_like_values(model_.tree);
        std::vector<std::uint32_t> binding_of(model_.tensors.size(), onnx::no_index);
        for (std::uint32_t b = 0; b < data_.tensors.size(); ++b) binding_of[data_.tensors[b].tensor] = b;

        for (std::uint32_t t = 0; t < model_.tensors.size(); ++t) {
            const auto& tensor = model_.tensors[t];
            const bool has_bytes = tensor.storage == tensor_storage::raw || tensor.storage == tensor_storage::typed ||
                                   tensor.storage == tensor_storage::external;
            if (!has_bytes || !tensor.expected_bytes) {
                ++report_.kept_other;
                continue;
            }
            std::uint64_t length = 0;
            if (tensor.storage == tensor_storage::raw) length = model_.tree.field(tensor.raw_field).token.payload_length;
            else if (tensor.storage == tensor_storage::external) length = data_.tensors[binding_of[t]].length;
            else length = *tensor.expected_bytes;

            const auto type = static_cast<onnx::data_type>(tensor.data_type);
            const bool integer = type == onnx::data_type::int64 || type == onnx::data_type::int32;
            const auto name = onnx::value_name(model_.tree, model_.sites[t]);
            const bool is_shape = integer && shape_like.contains(name);
            if (length < options_.threshold || is_shape) {
                if (is_shape && length >= options_.threshold) ++report_.kept_shape_like;
                else ++report_.kept_small;
                if (tensor.storage == tensor_storage::external) inline_bindings_.push_back(binding_of[t]);
                continue;
            }
            if (tensor.storage == tensor_storage::raw && tensor.expected_bytes != length) {
                error e{error_code::size_mismatch,
                        "tensor '" + std::string(tensor.name) + "' has " + std::to_string(length) +
                            " bytes of raw_data but its dims and type need " + std::to_string(*tensor.expected_bytes),
                        "the model is damaged; --allow-size-mismatch moves the bytes anyway"};
                e.field_path = model_.tree.path(tensor.message);
                if (!options_.allow_size_mismatch) return failure(std::move(e));
                report_.warnings.push_back(std::move(e));
            }
            placement p;
            p.tensor = t;
            p.length = length;
            if (tensor.storage == tensor_storage::raw) {
                p.source = 0;
                p.source_offset = model_.tree.field(tensor.raw_field).token.payload_offset;
            } else if (tensor.storage == tensor_storage::external) {
                const auto& binding = data_.tensors[binding_of[t]];
                p.source = 1 + binding.file;
                p.source_offset = binding.offset;
                if (tensor.external->checksum) p.expected_sha1 = io::parse_sha1_hex(*tensor.external->checksum);
            } else {
                ONNXSTREAM_ASSIGN(auto bytes, onnx::typed_to_raw(model_.tree, tensor));
                p.converted = static_cast<std::uint32_t>(converted_.size());
                converted_.push_back(std::move(bytes));
                ++report_.converted_typed;
            }
            placements_.push_back(p);
        }
        return {};
    }

    // Groups placements with identical (type, length, xxh3), then confirms byte for byte.
    result<void> deduplicate() {
        std::vector<std::byte> buffer(1U << 20);
        std::map<std::tuple<std::int32_t, std::uint64_t, std::uint64_t>, std::vector<std::uint32_t>> groups;
        for (std::uint32_t i = 0; i < placements_.size(); ++i) {
            const auto& p = placements_[i];
            io::xxh3_hasher hasher;
            if (p.converted != onnx::no_index) hasher.update(converted_[p.converted]);
            else ONNXSTREAM_TRY(stream_slice(*sources_[p.source], p.source_offset, p.length, buffer,
                                             [&](std::span<const std::byte> piece, std::uint64_t) { hasher.update(piece); }));
            groups[{model_.tensors[p.tensor].data_type, p.length, hasher.digest()}].push_back(i);
        }
        std::vector<std::byte> other(buffer.size());
        for (auto& [key, members] : groups) {
            for (std::size_t a = 1; a < members.size(); ++a) {
                for (std::size_t b = 0; b < a; ++b) {
                    if (placements_[members[b]].same_as != onnx::no_index) continue;
                    ONNXSTREAM_ASSIGN(const bool same, equal_bytes(placements_[members[a]], placements_[members[b]], buffer, other));
                    if (!same) continue;
                    placements_[members[a]].same_as = members[b];
                    ++report_.deduplicated;
                    report_.bytes_saved += placements_[members[a]].length;
                    break;
                }
            }
        }
        return {};
    }

    result<bool> equal_bytes(const placement& a, const placement& b, std::vector<std::byte>& left, std::vector<std::byte>& right) {
        if (a.length != b.length) return false;
        std::uint64_t done = 0;
        while (done < a.length) {
            const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(a.length - done, left.size()));
            auto read = [&](const placement& p, std::vector<std::byte>& into) -> result<std::span<const std::byte>> {
                if (p.converted != onnx::no_index) return std::span<const std::byte>(converted_[p.converted]).subspan(done, piece);
                const auto view = std::span(into).first(piece);
                ONNXSTREAM_TRY(sources_[p.source]->read_at(p.source_offset + done, view));
                return std::span<const std::byte>(view);
            };
            ONNXSTREAM_ASSIGN(const auto x, read(a, left));
            ONNXSTREAM_ASSIGN(const auto y, read(b, right));
            if (std::memcmp(x.data(), y.data(), piece) != 0) return false;
            done += piece;
        }
        return true;
    }

    std::uint64_t alignment_for(std::uint64_t length) const {
        if (options_.alignment) return *options_.alignment;
        return length >= aligned_tensor_minimum ? default_alignment : 0;
    }

    void lay_out() {
        std::uint32_t shard = 0;
        std::uint64_t size = 0;
        std::uint64_t in_shard = 0;
        for (auto& p : placements_) {
            if (p.same_as != onnx::no_index) continue;
            const auto align = alignment_for(p.length);
            std::uint64_t offset = align > 1 ? (size + align - 1) / align * align : size;
            if (options_.shard_size > 0 && in_shard > 0 && offset + p.length > options_.shard_size) {
                ++shard;
                offset = 0;
                in_shard = 0;
            }
            p.shard = shard;
            p.offset = offset;
            size = offset + p.length;
            ++in_shard;
        }
        shard_count_ = placements_.empty() ? 0 : shard + 1;
        for (auto& p : placements_) {
            if (p.same_as == onnx::no_index) continue;
            p.shard = placements_[p.same_as].shard;
            p.offset = placements_[p.same_as].offset;
        }
    }

    std::string data_file_name(std::uint32_t shard) const {
        return shard_count_ > 1 || options_.shard_size > 0 ? shard_name(data_name_, shard, shard_count_) : data_name_;
    }

    result<void> check_outputs() {
        ONNXSTREAM_TRY(check_output(report_.output, inputs_, options_.force));
        const auto folder = report_.output.parent_path();
        for (std::uint32_t s = 0; s < shard_count_; ++s) {
            const auto path = folder / data_file_name(s);
            if (path.filename() == report_.output.filename())
                return failure(error_code::invalid_argument, "the data file and the model would both be " + path.string(),
                               "choose another --data-name");
            ONNXSTREAM_TRY(check_output(path, inputs_, options_.force));
        }
        return {};
    }

    result<void> write_data_files() {
        const auto folder = report_.output.parent_path();
        sha1_of_placement_.assign(placements_.size(), std::nullopt);
        for (std::uint32_t s = 0; s < shard_count_; ++s) {
            plan::write_plan plan;
            std::vector<std::uint32_t> check_owner;
            std::uint64_t tensors = 0;
            for (std::uint32_t i = 0; i < placements_.size(); ++i) {
                auto& p = placements_[i];
                if (p.shard != s) continue;
                ++tensors;
                if (p.same_as != onnx::no_index) continue;
                if (p.offset > plan.size()) plan.skip(p.offset - plan.size());
                if (p.converted != onnx::no_index) {
                    plan.emit(converted_[p.converted]);
                    continue;
                }
                std::uint32_t check = io::no_check;
                if (p.expected_sha1 || options_.write_checksums) {
                    check = plan.add_check({std::string(model_.tensors[p.tensor].name), p.expected_sha1,
                                            options_.write_checksums, false});
                    check_owner.push_back(i);
                }
                plan.copy(p.source, p.source_offset, p.length, check);
            }
            const auto path = folder / data_file_name(s);
            ONNXSTREAM_ASSIGN(auto output, io::output_file::create(path, plan.size(), {options_.force, true}));
            ONNXSTREAM_ASSIGN(auto written, write_planned(output, plan, sources_, options_, "write " + path.filename().string(),
                                                          report_.warnings));
            report_.writer = written.backend;
            for (std::size_t c = 0; c < check_owner.size(); ++c) sha1_of_placement_[check_owner[c]] = written.checks[c].sha1;
            report_.data_files.push_back({path, plan.size(), tensors});
            data_outputs_.push_back(std::move(output));
        }
        return {};
    }

    std::optional<io::sha1_digest> checksum_of(const placement& p) {
        if (!options_.write_checksums) return std::nullopt;
        const auto& owner = p.same_as != onnx::no_index ? placements_[p.same_as] : p;
        const auto index = static_cast<std::size_t>(&owner - placements_.data());
        if (sha1_of_placement_[index]) return sha1_of_placement_[index];
        if (owner.converted != onnx::no_index) return io::sha1_of(converted_[owner.converted]);
        return std::nullopt;
    }

    result<void> write_model() {
        onnx::tree_edits edits;
        inline_external_tensors_subset(edits);
        for (const auto& p : placements_) {
            const auto& tensor = model_.tensors[p.tensor];
            const auto message = tensor.message;
            const auto& msg = model_.tree.at(message);
            for (std::uint32_t i = 0; i < msg.field_count; ++i)
                if (is_value_field(model_.tree.field(msg.first_field + i).token.number)) edits.drop(msg.first_field + i);
            const auto entry = number(tensor_field::external_data);
            edits.insert(message, msg.field_count, edits.bytes(entry, string_entry("location", data_file_name(p.shard))));
            edits.insert(message, msg.field_count, edits.bytes(entry, string_entry("offset", std::to_string(p.offset))));
            edits.insert(message, msg.field_count, edits.bytes(entry, string_entry("length", std::to_string(p.length))));
            if (const auto sha1 = checksum_of(p))
                edits.insert(message, msg.field_count, edits.bytes(entry, string_entry("checksum", io::to_hex(*sha1))));
            edits.insert(message, msg.field_count,
                         edits.varint(number(tensor_field::data_location),
                                      static_cast<std::uint64_t>(onnx::data_location::external)));
            ++report_.tensors_external;
            if (p.same_as == onnx::no_index) report_.bytes_external += p.length;
        }
        ONNXSTREAM_ASSIGN(auto plan, plan::plan_rewrite(model_.tree, edits, {0, plan::protobuf_limit}));
        report_.output_size = plan.size();
        ONNXSTREAM_ASSIGN(model_output_, io::output_file::create(report_.output, plan.size(), {options_.force, true}));
        ONNXSTREAM_ASSIGN(auto written, write_planned(model_output_, plan, sources_, options_,
                                                      "write " + report_.output.filename().string(), report_.warnings));
        if (report_.writer[0] == '\0') report_.writer = written.backend;
        return {};
    }

    // Tensors that were external and stay embedded come back into the model.
    void inline_external_tensors_subset(onnx::tree_edits& edits) {
        if (inline_bindings_.empty()) return;
        onnx::external_data subset;
        for (const auto b : inline_bindings_) subset.tensors.push_back(data_.tensors[b]);
        inline_external_tensors(model_, subset, 1, edits, report_.warnings);
        report_.inlined += inline_bindings_.size();
    }

    const fs::path& model_path_;
    const externalize_options& options_;
    externalize_report report_;
    std::string data_name_;
    onnx::model_file model_;
    onnx::external_data data_;
    std::vector<io::file_identity> inputs_;
    std::vector<const io::source_file*> sources_;
    std::vector<placement> placements_;
    std::vector<std::vector<std::byte>> converted_;
    std::vector<std::uint32_t> inline_bindings_;
    std::vector<std::optional<io::sha1_digest>> sha1_of_placement_;
    std::uint32_t shard_count_ = 0;
    std::vector<io::output_file> data_outputs_;
    io::output_file model_output_;
};

}  // namespace

result<externalize_report> externalize(const fs::path& model, const externalize_options& options) {
    return engine(model, options).run();
}

}  // namespace onnxstream::ops
