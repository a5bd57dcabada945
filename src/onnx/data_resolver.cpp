#include <onnxstream/onnx/data_resolver.hpp>

#include <algorithm>
#include <array>

namespace onnxstream::onnx {

namespace fs = std::filesystem;

const char* to_string(found_by how) noexcept {
    switch (how) {
        case found_by::data_flag: return "data_flag";
        case found_by::model_folder: return "model_folder";
        case found_by::data_dir: return "data_dir";
        case found_by::data_dir_file_name: return "data_dir_file_name";
        case found_by::file_name_in_model_folder: return "file_name_in_model_folder";
        case found_by::common_name: return "common_name";
        case found_by::only_data_file: return "only_data_file";
    }
    return "unknown";
}

namespace {

bool exists_no_throw(const fs::path& p) {
    std::error_code ignored;
    return fs::exists(fs::symlink_status(p, ignored)) && fs::exists(p, ignored);
}

bool is_inside(const fs::path& child, const fs::path& root) {
    auto c = child.begin();
    for (auto r = root.begin(); r != root.end(); ++r, ++c) {
        if (r->empty()) continue;  // a trailing separator
        if (c == child.end() || *c != *r) return false;
    }
    return true;
}

bool looks_like_data(const fs::path& p) {
    static constexpr std::array<std::string_view, 6> extensions{".data", ".bin", ".onnx_data", ".weights", ".raw", ".pb"};
    const auto name = p.filename().string();
    if (name.empty() || name.front() == '.') return false;
    if (name.size() > 5 && name.ends_with("_data")) return true;
    const auto extension = p.extension().string();
    return std::find(extensions.begin(), extensions.end(), extension) != extensions.end();
}

}  // namespace

data_resolver::data_resolver(fs::path model_path, resolve_options options)
    : model_path_(std::move(model_path)), options_(std::move(options)) {
    std::error_code ignored;
    model_folder_ = fs::absolute(model_path_, ignored).parent_path();
    const auto real_folder = fs::weakly_canonical(model_folder_, ignored);
    allowed_roots_.push_back(real_folder.empty() ? model_folder_ : real_folder);
    // Hugging Face cache: <repo>/snapshots/<revision>/model.onnx, files linked into <repo>/blobs.
    const auto revision_parent = model_folder_.parent_path();
    if (revision_parent.filename() == "snapshots") {
        const auto blobs = revision_parent.parent_path() / "blobs";
        const auto real_blobs = fs::weakly_canonical(blobs, ignored);
        if (!real_blobs.empty()) allowed_roots_.push_back(real_blobs);
    }
}

namespace {

// Why a relative path written by someone else may not be followed, or empty; `folder`
// names the folder it must stay in.
std::string unsafe_because(std::string_view location, std::string_view folder) {
    if (location.find('\0') != std::string_view::npos) return "it contains a NUL byte";
    const fs::path p{std::string(location)};
    if (p.is_absolute() || location.front() == '/' || location.front() == '\\' ||
        (location.size() > 1 && location[1] == ':'))
        return "it is an absolute path";
    for (const auto& part : p)
        if (part == "..") return "it leaves " + std::string(folder) + " with '..'";
    if (location.find("..\\") != std::string_view::npos) return "it leaves " + std::string(folder) + " with '..'";
    return {};
}

}  // namespace

result<void> data_resolver::check_location_text(std::string_view location) {
    if (location.empty()) return failure(error_code::invalid_tensor, "an external data location is empty");
    if (const auto why = unsafe_because(location, "the model's folder"); !why.empty()) {
        return failure(error_code::unsafe_location,
                       "refusing external data location '" + std::string(location) + "': " + why,
                       "a model may only reference data files inside its own folder; if you trust this model, "
                       "pass the file with --data FILE");
    }
    return {};
}

result<fs::path> contained_path(const fs::path& root, std::string_view relative) {
    std::error_code ec;
    const auto real_root = fs::weakly_canonical(root, ec);
    if (ec) return failure(error_code::io, "cannot resolve " + root.string() + ": " + ec.message());
    if (relative.empty() || relative == ".") return real_root;
    if (const auto why = unsafe_because(relative, "the served folder"); !why.empty())
        return failure(error_code::unsafe_location, "refusing the path '" + std::string(relative) + "': " + why,
                       "give a path inside the served folder");
    const auto real = fs::weakly_canonical(real_root / fs::path(std::string(relative)), ec);
    if (ec) return failure(error_code::io, "cannot resolve " + std::string(relative) + ": " + ec.message());
    if (!is_inside(real, real_root))
        return failure(error_code::unsafe_location,
                       "refusing the path '" + std::string(relative) + "': it links to " + real.string() +
                           ", outside the served folder",
                       "give a path inside the served folder");
    return real;
}

result<bool> data_resolver::accept_inside_model_folder(const fs::path& candidate) const {
    if (!exists_no_throw(candidate)) return false;
    std::error_code ec;
    const auto real = fs::weakly_canonical(candidate, ec);
    if (ec) return false;
    for (const auto& root : allowed_roots_)
        if (is_inside(real, root)) return true;
    return failure(error_code::unsafe_location,
                   "refusing to follow " + candidate.string() + ": it links to " + real.string() +
                       ", outside the model's folder",
                   "if you trust this link, pass the file explicitly with --data " + real.string());
}

result<resolved_location> data_resolver::search(std::string_view location) const {
    const fs::path relative{std::string(location)};
    const auto file_name = relative.filename();
    std::vector<std::string> tried;

    // 1. --data: by matching file name, or a single one serves every location.
    for (const auto& data : options_.data_files)
        if (data.filename() == file_name) return resolved_location{data, found_by::data_flag, "--data " + data.string()};
    if (options_.data_files.size() == 1)
        return resolved_location{options_.data_files.front(), found_by::data_flag, "--data " + options_.data_files.front().string()};
    for (const auto& data : options_.data_files) tried.push_back(data.string() + " (--data, name does not match)");

    // 2. next to the model.
    const auto beside = model_folder_ / relative;
    ONNXSTREAM_ASSIGN(const bool beside_ok, accept_inside_model_folder(beside));
    if (beside_ok) return resolved_location{beside, found_by::model_folder, "next to the model"};
    tried.push_back(beside.string());

    // 3. under each --data-dir: the location, then its file name.
    for (const auto& dir : options_.data_dirs) {
        const auto full = dir / relative;
        if (exists_no_throw(full)) return resolved_location{full, found_by::data_dir, "--data-dir " + dir.string()};
        tried.push_back(full.string());
        const auto by_name = dir / file_name;
        if (exists_no_throw(by_name))
            return resolved_location{by_name, found_by::data_dir_file_name, "file name under --data-dir " + dir.string()};
        tried.push_back(by_name.string());
    }

    // 4. the file name alone in the model's folder.
    if (relative.has_parent_path()) {
        const auto by_name = model_folder_ / file_name;
        ONNXSTREAM_ASSIGN(const bool ok, accept_inside_model_folder(by_name));
        if (ok) return resolved_location{by_name, found_by::file_name_in_model_folder, "file name in the model's folder"};
        tried.push_back(by_name.string());
    }

    // 5. the names exporters commonly use.
    const auto model_name = model_path_.filename().string();
    const auto stem = model_path_.stem().string();
    for (const auto& common : {model_name + ".data", stem + ".data", stem + ".bin", stem + ".onnx_data", model_name + "_data"}) {
        const auto candidate = model_folder_ / common;
        if (std::find(tried.begin(), tried.end(), candidate.string()) != tried.end()) continue;
        ONNXSTREAM_ASSIGN(const bool ok, accept_inside_model_folder(candidate));
        if (ok) return resolved_location{candidate, found_by::common_name, "common name " + common};
        tried.push_back(candidate.string());
    }

    // 6. the only data-like file in the model's folder.
    if (!data_like_) {
        data_like_.emplace();
        std::error_code ec;
        for (fs::directory_iterator it(model_folder_, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code type_error;
            if (it->is_regular_file(type_error) && looks_like_data(it->path())) data_like_->push_back(it->path());
            if (data_like_->size() > 1) break;
        }
    }
    const auto& data_like = *data_like_;
    if (data_like.size() == 1) {
        ONNXSTREAM_ASSIGN(const bool ok, accept_inside_model_folder(data_like.front()));
        if (ok)
            return resolved_location{data_like.front(), found_by::only_data_file,
                                     "the only data file in the model's folder"};
    }
    tried.push_back("any single data-like file in " + model_folder_.string() +
                    (data_like.size() > 1 ? " (there are several)" : " (there is none)"));

    std::string hint = "looked in:";
    for (const auto& t : tried) hint += "\n    " + t;
    hint += "\n  pass the file with --data FILE, or the folder holding it with --data-dir DIR";
    error e;
    e.code = error_code::missing_data;
    e.message = "cannot find the external data file '" + std::string(location) + "'";
    e.hint = std::move(hint);
    return failure(std::move(e));
}

result<resolved_location> data_resolver::resolve(std::string_view location) {
    if (const auto it = cache_.find(location); it != cache_.end()) return it->second;
    ONNXSTREAM_TRY(check_location_text(location));
    auto found = search(location);
    cache_.emplace(std::string(location), found);
    return found;
}

}  // namespace onnxstream::onnx
