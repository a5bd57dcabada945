#include <onnxstream/ops/verify.hpp>

#include "bound_summary.hpp"
#include "range_hasher.hpp"

#include <onnxstream/io/hashing.hpp>
#include <onnxstream/onnx/bound_model.hpp>
#include <onnxstream/onnx/data_type.hpp>
#include <onnxstream/onnx/fields.hpp>
#include <onnxstream/onnx/typed_data.hpp>
#include <onnxstream/plan/planner.hpp>

#include <algorithm>
#include <map>
#include <thread>
#include <tuple>

namespace onnxstream::ops {

namespace fs = std::filesystem;
using onnx::tensor_storage;

const char* to_string(verify_check check) noexcept {
    switch (check) {
        case verify_check::structure: return "structure";
        case verify_check::data: return "data";
        case verify_check::size: return "size";
        case verify_check::checksum: return "checksum";
    }
    return "unknown";
}

namespace {

verify_check check_for(error_code code) {
    switch (code) {
        case error_code::size_mismatch: return verify_check::size;
        case error_code::checksum_mismatch: return verify_check::checksum;
        case error_code::malformed:
        case error_code::not_onnx:
        case error_code::limit_exceeded:
        case error_code::too_large:
        case error_code::invalid_tensor: return verify_check::structure;
        default: return verify_check::data;
    }
}

struct hash_job {
    onnx::data_file_id file{0};
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    onnx::site_id site{};  // the first tensor whose bytes these are (named in progress events)
    std::optional<io::sha1_digest> digest;
    std::optional<error> failed;
};

class checker {
public:
    checker(const fs::path& path, const verify_options& options) : path_(path), options_(options) {}

    result<verify_report> run() {
        report_.path = path_;
        // Tensors are read when checked, none kept: a million of them is 120 MB.
        auto opened = onnx::bound_model::open(path_, options_, onnx::nodes_on_demand(), onnx::tensor_reading::on_demand);
        if (!opened) {
            auto e = std::move(opened).error();
            if (check_for(e.code) != verify_check::structure) return failure(std::move(e));
            std::error_code ignored;
            const auto size = fs::file_size(path_, ignored);
            report_.file_size = ignored ? 0 : size;
            report_.problems.push_back({verify_check::structure, "", "", std::nullopt, std::move(e)});
            return std::move(report_);
        }
        bound_ = std::move(opened).value();
        report_.structure_ok = true;
        report_.file_size = model_.file.size();
        report_.tensors = model_.sites.size();
        check_embedded_sizes();
        if (report_.file_size > plan::protobuf_limit)
            add_problem(none, none,
                        with_remedies(error{error_code::too_large, "the .onnx file is " + std::to_string(report_.file_size) +
                                                                       " bytes, over protobuf's limit of 2 GiB - 1 (" +
                                                                       std::to_string(plan::protobuf_limit) +
                                                                       "): ONNX Runtime and python-onnx cannot load it"},
                                      "move the weights to external data: {0} keeps the .onnx small",
                                      {{remedy::keep_external_data, {}}}));

        report_.external_tensors = data_.tensors.size();
        for (const auto& p : data_.problems) add_problem(p.site, p.file, p.what);
        // Found only by a guess: onnxstream checked it, but a runtime will not find it.
        for (const auto& g : data_.guesses) add_problem(none, g.file, g.what);
        summarize_files();
        ONNXSTREAM_TRY(check_checksums());
        // The sizes above were read through the model's mapping; a file cut short while
        // being read shows as zeros there, so the verdict holds only if it is unchanged.
        ONNXSTREAM_TRY(bound_.check_unchanged());
        return std::move(report_);
    }

private:
    void add_problem(onnx::site_id site, onnx::data_file_id file, error what) {
        verify_problem problem;
        problem.check = check_for(what.code);
        if (site != none) {
            problem.tensor = display_name(site);
            if (what.field_path.empty()) what.field_path = model_.tree.path(model_.sites[site].message);
        }
        if (data_.files.contains(file)) {
            const auto& data_file = data_.files[file];
            problem.location = data_file.location;
            if (data_file.found) problem.file = data_file.found->path;
            // external_data reports a missing or unreadable file once, for its first tensor.
            if (!data_file.file && data_file.tensor_count > 1)
                what.message += " (" + std::to_string(data_file.tensor_count) + " tensors are stored in it)";
        }
        problem.what = std::move(what);
        report_.problems.push_back(std::move(problem));
    }

    // A Constant's tensor is usually unnamed: it is known by the node's output.
    std::string display_name(onnx::site_id site) const {
        const auto name = model_.tensor(site)->name;
        return std::string(name.empty() ? onnx::value_name(model_.tree, model_.sites[site]) : name);
    }

    void check_embedded_sizes() {
        onnx::tensor_pass pass(model_);
        for (const auto t : model_.sites.ids()) {
            const auto handle = pass.read(t);
            const auto& tensor = *handle;
            if (!tensor.expected_bytes) continue;
            std::optional<std::uint64_t> held;
            if (tensor.storage == tensor_storage::raw) held = handle.tree().field(tensor.raw_field).payload_length();
            else if (tensor.storage == tensor_storage::typed) held = onnx::typed_raw_size(handle.tree(), tensor);
            else continue;
            const std::string name = "tensor '" + display_name(t) + "'";
            error e;
            if (!held) {
                e = error{error_code::malformed, name + " has typed values that do not decode",
                          "the model is damaged or was written by a faulty exporter"};
            } else if (*held != *tensor.expected_bytes) {
                e = error{error_code::size_mismatch,
                          name + " holds " + std::to_string(*held) + " bytes (" + onnx::to_string(tensor.storage) +
                              ") but its dims and type (" + onnx::data_type_name(tensor.data_type) + ") need " +
                              std::to_string(*tensor.expected_bytes),
                          "the model is damaged; re-export it"};
            } else {
                continue;
            }
            add_problem(t, none, std::move(e));
        }
    }

