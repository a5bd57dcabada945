#include "cli_common.hpp"

#include <cstdio>

namespace onnxstream::cli {

// ---------------------------------------------------------------- printing

// The message is one line whatever a model's strings hold; a hint may list several.
void print_error(const error& e) {
    print_text(stderr, "onnxstream: error: %s\n", terminal_safe(e.describe()).c_str());
    if (!e.hint.empty()) print_text(stderr, "  %s\n", e.hint.c_str());
}

void print_warning(const error& e) {
    print_text(stderr, "onnxstream: warning: %s\n", terminal_safe(e.describe()).c_str());
    if (!e.hint.empty()) print_text(stderr, "  %s\n", e.hint.c_str());
}

void write_error_json(json_writer& json, const error& e) {
    report::write_error(json, e);
}

int exit_for(const error& e) {
    if (e.code == error_code::invalid_argument) return exit_usage;
    if (e.code == error_code::interrupted) return exit_interrupted;
    return exit_failed;
}

int fail(const error& e, bool json) {
    print_error(e);
    if (json) {
        print_text(stdout, "%s\n", report::error_json(e).c_str());
    }
    return exit_for(e);
}

int usage_error(std::string_view command, const std::string& message) {
    print_text(stderr, "onnxstream: error: %s\n  run 'onnxstream %.*s --help' for usage\n", message.c_str(),
               static_cast<int>(command.size()), command.data());
    return exit_usage;
}

std::string plural(std::uint64_t n, std::string_view word) {
    return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

// ---------------------------------------------------------------- shared options


result<void> fill_rewrite_options(const parsed_arguments& args, ops::rewrite_options& options) {
    for (const auto& d : args.values("--data")) options.data.data_files.emplace_back(d);
    for (const auto& d : args.values("--data-dir")) options.data.data_dirs.emplace_back(d);
    options.force = args.flag("--force");
    options.allow_size_mismatch = args.flag("--allow-size-mismatch");
    options.strict = args.flag("--strict");
    if (const auto threads = args.value("--threads")) {
            ONNXSTREAM_ASSIGN(options.threads, parse_count(*threads, "--threads"));
        }
    if (const auto writer = args.value("--writer")) {
        if (*writer == "portable") options.backend = io::writer_backend::portable;
        else if (*writer == "io_uring" || *writer == "uring") options.backend = io::writer_backend::io_uring;
        else if (*writer == "overlapped") options.backend = io::writer_backend::overlapped;
        else if (*writer == "auto") options.backend = io::writer_backend::automatic;
        else return failure(error_code::invalid_argument, "--writer takes auto, io_uring, overlapped or portable");
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

std::function<void(const ops::progress_event&)> progress_to(progress_bar& bar) {
    return [&bar](const ops::progress_event& event) { bar.update(event); };
}

onnx::resolve_options data_options(const parsed_arguments& args) {
    onnx::resolve_options data;
    for (const auto& d : args.values("--data")) data.data_files.emplace_back(d);
    for (const auto& d : args.values("--data-dir")) data.data_dirs.emplace_back(d);
    return data;
}

}  // namespace onnxstream::cli
