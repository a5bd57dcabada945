#include <onnxstream/ops/externalize.hpp>

#include "bound_operation.hpp"
#include "data_layout.hpp"

#include <onnxstream/io/chunked_read.hpp>
#include <onnxstream/io/mapped_file.hpp>
#include <onnxstream/io/output_file.hpp>
#include <onnxstream/io/spill_file.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/tensor_value_edits.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/plan/planner.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <tuple>

namespace onnxstream::ops {

namespace fs = std::filesystem;
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

// Where one moved tensor (its site) goes: 32 bytes, since a split of a million tiny
// tensors holds a million of them. Where its bytes come from is the model's word for it
// (bound_model::stored_bytes, which reads the tensor again: its length, asked for most,
// is kept); what few tensors have (converted typed values, a checksum, a duplicate) is
// in a side table.
struct placement {
    std::uint64_t offset = 0;   // in the shard
    std::uint64_t length = 0;   // of its bytes
    onnx::site_id site = none;  // the tensor
    std::uint32_t shard = 0;
    std::uint32_t extra = onnx::no_index;  // index into the placement_extra table, or none
};
static_assert(sizeof(placement) == 32, "a split holds one placement per moved tensor");

struct placement_extra {
    std::optional<onnx::stored_slice> converted;  // typed values as raw bytes, in the scratch file
    std::optional<io::sha1_digest> expected_sha1;
    std::optional<std::string_view> checksum_text;  // the input's `checksum` key, as written
    std::uint32_t same_as = onnx::no_index;         // dedupe: the placement whose bytes these are
};

// Operations, and tensors, per window of a data file's plan.
constexpr std::size_t window_operations = 4096;

class engine : detail::bound_operation<externalize_options, externalize_report> {
public:
    using bound_operation::bound_operation;

