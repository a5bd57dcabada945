#include "cli_common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace onnxstream::cli {

// ---------------------------------------------------------------- remedies and found files as flags

namespace {

// An argument that is a placeholder (FILE, DIR) or a path: a path is quoted as a shell
// needs it ("resnet18.onnx (1).data" broke on its space).
std::string with_argument(const char* flag, const std::string& argument) {
    return argument.empty() ? std::string(flag) : std::string(flag) + " " + shell_word(argument);
}

std::string flag_for(const remedy_step& step) {
    switch (step.change) {
        case remedy::replace_output: return "pass --force";
        case remedy::choose_output: return with_argument("-o", step.argument);
        case remedy::give_data_file: return with_argument("--data", step.argument);
        case remedy::give_data_folder: return with_argument("--data-dir", step.argument);
        case remedy::give_data_location: return "pass the file with --data FILE, or the folder holding it with --data-dir DIR";
        case remedy::refuse_guesses: return "--strict";
        case remedy::accept_size_mismatch: return "--allow-size-mismatch";
        case remedy::choose_data_name: return "--data-name";
        case remedy::repack_in_place: return "-o " + shell_word(step.argument) + " --force";
        case remedy::keep_external_data: return "'onnxstream repack'";
        case remedy::embed_weights: return "'onnxstream merge'";
        case remedy::inspect_model: return "'onnxstream inspect'";
        case remedy::optimize_first: return "'onnxstream optimize'";
        case remedy::give_input_shape: return with_argument("--input-shape", step.argument);
        case remedy::choose_dialect: return with_argument("--dialect", step.argument);
        case remedy::fewer_threads: return "--threads";
        case remedy::leave_out_check: return "--check";
        case remedy::reuse_data: return "--reuse-data";
        case remedy::choose_dtype: return with_argument("--dtype", step.argument);
    }
    return to_string(step.change);
}

// How a data file was found, as the flag that found it; guesses in the library's words.
std::string found_as_flag(const onnx::how_found& how, const std::filesystem::path& file) {
    switch (how.step) {
        case onnx::found_by::data_flag: return "--data " + shell_word(file.string());
        case onnx::found_by::model_folder: return "next to the model";
        case onnx::found_by::data_dir: return "--data-dir " + shell_word(how.data_dir.string());
        case onnx::found_by::data_dir_file_name: return "file name under --data-dir " + shell_word(how.data_dir.string());
        case onnx::found_by::file_name_in_model_folder:
        case onnx::found_by::common_name:
        case onnx::found_by::only_data_file: break;
    }
    return onnx::guess_words(how);
}

constexpr report::hint_wording flags{.word = flag_for, .found = found_as_flag};

}  // namespace

const report::hint_wording& flag_wording() noexcept { return flags; }

std::string shell_word(std::string_view text) {
    const auto plain = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string_view("_-./:@%+=,").find(c) != std::string_view::npos || static_cast<unsigned char>(c) >= 0x80;
    };
    if (!text.empty() && std::all_of(text.begin(), text.end(), plain)) return std::string(text);
#if defined(_WIN32)
    std::string quoted = "\"";
    for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
#else
    std::string quoted = "'";
    for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
#endif
}

// ---------------------------------------------------------------- printing

void print_error(const error& e) { print_text(stderr, "%s", report::error_text(e, report::severity::error, flags).c_str()); }

void print_warning(const error& e) { print_text(stderr, "%s", report::error_text(e, report::severity::warning, flags).c_str()); }

void print_warnings(std::span<const error> warnings) {
    for (const auto& w : warnings) print_warning(w);
}

