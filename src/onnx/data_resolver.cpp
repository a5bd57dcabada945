#include <onnxstream/onnx/data_resolver.hpp>

#include <onnxstream/io/chunked_read.hpp>

#include <algorithm>
#include <array>
#include <cwctype>

namespace onnxstream::onnx {

namespace fs = std::filesystem;

bool is_inside(const fs::path& child, const fs::path& root) {
    auto c = child.begin();
    for (auto r = root.begin(); r != root.end(); ++r, ++c) {
        if (r->empty()) continue;  // a trailing separator
        if (c == child.end() || *c != *r) return false;
    }
    return true;
}

namespace {

// File names as the platform compares them: Windows' are case-insensitive.
bool same_file_name(const fs::path& a, const fs::path& b) {
#if defined(_WIN32)
    const auto& x = a.native();
    const auto& y = b.native();
    return x.size() == y.size() &&
           std::equal(x.begin(), x.end(), y.begin(), [](wchar_t l, wchar_t r) { return std::towlower(l) == std::towlower(r); });
#else
    return a == b;
#endif
}

}  // namespace

bool looks_like_data(const fs::path& p) {
    static constexpr std::array<std::string_view, 6> extensions{".data", ".bin", ".onnx_data", ".weights", ".raw", ".pb"};
    const auto name = p.filename().string();
    if (name.empty() || name.front() == '.') return false;
    if (name.size() > 5 && name.ends_with("_data")) return true;
    const auto extension = p.extension().string();
    return std::find(extensions.begin(), extensions.end(), extension) != extensions.end();
}

namespace {

// Where a folder really is, as the data files' real paths are told (located_file): the
// two must agree letter for letter for `is_inside`, on Windows in their case too.
std::optional<fs::path> real_folder(const fs::path& folder) {
    auto located = io::located_file::locate(folder);
    if (!located || !located->is_directory()) return std::nullopt;
    return located->real_path();
}

// The Hugging Face cache keeps `<repo>/snapshots/<rev>/<any/depth/>model.onnx` with files
// linked into `<repo>/blobs/`. Only a real folder counts: a `blobs` that is itself a link
// (to `/`, say) would make every link "inside".
std::optional<fs::path> hub_blobs(const fs::path& model_folder) {
    for (auto folder = model_folder; folder.has_parent_path() && folder != folder.parent_path(); folder = folder.parent_path()) {
        const auto snapshots = folder.parent_path();
        if (snapshots.filename() != "snapshots") continue;
        const auto repository = snapshots.parent_path();
        const auto blobs = repository / "blobs";
        std::error_code status_error;
        if (!fs::is_directory(fs::symlink_status(blobs, status_error))) return std::nullopt;
        const auto real_blobs = real_folder(blobs);
        const auto real_repository = real_folder(repository);
        if (!real_blobs || !real_repository || real_blobs->parent_path() != *real_repository) return std::nullopt;
        return real_blobs;
    }
    return std::nullopt;
}

// Reads [offset, offset + length) of `file` through a fixed buffer into a SHA-1.
result<io::sha1_digest> sha1_of_range(const io::source_file& file, std::uint64_t offset, std::uint64_t length) {
    io::sha1_hasher hasher;
    ONNXSTREAM_TRY(io::for_each_chunk(file, offset, length, [&](std::span<const std::byte> piece) { hasher.update(piece); }));
    return hasher.finish();
}

// Why a guessed file cannot be this location's data, or nothing when it fits.
result<std::optional<std::string>> misfit(const io::source_file& file, const data_needs& needs) {
    if (file.size() < needs.bytes)
        return std::optional<std::string>("it is " + std::to_string(file.size()) + " bytes, the tensors need " +
                                          std::to_string(needs.bytes));
    for (const auto& check : needs.checksums) {
        if (check.offset > file.size()) return std::optional<std::string>("it is too short for a checksummed tensor");
        const auto length = check.length.value_or(file.size() - check.offset);
        if (length > file.size() - check.offset) return std::optional<std::string>("it is too short for a checksummed tensor");
        ONNXSTREAM_ASSIGN(const auto digest, sha1_of_range(file, check.offset, length));
        if (digest != check.digest)
            return std::optional<std::string>("the " + std::to_string(length) + " bytes at offset " +
                                              std::to_string(check.offset) + " do not match their SHA-1 checksum");
    }
    return std::optional<std::string>();
}

}  // namespace

data_resolver::data_resolver(fs::path model_path, resolve_options options)
    : model_path_(std::move(model_path)), options_(std::move(options)) {
    std::error_code ignored;
    model_folder_ = fs::absolute(model_path_, ignored).lexically_normal().parent_path();
    if (const auto real = real_folder(model_folder_)) allowed_roots_.push_back(*real);
    if (const auto blobs = hub_blobs(model_folder_)) allowed_roots_.push_back(*blobs);
    // A folder the user names with --data-dir is trusted, also as the target of links.
    for (const auto& dir : options_.data_dirs)
        if (const auto real = real_folder(dir)) allowed_roots_.push_back(*real);
}

namespace {

// Why a relative path written by someone else may not be followed, or empty; `folder`
// names the folder it must stay in.
std::string unsafe_because(std::string_view location, std::string_view folder) {
    if (location.find('\0') != std::string_view::npos) return "it contains a NUL byte";
    const fs::path p{std::string(location)};
    if (p.is_absolute() || location.front() == '/' || location.front() == '\\' || (location.size() > 1 && location[1] == ':'))
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
        return failure(error_code::unsafe_location, "refusing external data location '" + std::string(location) + "': " + why,
                       "a model may only reference data files inside its own folder; if you trust this model, "
                       "pass the file with {0}",
                       {{remedy::give_data_file, "FILE"}});
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
        return failure(
            error_code::unsafe_location,
            "refusing the path '" + std::string(relative) + "': it links to " + real.string() + ", outside the served folder",
            "give a path inside the served folder");
    return real;
}

result<std::optional<io::source_file>> data_resolver::try_candidate(const fs::path& candidate, trust level,
                                                                    std::string_view guess_label, const data_needs& needs,
                                                                    std::vector<std::string>& tried) const {
    using nothing = std::optional<io::source_file>;
    auto located = io::located_file::locate(candidate);
    if (!located) {
        if (located.error().code != error_code::missing_data) return failure(std::move(located).error());
        tried.push_back(quoted_in_hint(candidate.string()));
        return nothing();
    }
    if (located->is_directory()) {
        tried.push_back(quoted_in_hint(candidate.string()) + " (a folder, not a file)");
        return nothing();
    }
    // Confinement is decided on where the located file really is, and that file is the
    // one opened below: a link flipped in between changes nothing.
    if (level == trust::confined && std::none_of(allowed_roots_.begin(), allowed_roots_.end(),
                                                 [&](const fs::path& root) { return is_inside(located->real_path(), root); }))
        return failure(error_code::unsafe_location,
                       "refusing to follow " + candidate.string() + ": it links to " + located->real_path().string() +
                           ", outside the model's folder",
                       "if you trust this link, pass the file explicitly with {0}",
                       {{remedy::give_data_file, located->real_path().string()}});
    if (!guess_label.empty() && !located->is_regular()) {  // a FIFO or device is nobody's weights
        tried.push_back(quoted_in_hint(candidate.string() + " (" + std::string(guess_label) + ": not a regular file)"));
        return nothing();
    }
    if (!guess_label.empty() && !options_.allow_guesses) {
        tried.push_back(quoted_in_hint(candidate.string() + " (" + std::string(guess_label)) + ": a guess, not taken with {1})");
        return nothing();
    }
    ONNXSTREAM_ASSIGN(auto file, located->open(false));
    if (!guess_label.empty()) {
        ONNXSTREAM_ASSIGN(const auto why_not, misfit(file, needs));
        if (why_not) {
            tried.push_back(
                quoted_in_hint(candidate.string() + " (" + std::string(guess_label) + ": a guess, not taken: " + *why_not + ")"));
            return nothing();
        }
    }
    return nothing(std::move(file));
}

namespace {

const fs::path* given_data_file(const std::vector<fs::path>& data_files, const fs::path& file_name) {
    for (const auto& data : data_files)
        if (same_file_name(data.filename(), file_name)) return &data;
    return data_files.size() == 1 ? &data_files.front() : nullptr;
}

// A location naming a folder: by its text (a trailing separator, whatever is on disk), or
// because that is what is there.
result<void> refuse_folder(std::string_view location, const fs::path& as_written) {
    if (location.back() == '/' || location.back() == '\\')
        return failure(
            error_code::invalid_tensor,
            "the external data location '" + std::string(location) + "' ends with a separator: it names a folder, not a file",
            "the model is damaged (its location must name the data file): fix it, or pass the data file "
            "with {0}",
            {{remedy::give_data_file, "FILE"}});
    auto located = io::located_file::locate(as_written);
    if (located && located->is_directory())
        return failure(
            error_code::invalid_tensor,
            "the external data location '" + std::string(location) + "' is a directory (" + as_written.string() + "), not a file",
            "the model is damaged or the folder is not its data: pass the data file with {0}",
            {{remedy::give_data_file, "FILE"}});
    return {};
}

// The data-like files of `folder`, the first `max_listed_candidates + 1` of them: step 6
// takes the only one, and when there are several the error names them and which fit.
constexpr std::size_t max_listed_candidates = 8;
std::vector<fs::path> data_like_files(const fs::path& folder) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        if (it->is_regular_file(type_error) && looks_like_data(it->path())) out.push_back(it->path());
        if (out.size() > max_listed_candidates) break;
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Whether one of several candidates would fit, in the words of a line of the error: the
// user picks the file to pass with --data from these.
std::string fit_of(const fs::path& candidate, const data_needs& needs) {
    auto located = io::located_file::locate(candidate);
    if (!located) return "cannot be read";
    auto file = located->open(false);
    if (!file) return "cannot be read";
    const auto why_not = misfit(*file, needs);
    if (!why_not) return "cannot be read";
    return *why_not ? "does not fit: " + **why_not : "fits (it holds every byte the tensors need)";
}

failure not_found(std::string_view location, const std::vector<std::string>& tried) {
    std::string hint = "looked in:";
    for (const auto& t : tried) hint += "\n    " + t;
    hint += "\n  {0}";
    error e;
    e.code = error_code::missing_data;
    e.message = "cannot find the external data file '" + std::string(location) + "'";
    e.hint = std::move(hint);
    e.remedies = {{remedy::give_data_location, {}}};
    // A guess left out because guesses are refused names that setting as {1}.
    const auto refused_guess = [](const std::string& t) { return t.ends_with(": a guess, not taken with {1})"); };
    if (std::any_of(tried.begin(), tried.end(), refused_guess)) e.remedies.push_back({remedy::refuse_guesses, {}});
    return failure(std::move(e));
}

}  // namespace

result<opened_location> data_resolver::search(std::string_view location, const data_needs& needs) const {
    const fs::path relative{std::string(location)};
    const auto file_name = relative.filename();
    const auto as_written = model_folder_ / relative;
    std::vector<std::string> tried;
    auto found = [&](io::source_file file, const fs::path& path, how_found how) {
        return opened_location{resolved_location{path, std::move(how), as_written}, std::move(file)};
    };
    std::vector<fs::path> attempted;  // each path is tried once, whichever steps name it
    auto attempt = [&](const fs::path& candidate, trust level,
                       std::string_view guess_label = {}) -> result<std::optional<io::source_file>> {
        if (std::find(attempted.begin(), attempted.end(), candidate) != attempted.end()) return std::optional<io::source_file>();
        attempted.push_back(candidate);
        return try_candidate(candidate, level, guess_label, needs, tried);
    };

    // 1. --data: by matching file name, or a single one serves every location.
    if (const auto* given = given_data_file(options_.data_files, file_name)) {
        ONNXSTREAM_ASSIGN(auto file, io::source_file::open(*given, false));
        return found(std::move(file), *given, {.step = found_by::data_flag});
    }
    for (const auto& data : options_.data_files)
        tried.push_back(quoted_in_hint(data.string()) + " (a data file given: its name does not match)");

    // 2. the location as written, under the model's folder.
    ONNXSTREAM_TRY(refuse_folder(location, as_written));
    ONNXSTREAM_ASSIGN(auto beside, attempt(as_written, trust::confined));
    if (beside) return found(std::move(*beside), as_written, {.step = found_by::model_folder});

    // 3. under each --data-dir: the location, then its file name.
    for (const auto& dir : options_.data_dirs) {
        const auto full = dir / relative;
        ONNXSTREAM_ASSIGN(auto in_dir, attempt(full, trust::user_given));
        if (in_dir) return found(std::move(*in_dir), full, {.step = found_by::data_dir, .data_dir = dir});
        const auto by_name = dir / file_name;
        ONNXSTREAM_ASSIGN(auto named, attempt(by_name, trust::user_given));
        if (named) return found(std::move(*named), by_name, {.step = found_by::data_dir_file_name, .data_dir = dir});
    }

    // 4. the file name alone in the model's folder.
    if (relative.has_parent_path()) {
        const auto by_name = model_folder_ / file_name;
        const how_found how{.step = found_by::file_name_in_model_folder};
        ONNXSTREAM_ASSIGN(auto named, attempt(by_name, trust::confined, guess_words(how)));
        if (named) return found(std::move(*named), by_name, how);
    }

    // 5. the names exporters commonly use.
    const auto model_name = model_path_.filename().string();
    const auto stem = model_path_.stem().string();
    for (const auto& common : {model_name + ".data", stem + ".data", stem + ".bin", stem + ".onnx_data", model_name + "_data"}) {
        const auto candidate = model_folder_ / common;
        const how_found how{.step = found_by::common_name, .common_name = common};
        ONNXSTREAM_ASSIGN(auto named, attempt(candidate, trust::confined, guess_words(how)));
        if (named) return found(std::move(*named), candidate, how);
    }

    // 6. the only data-like file in the model's folder.
    if (!data_like_) data_like_ = data_like_files(model_folder_);
    const auto& data_like = *data_like_;
    if (data_like.size() == 1) {
        const how_found how{.step = found_by::only_data_file};
        ONNXSTREAM_ASSIGN(auto only, attempt(data_like.front(), trust::confined, guess_words(how)));
        if (only) return found(std::move(*only), data_like.front(), how);
    } else if (data_like.empty()) {
        tried.push_back("any single data-like file in " + quoted_in_hint(model_folder_.string()) + " (there is none)");
    } else {
        // Several: none is guessed, but the user is shown which would do.
        std::string listed = "the data-like files in " + quoted_in_hint(model_folder_.string()) +
                             ", none taken since there are several:";
        for (std::size_t i = 0; i < std::min(data_like.size(), max_listed_candidates); ++i)
            listed += "\n      " + quoted_in_hint(data_like[i].filename().string()) + " " + fit_of(data_like[i], needs);
        if (data_like.size() > max_listed_candidates) listed += "\n      ... and more";
        tried.push_back(std::move(listed));
    }

    return not_found(location, tried);
}

result<opened_location> data_resolver::resolve(std::string_view location, const data_needs& needs) {
    ONNXSTREAM_TRY(check_location_text(location));
    return search(location, needs);
}

}  // namespace onnxstream::onnx