    result<externalize_report> run() {
        report_.input = model_path_;
        report_.output = options_.output.empty() ? default_output(model_path_, options_.output_suffix) : options_.output;
        ONNXSTREAM_ASSIGN(data_name_, choose_data_name(report_.output, options_.data_name));
        // Each tensor is read again when needed rather than kept, and the tree drops the
        // fields of embedded tensors (the edits address them by position): a table of a
        // million tensor_infos, or their field rows, would outweigh the rest of the run.
        ONNXSTREAM_TRY(open_session(onnx::nodes_on_demand(), onnx::tensor_reading::on_demand));
        if (options_.allow_in_place) session_.allow_in_place(report_.output);
        ONNXSTREAM_TRY(choose_placements());
        if (converted_) {
            ONNXSTREAM_ASSIGN(converted_source_, converted_->open_source());
            session_.add_source(*converted_source_);
        }
        if (options_.dedupe) ONNXSTREAM_TRY(deduplicate());
        lay_out();
        ONNXSTREAM_TRY(check_outputs());
        ONNXSTREAM_TRY(write_data_files());
        ONNXSTREAM_TRY(check_duplicate_checksums());
        ONNXSTREAM_TRY(write_model());
        report_.writer = session_.writer();
        ONNXSTREAM_TRY(session_.commit());
        return std::move(report_);
    }

private:
    result<void> choose_placements() {
        const auto shape_like = onnx::shape_like_values(model_.tree, &model_.file.mapping());
        // At most one a site, reserved at once: pages of the room never used are never
        // touched, where growing (and shrink_to_fit) held two copies of 32 MB for 1M tensors.
        placements_.reserve(model_.sites.size());
        onnx::tensor_pass pass(model_);
        for (const auto t : model_.sites.ids()) {
            const auto handle = pass.read(t);
            const auto& tensor = *handle;
            const bool has_bytes = tensor.storage == tensor_storage::raw || tensor.storage == tensor_storage::typed ||
                                   tensor.storage == tensor_storage::external;
            // An external tensor always moves or comes back in, whatever its type: the
            // output must never point at the old files (which repack may be replacing).
            if (!has_bytes || (!tensor.expected_bytes && tensor.storage != tensor_storage::external)) {
                ++report_.kept_other;
                continue;
            }
            const auto stored = bound_.stored_bytes(t, handle);
            const std::uint64_t length = stored ? stored->length : *tensor.expected_bytes;

            // Read while loading (Resize scales are float, Range bounds any number type).
            const bool is_shape = shape_like.contains(onnx::value_name(model_.tree, model_.sites[t]));
            if (length < options_.threshold || is_shape) {
                if (is_shape && length >= options_.threshold) ++report_.kept_shape_like;
                else ++report_.kept_small;
                if (tensor.storage == tensor_storage::external)
                    inline_bindings_.push_back(bound_.data.tensors[bound_.binding_of(t)]);
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
            p.site = t;
            p.length = length;
            if (stored) {
                if (tensor.storage == tensor_storage::external && tensor.external->checksum) {
                    auto& extra = extra_of(p);
                    extra.checksum_text = *tensor.external->checksum;
                    if (auto expected = onnx::expected_sha1(tensor)) {
                        extra.expected_sha1 = *expected;
                    } else {
                        report_.warnings.push_back(std::move(expected).error());
                        report_.warnings.back().message += "; it is kept as it is";
                    }
                }
            } else {
                // Typed values become raw bytes in a scratch file, a piece at a time, and
                // are then copied like any other source (its index follows the data files').
                if (!converted_) {
                    ONNXSTREAM_ASSIGN(auto spill, io::spill_file::create(report_.output.parent_path()));
                    converted_.emplace(std::move(spill));
                }
                extra_of(p).converted = onnx::stored_slice{bound_.first_added_source(), converted_->size(), length};
                const std::function<result<void>(std::span<const std::byte>)> append = [this](std::span<const std::byte> piece) {
                    auto appended = converted_->append(piece);
                    if (!appended) return result<void>(failure(std::move(appended).error()));
                    return result<void>{};
                };
                ONNXSTREAM_TRY(onnx::typed_to_raw(handle.tree(), tensor, append, &model_.file.mapping()));
                ++report_.converted_typed;
            }
            placements_.push_back(p);
        }
        return {};
    }

    // Where a placement's bytes are: a source, an offset in it and a length.
    [[nodiscard]] onnx::stored_slice bytes_of(const placement& p) const {
        if (p.extra != onnx::no_index && extras_[p.extra].converted) return *extras_[p.extra].converted;
        return *bound_.stored_bytes(p.site);
    }
    // The same, for a caller that holds the tensor (read once for its name and its bytes).
    [[nodiscard]] onnx::stored_slice bytes_of(const placement& p, const onnx::tensor_handle& tensor) const {
        if (p.extra != onnx::no_index && extras_[p.extra].converted) return *extras_[p.extra].converted;
        return *bound_.stored_bytes(p.site, tensor);
    }
    [[nodiscard]] static std::uint64_t length_of(const placement& p) { return p.length; }

    placement_extra& extra_of(placement& p) {
        if (p.extra == onnx::no_index) {
            p.extra = static_cast<std::uint32_t>(extras_.size());
            extras_.emplace_back();
        }
        return extras_[p.extra];
    }
    [[nodiscard]] std::uint32_t same_as(const placement& p) const {
        return p.extra == onnx::no_index ? onnx::no_index : extras_[p.extra].same_as;
    }
    [[nodiscard]] bool duplicate(const placement& p) const { return same_as(p) != onnx::no_index; }
    [[nodiscard]] const std::optional<io::sha1_digest>& expected_sha1(const placement& p) const {
        static const std::optional<io::sha1_digest> absent;
        return p.extra == onnx::no_index ? absent : extras_[p.extra].expected_sha1;
    }
    [[nodiscard]] std::optional<std::string_view> checksum_text(const placement& p) const {
        return p.extra == onnx::no_index ? std::nullopt : extras_[p.extra].checksum_text;
    }

    // Groups placements with identical (type, length, xxh3), then confirms byte for byte.
    // Reading is kept to what can match: only tensors sharing their type and length with
    // another are looked at, first by the hash of their first 64 KiB, and only those still
    // sharing that are hashed whole (so a model with no duplicates costs one small read
    // per tensor, not a second pass over every byte).
    result<void> deduplicate() {
        constexpr std::uint64_t prefix = 64 * 1024;
        std::vector<std::byte> buffer(io::read_chunk_size);
        auto hash = [&](const placement& p, std::uint64_t length) -> result<std::uint64_t> {
            if (options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed))
                return failure(error_code::interrupted, "interrupted; no output was written");
            io::xxh3_hasher hasher;
            ONNXSTREAM_TRY(io::for_each_chunk(
                *session_.sources()[bytes_of(p).source.value], bytes_of(p).offset, length,
                [&](std::span<const std::byte> piece) { hasher.update(piece); }, std::span(buffer)));
            return hasher.digest();
        };
        using key = std::tuple<std::int32_t, std::uint64_t, std::uint64_t>;  // type, length, hash
        std::map<key, std::vector<std::uint32_t>> by_size;
        for (std::uint32_t i = 0; i < placements_.size(); ++i)
            by_size[{model_.tensor(placements_[i].site)->data_type, length_of(placements_[i]), 0}].push_back(i);
        std::map<key, std::vector<std::uint32_t>> by_prefix;
        for (const auto& [size_key, members] : by_size) {
            if (members.size() < 2) continue;
            for (const auto i : members) {
                const auto& p = placements_[i];
                ONNXSTREAM_ASSIGN(const auto digest, hash(p, std::min(length_of(p), prefix)));
                by_prefix[{std::get<0>(size_key), length_of(p), digest}].push_back(i);
            }
        }
        std::map<key, std::vector<std::uint32_t>> groups;
        for (const auto& [prefix_key, members] : by_prefix) {
            if (members.size() < 2) continue;
            for (const auto i : members) {
                const auto& p = placements_[i];
                std::uint64_t digest = std::get<2>(prefix_key);
                if (length_of(p) > prefix) {
                    ONNXSTREAM_ASSIGN(digest, hash(p, length_of(p)));
                }
                groups[{std::get<0>(prefix_key), length_of(p), digest}].push_back(i);
            }
        }
        std::vector<std::byte> other(buffer.size());
        for (const auto& group : groups) {
            const auto& members = group.second;
            for (std::size_t a = 1; a < members.size(); ++a) {
                for (std::size_t b = 0; b < a; ++b) {
                    if (duplicate(placements_[members[b]])) continue;
                    ONNXSTREAM_ASSIGN(const bool same,
                                      equal_bytes(placements_[members[a]], placements_[members[b]], buffer, other));
                    if (!same) continue;
                    extra_of(placements_[members[a]]).same_as = members[b];
                    ++report_.deduplicated;
                    report_.bytes_saved += length_of(placements_[members[a]]);
                    break;
                }
            }
        }
        return {};
    }

