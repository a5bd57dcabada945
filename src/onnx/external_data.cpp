#include <onnxstream/onnx/external_data.hpp>

#include <onnxstream/onnx/data_type.hpp>

#include <cstdio>
#include <unordered_map>

namespace onnxstream::onnx {
namespace {

std::string human(std::uint64_t bytes) {
    char text[64];
    if (bytes >= (1ULL << 30)) std::snprintf(text, sizeof text, " (%.2f GiB)", static_cast<double>(bytes) / (1ULL << 30));
    else if (bytes >= (1ULL << 20)) std::snprintf(text, sizeof text, " (%.1f MiB)", static_cast<double>(bytes) / (1ULL << 20));
    else return {};
    return text;
}

}  // namespace

external_data external_data::bind(const model_file& model, data_resolver& resolver) {
    external_data data;
    std::unordered_map<std::string, std::uint32_t> file_of;  // location -> index into files
    for (std::uint32_t t = 0; t < model.tensors.size(); ++t) {
        const auto& tensor = model.tensors[t];
        if (tensor.storage != tensor_storage::external) continue;
        const auto& ref = *tensor.external;
        const auto location = std::string(ref.location);
        // One lookup per tensor, not a scan of the files: a hostile model may name a
        // different file for each of a million tensors.
        const auto [known, added] = file_of.try_emplace(location, static_cast<std::uint32_t>(data.files.size()));
        const std::uint32_t file_index = known->second;
        if (added) {
            data_file file;
            file.location = location;
            auto found = resolver.resolve(location);
            if (!found) {
                data.problems.push_back({t, file_index, std::move(found).error()});
            } else {
                file.found = *found;
                auto opened = io::source_file::open(found->path, false);
                if (!opened) {
                    data.problems.push_back({t, file_index, std::move(opened).error()});
                } else {
                    file.size = opened->size();
                    file.file = std::move(opened).value();
                }
            }
            data.files.push_back(std::move(file));
        }
        auto& file = data.files[file_index];
        external_tensor binding;
        binding.tensor = t;
        binding.file = file_index;
        binding.offset = ref.offset.value_or(0);
        ++file.tensor_count;
        if (!file.file) {
            data.tensors.push_back(binding);
            continue;
        }
        const std::string tensor_name = "tensor '" + std::string(tensor.name) + "'";
        if (binding.offset > file.size) {
            error e{error_code::truncated_data,
                    file.found->path.string() + " is " + std::to_string(file.size) + " bytes but " + tensor_name +
                        " starts at byte " + std::to_string(binding.offset),
                    "the download is probably incomplete: fetch the data file again"};
            e.field_path = model.tree.path(tensor.message);
            data.problems.push_back({t, file_index, std::move(e)});
            data.tensors.push_back(binding);
            continue;
        }
        binding.length = ref.length.value_or(file.size - binding.offset);
        if (binding.length > file.size - binding.offset) {
            const std::uint64_t end = binding.offset + std::min(binding.length, std::numeric_limits<std::uint64_t>::max() - binding.offset);
            error e{error_code::truncated_data,
                    file.found->path.string() + " is " + std::to_string(file.size) + " bytes" + human(file.size) +
                        " but " + tensor_name + " needs bytes " + std::to_string(binding.offset) + " to " +
                        std::to_string(end) + human(end),
                    "the download is probably incomplete: fetch the data file again"};
            e.field_path = model.tree.path(tensor.message);
            data.problems.push_back({t, file_index, std::move(e)});
            file.bytes_needed = std::max(file.bytes_needed, end);
            data.tensors.push_back(binding);
            continue;
        }
        file.bytes_needed = std::max(file.bytes_needed, binding.offset + binding.length);
        file.bytes_referenced += binding.length;
        binding.usable = true;
        if (tensor.expected_bytes && *tensor.expected_bytes != binding.length) {
            error e{error_code::size_mismatch,
                    tensor_name + " has " + std::to_string(binding.length) + " bytes in " + file.location +
                        " but its dims and type (" + data_type_name(tensor.data_type) + ") need " +
                        std::to_string(*tensor.expected_bytes),
                    "the model or its data file is damaged; --allow-size-mismatch copies the bytes anyway"};
            e.field_path = model.tree.path(tensor.message);
            data.problems.push_back({t, file_index, std::move(e)});
        }
        data.tensors.push_back(binding);
    }
    return data;
}

const data_problem* external_data::blocking_problem(bool allow_size_mismatch) const {
    for (const auto& p : problems)
        if (!(allow_size_mismatch && p.what.code == error_code::size_mismatch)) return &p;
    return nullptr;
}

result<void> external_data::check_unchanged() const {
    for (const auto& f : files)
        if (f.file) ONNXSTREAM_TRY(f.file->check_unchanged());
    return {};
}

}  // namespace onnxstream::onnx