void print_out(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void print_json(const std::string& document) { print_text(stdout, "%s\n", document.c_str()); }

// The pieces go out as they are: json_writer escapes every code point terminal_safe
// would (and replaces invalid UTF-8), so a document is already safe to print, and a
// piece may end inside a UTF-8 sequence, which terminal_safe would wrongly escape.
void print_json(const std::function<void(json_writer&)>& write) {
    json_writer json([](std::string_view piece) { print_out(piece); });
    write(json);
    json.flush();
    print_out("\n");
}

int exit_for(const error& e) {
    if (e.code == error_code::invalid_argument) return exit_usage;
    if (e.code == error_code::interrupted) return exit_interrupted;
    return exit_failed;
}

int fail(const error& e, bool json) {
    print_error(e);
    if (json) print_json(report::error_json(e, flags));
    return exit_for(e);
}

int usage_error(std::string_view command, const std::string& message) {
    print_text(stderr, "onnxstream: error: %s\n  run 'onnxstream %.*s --help' for usage\n", message.c_str(),
               static_cast<int>(command.size()), command.data());
    return exit_usage;
}

// ---------------------------------------------------------------- shared options

result<void> fill_rewrite_options(const parsed_arguments& args, ops::rewrite_options& options) {
    static_cast<onnx::open_options&>(options) = open_options_from(args);
    options.force = args.flag("--force");
    ONNXSTREAM_TRY(read_threads(args, options.threads));
    if (const auto writer = args.value("--writer")) {
        if (*writer == "portable") options.backend = io::writer_backend::portable;
        else if (*writer == "io_uring" || *writer == "uring") options.backend = io::writer_backend::io_uring;
        else if (*writer == "overlapped") options.backend = io::writer_backend::overlapped;
        else if (*writer == "auto") options.backend = io::writer_backend::automatic;
        else return failure(error_code::invalid_argument, "--writer takes auto, io_uring, overlapped or portable");
    }
    options.backend = writer_from_environment(options.backend);
    return {};
}

io::writer_backend writer_from_environment(io::writer_backend chosen) {
    if (chosen != io::writer_backend::automatic) return chosen;
    const char* forced = std::getenv("ONNXSTREAM_WRITER");
    return forced != nullptr && std::string_view(forced) == "portable" ? io::writer_backend::portable : chosen;
}

result<void> read_size(const parsed_arguments& args, std::string_view name, std::optional<std::uint64_t>& target) {
    const auto text = args.value(name);
    if (!text) return {};
    ONNXSTREAM_ASSIGN(target, parse_size(*text, name));
    return {};
}

result<void> read_size(const parsed_arguments& args, std::string_view name, std::uint64_t& target) {
    std::optional<std::uint64_t> size;
    ONNXSTREAM_TRY(read_size(args, name, size));
    if (size) target = *size;
    return {};
}

result<void> read_shard_size(const parsed_arguments& args, std::uint64_t& target) {
    ONNXSTREAM_TRY(read_size(args, "--shard-size", target));
    if (args.flag("--shard-size") && target == 0)
        return failure(error_code::invalid_argument, "--shard-size must be more than 0");
    return {};
}

result<void> read_threads(const parsed_arguments& args, unsigned& target) {
    if (const auto threads = args.value("--threads")) {
        ONNXSTREAM_ASSIGN(target, parse_count(*threads, "--threads"));
    }
    return {};
}

prepared prepare(std::string_view name, std::string_view help, std::span<const std::string> argv,
                 std::span<const option_spec> options) {
    prepared p;
    auto parsed = parse_arguments(argv, options);
    if (!parsed) {
        p.status = usage_error(name, parsed.error().message);
        return p;
    }
    if (parsed->flag("--help")) {
        print_text(stdout, "%.*s", static_cast<int>(help.size()), help.data());
        p.status = exit_ok;
        return p;
    }
    p.flags.quiet = parsed->flag("--quiet");
    p.flags.json = parsed->flag("--json");
    p.args = std::move(parsed).value();
    return p;
}

onnx::open_options open_options_from(const parsed_arguments& args) {
    onnx::open_options options;
    for (const auto& d : args.values("--data")) options.data.data_files.emplace_back(d);
    for (const auto& d : args.values("--data-dir")) options.data.data_dirs.emplace_back(d);
    options.strict = args.flag("--strict");
    options.allow_size_mismatch = args.flag("--allow-size-mismatch");
    return options;
}

}  // namespace onnxstream::cli