    result<bool> equal_bytes(const placement& a, const placement& b, std::vector<std::byte>& left,
                             std::vector<std::byte>& right) {
        const auto length = length_of(a);
        if (length != length_of(b)) return false;
        std::uint64_t done = 0;
        while (done < length) {
            const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(length - done, left.size()));
            auto read = [&](const placement& p, std::vector<std::byte>& into) -> result<std::span<const std::byte>> {
                const auto view = std::span(into).first(piece);
                const auto from = bytes_of(p);
                ONNXSTREAM_TRY(session_.sources()[from.source.value]->read_at(from.offset + done, view));
                return std::span<const std::byte>(view);
            };
            ONNXSTREAM_ASSIGN(const auto x, read(a, left));
            ONNXSTREAM_ASSIGN(const auto y, read(b, right));
            if (std::memcmp(x.data(), y.data(), piece) != 0) return false;
            done += piece;
        }
        return true;
    }

    // Small tensors stay dense whatever the alignment (0.5 MB of small weights grew 5.9x
    // when each was padded to 64 KiB).
    void lay_out() {
        data_layout layout({options_.alignment, options_.align_threshold, options_.shard_size});
        for (auto& p : placements_) {
            if (duplicate(p)) continue;
            const auto place = layout.add(length_of(p));
            p.shard = place.shard;
            p.offset = place.offset;
        }
        shard_count_ = layout.shard_count();
        for (auto& p : placements_) {
            if (!duplicate(p)) continue;
            p.shard = placements_[same_as(p)].shard;
            p.offset = placements_[same_as(p)].offset;
        }
    }

    std::string data_file_name(std::uint32_t shard) const {
        return ops::data_file_name(data_name_, options_.shard_size, shard, shard_count_);
    }

    result<void> check_outputs() {
        // An output may replace an input only in place (session_.allow_in_place).
        ONNXSTREAM_TRY(session_.claim_output(report_.output));
        const auto folder = report_.output.parent_path();
        for (std::uint32_t s = 0; s < shard_count_; ++s)
            ONNXSTREAM_TRY(session_.claim_output(folder / data_file_name(s), {.model_output = report_.output}));
        return {};
    }