    // Per file: the union of the referenced ranges (so padding and orphaned bytes show),
    // and ranges that overlap without being the same (deduplicated tensors share theirs).
    void summarize_files() {
        indexed_vector<onnx::data_file_id, std::vector<std::pair<std::uint64_t, std::uint64_t>>> ranges(data_.files.size());
        for (const auto& binding : data_.tensors)
            if (binding.usable) ranges[binding.file].emplace_back(binding.offset, binding.length);
        for (const auto f : data_.files.ids()) {
            const auto& file = data_.files[f];
            verified_file summary;
            describe_found_file(file, summary);
            auto& list = ranges[f];
            std::sort(list.begin(), list.end());
            list.erase(std::unique(list.begin(), list.end()), list.end());
            std::uint64_t covered = 0;
            std::uint64_t reach = 0;  // the end of the union so far
            std::uint64_t overlaps = 0;
            for (const auto& [offset, length] : list) {
                const auto end = offset + length;
                if (offset < reach) ++overlaps;
                if (end > reach) {
                    covered += end - std::max(offset, reach);
                    reach = end;
                }
            }
            summary.bytes_referenced = covered;
            if (file.file) summary.unreferenced_bytes = file.size - std::min(file.size, covered);
            if (overlaps > 0)
                report_.notes.push_back(file.location + ": " + std::to_string(overlaps) +
                                        " tensor range(s) overlap another without being the same range");
            report_.files.push_back(std::move(summary));
        }
    }

    result<void> check_checksums() {
        // One job per distinct (file, offset, length): tensors sharing bytes are hashed once.
        std::map<std::tuple<onnx::data_file_id, std::uint64_t, std::uint64_t>, std::uint32_t> job_of;
        std::vector<std::pair<onnx::binding_id, std::uint32_t>> checked;  // (binding, job)
        indexed_vector<onnx::binding_id, io::sha1_digest> expected_of_binding(data_.tensors.size());
        onnx::tensor_pass pass(model_);  // bindings are in site (file) order
        for (const auto b : data_.tensors.ids()) {
            const auto& binding = data_.tensors[b];
            const auto handle = pass.read(binding.site);
            const auto& tensor = *handle;
            if (!tensor.external || !tensor.external->checksum) continue;
            ++report_.checksums;
            auto expected = onnx::expected_sha1(tensor);
            if (!expected) {
                add_problem(binding.site, binding.file, std::move(expected).error());
                continue;
            }
            if (!binding.usable) continue;  // already a problem: the bytes are not there
            expected_of_binding[b] = **expected;
            const auto key = std::make_tuple(binding.file, binding.offset, binding.length);
            auto [it, added] = job_of.emplace(key, static_cast<std::uint32_t>(jobs_.size()));
            if (added) jobs_.push_back({binding.file, binding.offset, binding.length, binding.site, std::nullopt, std::nullopt});
            checked.emplace_back(b, it->second);
        }
        // Jobs run in file and offset order (the map's order), so each file is read forward.
        std::vector<hash_job> ordered;
        std::vector<std::uint32_t> new_index(jobs_.size());
        for (const auto& [key, index] : job_of) {
            new_index[index] = static_cast<std::uint32_t>(ordered.size());
            ordered.push_back(jobs_[index]);
        }
        jobs_ = std::move(ordered);
        ONNXSTREAM_TRY(hash_all());

        for (const auto& [b, job_index] : checked) {
            const auto& binding = data_.tensors[b];
            const auto& job = jobs_[new_index[job_index]];
            const auto name = display_name(binding.site);
            if (job.failed) {
                add_problem(binding.site, binding.file, *job.failed);
                continue;
            }
            if (*job.digest == expected_of_binding[b]) {
                ++report_.checksums_matched;
                continue;
            }
            const auto where = "(" + std::to_string(binding.length) + " bytes at offset " + std::to_string(binding.offset) +
                               " of " + data_.files[binding.file].location + ")";
            add_problem(binding.site, binding.file,
                        onnx::checksum_mismatch(name, expected_of_binding[b], *job.digest, true, where));
        }
        return {};
    }

    result<void> hash_all() {
        std::vector<hashed_range> ranges;
        ranges.reserve(jobs_.size());
        {
            onnx::tensor_pass pass(model_);  // in the data's order, mostly the model's: what it maps goes
            for (const auto& job : jobs_)
                ranges.push_back({&*data_.files[job.file].file, job.offset, job.length, pass.read(job.site)->name, {}, {}, {}});
        }
        ONNXSTREAM_ASSIGN(report_.bytes_hashed,
                          hash_ranges(ranges, range_hash::sha1, options_, "verify " + path_.filename().string()));
        for (std::size_t j = 0; j < jobs_.size(); ++j) {
            jobs_[j].digest = ranges[j].sha1;
            if (ranges[j].failed) jobs_[j].failed = *ranges[j].failed;
        }
        return {};
    }

    const fs::path& path_;
    const verify_options& options_;
    verify_report report_;
    onnx::bound_model bound_;
    onnx::model_file& model_ = bound_.model;
    onnx::external_data& data_ = bound_.data;
    std::vector<hash_job> jobs_;
};

}  // namespace

result<verify_report> verify(const fs::path& model, const verify_options& options) { return checker(model, options).run(); }

}  // namespace onnxstream::ops
