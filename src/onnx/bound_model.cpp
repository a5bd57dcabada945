#include <onnxstream/onnx/bound_model.hpp>

#include <algorithm>
#include <string>
#include <utility>

namespace onnxstream::onnx {

namespace {

// The resolver words a file it left out because guesses are refused as a missing file
// whose hint names that setting (data_resolver.cpp, not_found).
bool guess_refused_by_strict(const data_problem& problem) {
    return problem.what.code == error_code::missing_data &&
           std::any_of(problem.what.remedies.begin(), problem.what.remedies.end(),
                       [](const remedy_step& step) { return step.change == remedy::refuse_guesses; });
}

}  // namespace

result<bound_model> bound_model::open(const std::filesystem::path& path, const open_options& options, const tree_options& tree,
                                      tensor_reading reading) {
    bound_model bound;
    // The external tensors are gathered for binding as open reads them: their bodies are
    // tokenized once for both.
    external_gathering gathered;
    bool reserved = false;
    const auto gather = [&gathered, &reserved](site_id site, std::uint64_t tensors_seen, const tensor_info& tensor,
                                               std::span<const field_entry> fields) {
        // Room for every tensor: pages a vector does not fill are never touched.
        if (!reserved) gathered.reserve(static_cast<std::size_t>(tensors_seen));
        reserved = true;
        gathered.add(site, tensor, fields);
    };
    ONNXSTREAM_ASSIGN(bound.model, model_file::open(path, tree, reading, gather));
    data_resolver resolver(path, options.resolving());
    bound.data = external_data::bind(bound.model, resolver, std::move(gathered));
    // --strict refuses a guess whatever the command: one that reports problems (inspect,
    // verify) would otherwise show the file as merely missing and succeed.
    if (options.strict) {
        const auto refused = std::find_if(bound.data.problems.begin(), bound.data.problems.end(), guess_refused_by_strict);
        if (refused != bound.data.problems.end()) return failure(refused->what);
    }
    if (!bound.data.tensors.empty()) bound.binding_of_.assign(bound.model.sites.size(), none);
    for (const auto b : bound.data.tensors.ids()) bound.binding_of_[bound.data.tensors[b].site] = b;
    return bound;
}

result<void> bound_model::usable(bool allow_size_mismatch) const {
    const auto* first = data.blocking_problem(allow_size_mismatch);
    if (first == nullptr) return {};
    error e = first->what;
    const auto others = data.problems.size() - 1;
    if (others > 0) {
        add_remedy(e,
                   (e.hint.empty() ? "" : "\n  ") + std::string("(") + std::to_string(others) + " more problem" +
                       (others == 1 ? "" : "s") + ": {N} lists them all)",
                   {remedy::inspect_model, {}});
    }
    return failure(std::move(e));
}

std::vector<error> bound_model::warnings() const {
    std::vector<error> out;
    out.reserve(data.problems.size() + data.guesses.size());
    for (const auto& p : data.problems) out.push_back(p.what);
    for (const auto& g : data.guesses) out.push_back(g.what);
    return out;
}

std::vector<const io::source_file*> bound_model::sources() const {
    std::vector<const io::source_file*> out{&model.file};
    for (const auto& f : data.files) out.push_back(f.file ? &*f.file : nullptr);
    return out;
}

std::vector<io::file_identity> bound_model::inputs() const {
    std::vector<io::file_identity> out{model.file.identity()};
    for (const auto& f : data.files)
        if (f.file) out.push_back(f.file->identity());
    return out;
}

std::optional<stored_slice> bound_model::stored_bytes(site_id site) const { return stored_bytes(site, model.tensor(site)); }

std::optional<stored_slice> bound_model::stored_bytes(site_id site, const tensor_handle& tensor) const {
    const auto& info = *tensor;
    if (info.storage == tensor_storage::raw) {
        const auto& raw = tensor.tree().field(info.raw_field);
        return stored_slice{model_source, raw.payload_offset(), raw.payload_length()};
    }
    if (info.storage == tensor_storage::external && binding_of(site) != none) {
        const auto& binding = data.tensors[binding_of(site)];
        return stored_slice{source_of_file(binding.file), binding.offset, binding.length};
    }
    return std::nullopt;
}

result<void> bound_model::check_unchanged() const {
    ONNXSTREAM_TRY(model.file.check_unchanged());
    return data.check_unchanged();
}

}  // namespace onnxstream::onnx