    // Whether placement `i`'s copy is hashed: to check or write its checksum, or its
    // duplicates'.
    [[nodiscard]] bool hashed(std::uint32_t i) const {
        return expected_sha1(placements_[i]) || options_.write_checksums || needs_sha1_[i];
    }

    result<void> write_data_files() {
        const auto folder = report_.output.parent_path();
        mismatched_.assign(placements_.size(), false);
        // A duplicate is never read; its owner's SHA-1 stands in to check its checksum.
        needs_sha1_.assign(placements_.size(), false);
        for (const auto& p : placements_)
            if (duplicate(p) && expected_sha1(p)) needs_sha1_[same_as(p)] = true;
        for (std::uint32_t s = 0; s < shard_count_; ++s) {
            // The checks and the size first (a writer needs both before the first byte),
            // then the copies a window at a time: a million tensors never make a million
            // operations in memory.
            std::vector<io::stream_check> checks;
            std::vector<std::uint32_t> check_owner;
            std::uint64_t tensors = 0;
            std::uint64_t size = 0;
            std::optional<onnx::tensor_pass> names;  // for the checks, when there are any
            for (std::uint32_t i = 0; i < placements_.size(); ++i) {
                const auto& p = placements_[i];
                if (p.shard != s) continue;
                ++tensors;
                if (duplicate(p)) continue;
                size = std::max(size, p.offset + length_of(p));
                if (!hashed(i)) continue;
                if (!names) names.emplace(model_);
                checks.push_back({.tensor = std::string(names->read(p.site)->name),
                                  .expected_sha1 = expected_sha1(p),
                                  .compute_sha1 = options_.write_checksums || needs_sha1_[i]});
                check_owner.push_back(i);
            }
            names.reset();
            std::uint32_t next = 0;
            std::uint32_t next_check = 0;
            // Placements are in site (file) order: the pass releases the model's pages behind it.
            onnx::tensor_pass pass(model_);
            const windowed_plan plan{size, checks, [&, s](plan::write_plan& window) {
                                         window.next_window();
                                         // Tensors side by side in a file merge into one copy: the
                                         // window is bounded by tensors too, or a million of them
                                         // would make one window of a million labels (90 MB).
                                         std::size_t taken = 0;
                                         while (next < placements_.size() && window.operations().size() < window_operations &&
                                                taken < window_operations) {
                                             const auto i = next++;
                                             const auto& p = placements_[i];
                                             if (p.shard != s || duplicate(p)) continue;
                                             ++taken;
                                             if (p.offset > window.size()) window.skip(p.offset - window.size());
                                             const auto tensor = pass.read(p.site);
                                             window.label(std::string(tensor->name));
                                             const auto check = hashed(i) ? next_check++ : io::no_check;
                                             const auto from = bytes_of(p, tensor);
                                             window.copy(from.source.value, from.offset, from.length, check);
                                         }
                                         return !window.operations().empty();
                                     }};
            const auto path = folder / data_file_name(s);
            ONNXSTREAM_ASSIGN(auto written, session_.write(path, plan));
            for (std::size_t c = 0; c < check_owner.size(); ++c) {
                if (written.checks[c].sha1) sha1_found_.emplace_back(check_owner[c], *written.checks[c].sha1);
                if (!written.checks[c].sha1_matches) mismatched_[check_owner[c]] = true;
            }
            report_.data_files.push_back({path, size, tensors});
        }
        std::sort(sha1_found_.begin(), sha1_found_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        return {};
    }

    std::optional<io::sha1_digest> sha1_of_bytes(std::uint32_t index) const {
        const auto& p = placements_[index];
        const auto owner = duplicate(p) ? same_as(p) : index;
        const auto found = std::lower_bound(sha1_found_.begin(), sha1_found_.end(), owner,
                                            [](const auto& entry, std::uint32_t i) { return entry.first < i; });
        if (found != sha1_found_.end() && found->first == owner) return found->second;
        return std::nullopt;
    }

    // Duplicates were not copied, so their checksums are compared with their owner's here.
    result<void> check_duplicate_checksums() {
        for (std::uint32_t i = 0; i < placements_.size(); ++i) {
            const auto& p = placements_[i];
            if (!duplicate(p) || !expected_sha1(p)) continue;
            const auto found = sha1_of_bytes(i);
            if (!found || *found == *expected_sha1(p)) continue;
            mismatched_[i] = true;
            auto e = onnx::checksum_mismatch(model_.tensor(p.site)->name, *expected_sha1(p), *found, options_.strict);
            if (options_.strict) return failure(std::move(e));
            report_.warnings.push_back(std::move(e));
        }
        return {};
    }

    // The `checksum` value to write, if any (see the header for the rules).
    std::optional<std::string> checksum_of(std::uint32_t index) const {
        const auto& p = placements_[index];
        const auto text = checksum_text(p);
        const bool keep_original = text && (!options_.write_checksums || mismatched_[index] || !expected_sha1(p));
        if (keep_original) return std::string(*text);
        if (!options_.write_checksums) return std::nullopt;
        if (const auto sha1 = sha1_of_bytes(index)) return io::to_hex(*sha1);
        return std::nullopt;
    }

    result<void> write_model() {
        onnx::tree_edits edits;
        inline_external_tensors_subset(edits);
        // The external_data entries are made from the placements as they are written.
        edits.set_external_entries([this](std::uint32_t index) {
            const auto& p = placements_[index];
            onnx::external_entry entry{data_file_name(p.shard), p.offset, length_of(p), checksum_of(index)};
            if (const auto* known = known_values(p.site)) {
                entry.dropped_positions = known->value_positions;
                entry.dropped_bytes = known->value_bytes;
            }
            return entry;
        });
        edits.reserve(placements_.size(), 0, 0, placements_.size());
        // A moved tensor whose binding does not know its value fields (one that was
        // embedded) has its body read again by store_external, in file order: a pass over
        // them releases the pages behind it (a million tensors would map the whole file),
        // as the session does behind the planner's passes.
        onnx::tensor_pass pass(model_);
        for (std::uint32_t index = 0; index < placements_.size(); ++index) {
            const auto& p = placements_[index];
            pass.reached(p.site);
            const auto message = model_.sites[p.site].message;
            if (const auto* known = known_values(p.site))
                onnx::store_external(model_.tree, message, known->value_positions, index, edits);
            else onnx::store_external(model_.tree, message, index, edits);
            ++report_.tensors_external;
            if (!duplicate(p)) report_.bytes_external += length_of(p);
        }
        ONNXSTREAM_ASSIGN(auto planned, session_.plan_model(edits));
        report_.output_size = planned.size();
        ONNXSTREAM_TRY(session_.write(report_.output, planned, edits));
        return {};
    }

    // The binding of a tensor that was external, when it knows the tensor's value fields
    // (their positions and bytes, as open's read found them); else null: the body is read.
    [[nodiscard]] const onnx::external_tensor* known_values(onnx::site_id site) const {
        const auto b = bound_.binding_of(site);
        if (b == none) return nullptr;
        const auto& binding = bound_.data.tensors[b];
        return binding.positions_known && binding.value_positions != 0 ? &binding : nullptr;
    }

    // Tensors that were external and stay embedded come back into the model.
    void inline_external_tensors_subset(onnx::tree_edits& edits) {
        onnx::inline_external(bound_, inline_bindings_, edits, report_.warnings);
        report_.inlined += inline_bindings_.size();
    }

    std::string data_name_;
    std::vector<placement> placements_;
    std::optional<io::spill_file> converted_;             // typed tensors' values as raw bytes
    std::optional<io::source_file> converted_source_;     // the same, for the writer
    std::vector<onnx::external_tensor> inline_bindings_;  // external tensors that stay embedded
    std::vector<placement_extra> extras_;
    std::vector<std::pair<std::uint32_t, io::sha1_digest>> sha1_found_;  // by placement: the bytes' SHA-1, when computed
    std::vector<bool> mismatched_;                                       // the input's checksum did not match the bytes
    std::vector<bool> needs_sha1_;                                       // owners whose duplicates carry a checksum
    std::uint32_t shard_count_ = 0;
};

}  // namespace

result<externalize_report> externalize(const fs::path& model, const externalize_options& options) {
    return engine(model, options).run();
}

}  // namespace onnxstream::ops
