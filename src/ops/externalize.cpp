#include <onnxstream/ops/externalize.hpp>

#include <onnxstream/io/output_file.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/ops/plan_output.hpp>
#include <onnxstream/plan/planner.hpp>

#include <algorithm>
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
    std::optional<std::string_view> checksum_text;  // the input's `checksum` key, as written
    std::uint32_t shard = 0;
    std::uint64_t offset = 0;        // in the shard
    std::uint32_t same_as = onnx::no_index;  // dedupe: the placement whose bytes these are
    std::uint32_t check = io::no_check;
};

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
        onnx::data_resolver resolver(model_path_, data_options_for(options_));
        data_ = onnx::external_data::bind(model_, resolver);
        if (const auto* problem = data_.blocking_problem(options_.allow_size_mismatch)) return failure(problem->what);
        for (const auto& p : data_.problems) report_.warnings.push_back(p.what);
        for (const auto& g : data_.guesses) report_.warnings.push_back(g.what);

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
        ONNXSTREAM_TRY(check_duplicate_checksums());
        ONNXSTREAM_TRY(write_model());
        ONNXSTREAM_TRY(commit_all());
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
            // An external tensor always moves or comes back in, whatever its type: the
            // output must never point at the old files (which repack may be replacing).
            if (!has_bytes || (!tensor.expected_bytes && tensor.storage != tensor_storage::external)) {
                ++report_.kept_other;
                continue;
            }
            std::uint64_t length = 0;
            if (tensor.storage == tensor_storage::raw) length = model_.tree.field(tensor.raw_field).token.payload_length;
            else if (tensor.storage == tensor_storage::external) length = data_.tensors[binding_of[t]].length;
            else length = *tensor.expected_bytes;

            // Read while loading (Resize scales are float, Range bounds any number type).
            const bool is_shape = shape_like.contains(onnx::value_name(model_.tree, model_.sites[t]));
            if (length < options_.threshold || is_shape) {
                if (is_shape && length >= options_.threshold) ++report_.kept_shape_like;
                else ++report_.kept_small;
                if (tensor.storage == tensor_storage::external) inline_bindings_.push_back(binding_of[t]);
                continue;
            }
            if (tensor.storage == tensor_storage::raw && tensor.expected_bytes && *tensor.expected_bytes != length) {
                error e{error_code::size_mismatch,
                        "tensor '" + std::string(tensor.name) + "' has " + std::to_string(length) +
                            " bytes of raw_data but its dims and type need " + std::to_string(*tensor.expected_bytes),
                        "the model is damaged; {0} moves the bytes anyway"};
                e.remedies = {{remedy::accept_size_mismatch, {}}};
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
                if (tensor.external->checksum) {
                    p.checksum_text = *tensor.external->checksum;
                    p.expected_sha1 = io::parse_sha1_hex(*tensor.external->checksum);
                    if (!p.expected_sha1)
                        report_.warnings.push_back({error_code::checksum_mismatch,
                                                    "tensor '" + std::string(tensor.name) +
                                                        "' has a checksum that is not a SHA-1 ('" +
                                                        std::string(p.checksum_text->substr(0, 48)) +
                                                        "'); it was not checked and is kept as it is",
                                                    ""});
                }
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
    // Reading is kept to what can match: only tensors sharing their type and length with
    // another are looked at, first by the hash of their first 64 KiB, and only those still
    // sharing that are hashed whole (so a model with no duplicates costs one small read
    // per tensor, not a second pass over every byte).
    result<void> deduplicate() {
        constexpr std::uint64_t prefix = 64 * 1024;
        std::vector<std::byte> buffer(1U << 20);
        auto hash = [&](const placement& p, std::uint64_t length) -> result<std::uint64_t> {
            if (options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed))
                return failure(error_code::interrupted, "interrupted; no output was written");
            if (p.converted != onnx::no_index)
                return io::xxh3_of(std::span<const std::byte>(converted_[p.converted]).first(static_cast<std::size_t>(length)));
            io::xxh3_hasher hasher;
            ONNXSTREAM_TRY(stream_slice(*sources_[p.source], p.source_offset, length, buffer,
                                        [&](std::span<const std::byte> piece, std::uint64_t) { hasher.update(piece); }));
            return hasher.digest();
        };
        using key = std::tuple<std::int32_t, std::uint64_t, std::uint64_t>;  // type, length, hash
        std::map<key, std::vector<std::uint32_t>> by_size;
        for (std::uint32_t i = 0; i < placements_.size(); ++i)
            by_size[{model_.tensors[placements_[i].tensor].data_type, placements_[i].length, 0}].push_back(i);
        std::map<key, std::vector<std::uint32_t>> by_prefix;
        for (const auto& [size_key, members] : by_size) {
            if (members.size() < 2) continue;
            for (const auto i : members) {
                const auto& p = placements_[i];
                ONNXSTREAM_ASSIGN(const auto digest, hash(p, std::min(p.length, prefix)));
                by_prefix[{std::get<0>(size_key), p.length, digest}].push_back(i);
            }
        }
        std::map<key, std::vector<std::uint32_t>> groups;
        for (const auto& [prefix_key, members] : by_prefix) {
            if (members.size() < 2) continue;
            for (const auto i : members) {
                const auto& p = placements_[i];
                std::uint64_t digest = std::get<2>(prefix_key);
                if (p.length > prefix) {
                    ONNXSTREAM_ASSIGN(digest, hash(p, p.length));
                }
                groups[{std::get<0>(prefix_key), p.length, digest}].push_back(i);
            }
        }
        std::vector<std::byte> other(buffer.size());
        for (const auto& group : groups) {
            const auto& members = group.second;
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

    // Padding small tensors to a page each would multiply a file of many small weights
    // (0.5 MB grew 5.9x at 64 KiB); runtimes only map the large ones.
    std::uint64_t alignment_for(std::uint64_t length) const {
        return length >= options_.align_threshold ? options_.alignment : 0;
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

    // check_output, except that an output may replace an input when in-place rewriting
    // is allowed and forced (see externalize_options::allow_in_place), and only when the
    // input model itself is replaced too: a data file replaced under a model that stays
    // would leave that model reading bytes laid out for another.
    result<void> check_one_output(const fs::path& path) const {
        const auto identity = io::identity_of(path);
        const bool replaces_input =
            identity && std::find(inputs_.begin(), inputs_.end(), *identity) != inputs_.end();
        if (!replaces_input || !options_.allow_in_place) return check_output(path, inputs_, options_.force);
        const auto output_identity = io::identity_of(report_.output);
        const bool in_place = output_identity && *output_identity == inputs_.front();
        if (!in_place)
            return failure(error_code::output_is_input,
                           "the output " + path.string() + " is a file the input model " + model_path_.string() +
                               " still needs",
                           "choose another {0}, or repack in place ({1}) so that the model is replaced with its data",
                           {{remedy::choose_data_name, {}}, {remedy::repack_in_place, model_path_.string()}});
        if (!options_.force)
            return failure(error_code::output_is_input, "the output " + path.string() + " is one of the inputs",
                           "{0} to repack in place (the old files are replaced only once the new ones "
                           "are complete), or write elsewhere with {1}",
                           {{remedy::replace_output, {}}, {remedy::choose_output, {}}});
        std::error_code ec;
        if (fs::is_directory(path, ec))
            return failure(error_code::invalid_argument, "the output " + path.string() + " is a directory",
                           "give a file name with {0}", {{remedy::choose_output, {}}});
        if (!fs::is_regular_file(fs::symlink_status(path, ec)))
            return failure(error_code::invalid_argument, "the output " + path.string() + " is not a regular file",
                           "onnxstream only replaces regular files; write the result elsewhere with {0}",
                           {{remedy::choose_output, {}}});
        return {};
    }

    result<void> check_outputs() {
        ONNXSTREAM_TRY(check_one_output(report_.output));
        const auto folder = report_.output.parent_path();
        for (std::uint32_t s = 0; s < shard_count_; ++s) {
            const auto path = folder / data_file_name(s);
            if (path.filename() == report_.output.filename())
                return failure(error_code::invalid_argument, "the data file and the model would both be " + path.string(),
                               "choose another {0}", {{remedy::choose_data_name, {}}});
            ONNXSTREAM_TRY(check_one_output(path));
        }
        return {};
    }

    // Every output is complete and on disk before the first rename, and the renames (data
    // files first, the model last) are one transaction: if any fails, those done are
    // undone and the files they replaced (a repack in place: the inputs) are back intact.
    result<void> commit_all() {
        std::vector<io::output_file*> outputs;
        for (auto& file : data_outputs_) outputs.push_back(&file);
        outputs.push_back(&model_output_);
        return io::commit_outputs(outputs);
    }

    result<void> write_data_files() {
        const auto folder = report_.output.parent_path();
        sha1_of_placement_.assign(placements_.size(), std::nullopt);
        mismatched_.assign(placements_.size(), false);
        // A duplicate is never read; its owner's SHA-1 stands in to check its checksum.
        needs_sha1_.assign(placements_.size(), false);
        for (const auto& p : placements_)
            if (p.same_as != onnx::no_index && p.expected_sha1) needs_sha1_[p.same_as] = true;
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
                plan.label(std::string(model_.tensors[p.tensor].name));
                if (p.converted != onnx::no_index) {
                    plan.emit(converted_[p.converted]);
                    continue;
                }
                std::uint32_t check = io::no_check;
                if (p.expected_sha1 || options_.write_checksums || needs_sha1_[i]) {
                    check = plan.add_check({std::string(model_.tensors[p.tensor].name), p.expected_sha1,
                                            options_.write_checksums || needs_sha1_[i], false});
                    check_owner.push_back(i);
                }
                plan.copy(p.source, p.source_offset, p.length, check);
            }
            const auto path = folder / data_file_name(s);
            ONNXSTREAM_ASSIGN(auto output, io::output_file::create(path, plan.size(), {options_.force, true}));
            ONNXSTREAM_ASSIGN(auto written, write_planned(output, plan, sources_, options_, "write " + path.filename().string(),
                                                          report_.warnings));
            report_.writer = written.backend;
            for (std::size_t c = 0; c < check_owner.size(); ++c) {
                sha1_of_placement_[check_owner[c]] = written.checks[c].sha1;
                if (!written.checks[c].sha1_matches) mismatched_[check_owner[c]] = true;
            }
            report_.data_files.push_back({path, plan.size(), tensors});
            data_outputs_.push_back(std::move(output));
        }
        return {};
    }

    std::optional<io::sha1_digest> sha1_of_bytes(std::uint32_t index) const {
        const auto& p = placements_[index];
        const auto owner = p.same_as != onnx::no_index ? p.same_as : index;
        if (sha1_of_placement_[owner]) return sha1_of_placement_[owner];
        if (placements_[owner].converted != onnx::no_index) return io::sha1_of(converted_[placements_[owner].converted]);
        return std::nullopt;
    }

    // Duplicates were not copied, so their checksums are compared with their owner's here.
    result<void> check_duplicate_checksums() {
        for (std::uint32_t i = 0; i < placements_.size(); ++i) {
            const auto& p = placements_[i];
            if (p.same_as == onnx::no_index || !p.expected_sha1) continue;
            const auto found = sha1_of_bytes(i);
            if (!found || *found == *p.expected_sha1) continue;
            mismatched_[i] = true;
            error e{error_code::checksum_mismatch,
                    "the bytes of tensor '" + std::string(model_.tensors[p.tensor].name) +
                        "' do not match its SHA-1 checksum (expected " + io::to_hex(*p.expected_sha1) + ", found " +
                        io::to_hex(*found) + ")",
                    options_.strict ? "the data file is damaged or belongs to another model; fetch it again"
                                    : "the data file may be damaged; {0} makes this an error"};
            if (!options_.strict) e.remedies = {{remedy::refuse_guesses, {}}};
            if (options_.strict) return failure(std::move(e));
            report_.warnings.push_back(std::move(e));
        }
        return {};
    }

    // The `checksum` value to write, if any (see the header for the rules).
    std::optional<std::string> checksum_of(std::uint32_t index) const {
        const auto& p = placements_[index];
        const bool keep_original = p.checksum_text && (!options_.write_checksums || mismatched_[index] || !p.expected_sha1);
        if (keep_original) return std::string(*p.checksum_text);
        if (!options_.write_checksums) return std::nullopt;
        if (const auto sha1 = sha1_of_bytes(index)) return io::to_hex(*sha1);
        return std::nullopt;
    }

    result<void> write_model() {
        onnx::tree_edits edits;
        inline_external_tensors_subset(edits);
        for (std::uint32_t index = 0; index < placements_.size(); ++index) {
            const auto& p = placements_[index];
            const auto& tensor = model_.tensors[p.tensor];
            const auto message = tensor.message;
            const auto& msg = model_.tree.at(message);
            for (std::uint32_t i = 0; i < msg.field_count; ++i)
                if (onnx::holds_tensor_value(model_.tree.field(msg.first_field + i).token.number)) edits.drop(msg.first_field + i);
            const auto entry = number(tensor_field::external_data);
            edits.insert(message, msg.field_count, edits.bytes(entry, onnx::encode_string_entry("location", data_file_name(p.shard))));
            edits.insert(message, msg.field_count, edits.bytes(entry, onnx::encode_string_entry("offset", std::to_string(p.offset))));
            edits.insert(message, msg.field_count, edits.bytes(entry, onnx::encode_string_entry("length", std::to_string(p.length))));
            if (const auto checksum = checksum_of(index))
                edits.insert(message, msg.field_count, edits.bytes(entry, onnx::encode_string_entry("checksum", *checksum)));
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
    std::vector<bool> mismatched_;   // the input's checksum did not match the bytes
    std::vector<bool> needs_sha1_;   // owners whose duplicates carry a checksum
    std::uint32_t shard_count_ = 0;
    std::vector<io::output_file> data_outputs_;
    io::output_file model_output_;
};

}  // namespace

result<externalize_report> externalize(const fs::path& model, const externalize_options& options) {
    return engine(model, options).run();
}

}  // namespace onnxstream::ops
