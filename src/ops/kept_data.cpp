#include "kept_data.hpp"

#include "data_layout.hpp"

#include <onnxstream/onnx/data_resolver.hpp>

namespace onnxstream::ops::detail {

namespace fs = std::filesystem;
using onnxstream::none;

namespace {

// reuse_data: the output points at the original data file, by a path from its folder.
result<void> reuse_location(const onnx::bound_model& bound, onnx::site_id site, const onnx::external_tensor& binding,
                            const fs::path& folder, graph::storage_plan& plan) {
    const auto& file = bound.data.files[binding.file];
    std::error_code data_error;
    std::error_code folder_error;
    const auto data_real = fs::canonical(file.found->path, data_error);
    const auto folder_real = fs::canonical(folder, folder_error);
    if (data_error || folder_error || data_real == folder_real || !onnx::is_inside(data_real, folder_real))
        return failure(error_code::invalid_argument,
                       "reusing the input's data needs the data file " + file.found->path.string() +
                           " inside the output's folder " + folder.string(),
                       "write the output beside the input model, or leave out {0} to write a new data file",
                       {{remedy::reuse_data, {}}});
    const auto location = data_real.lexically_relative(folder_real).generic_string();
    if (location == file.location) return {};
    plan.move_site(site, graph::external_location{location, binding.offset, binding.length});
    return {};
}

}  // namespace

result<std::uint64_t> keep_surviving_external(const onnx::bound_model& bound, const graph::graph_model& graph, bool reuse_data,
                                              const fs::path& folder, graph::storage_plan& plan,
                                              std::vector<data_entry>& entries) {
    std::uint64_t copied = 0;
    const auto survive = graph::surviving_sites(graph);
    for (const auto site : bound.model.sites.ids()) {
        const auto b = bound.binding_of(site);
        if (!survive[site] || b == none) continue;
        const auto& binding = bound.data.tensors[b];
        if (reuse_data) {
            ONNXSTREAM_TRY(reuse_location(bound, site, binding, folder, plan));
            continue;
        }
        entries.push_back({onnx::bound_model::source_of_file(binding.file).value, binding.offset, binding.length, 0, site, none});
        copied += binding.length;
    }
    return copied;
}

void lay_out(const std::string& data_name, std::vector<data_entry>& entries, graph::storage_plan& plan) {
    data_layout layout({});
    for (auto& e : entries) {
        if (e.tensor != none) e.source_offset = plan.placement(e.tensor).data_offset;
        e.offset = layout.add(e.length).offset;
        const graph::external_location where{data_name, e.offset, e.length};
        if (e.site != none) plan.move_site(e.site, where);
        else plan.placement(e.tensor).external = where;
    }
}

result<written_data_file> write_data_file(rewrite_session& session, const fs::path& path, std::span<const data_entry> entries) {
    plan::write_plan data_plan;
    for (const auto& e : entries) {
        if (e.offset > data_plan.size()) data_plan.skip(e.offset - data_plan.size());
        data_plan.copy(e.source, e.source_offset, e.length,
                       e.site != none ? session.checksum_check(data_plan, e.site) : io::no_check);
    }
    ONNXSTREAM_TRY(session.write(path, data_plan));
    return written_data_file{path, data_plan.size(), entries.size()};
}

}  // namespace onnxstream::ops::detail
