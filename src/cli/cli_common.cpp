#include "cli_common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

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

io::writer_backend writer_from_environment(io::writer_backend chosen) {
    if (chosen != io::writer_backend::automatic) return chosen;
    const char* forced = std::getenv("ONNXSTREAM_WRITER");
    return forced != nullptr && std::string_view(forced) == "portable" ? io::writer_backend::portable : chosen;
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

}  // namespace onnxstream::cli

// ---------------------------------------------------------------- commands of the library's table

namespace onnxstream::cli {

namespace {

// A table command's option specs, made once per command: option_spec holds views, and
// these strings ("--data-name") live as long as the program.
struct generated_options {
    std::vector<std::string> names;  // never resized after the specs point into it
    std::vector<option_spec> specs;
};

const generated_options& options_for(const api::command_spec& spec, std::span<const option_spec> extra) {
    static std::mutex lock;
    static std::map<std::pair<const api::command_spec*, std::size_t>, std::unique_ptr<generated_options>> made;
    std::lock_guard guard(lock);
    auto& slot = made[{&spec, extra.size()}];
    if (slot) return *slot;
    slot = std::make_unique<generated_options>();
    slot->names.reserve(spec.parameters.size());
    for (const auto& p : spec.parameters)
        if (!p.positional && p.on(api::surface::cli)) slot->names.push_back("--" + std::string(p.name));
    slot->specs = {opt_help, opt_quiet, opt_json};
    std::size_t i = 0;
    for (const auto& p : spec.parameters) {
        if (p.positional || !p.on(api::surface::cli)) continue;
        slot->specs.push_back(option_spec{.name = slot->names[i++],
                                          .short_name = p.short_name,
                                          .takes_value = p.kind != api::value_kind::flag,
                                          .repeatable = p.repeatable});
    }
    for (const auto& o : extra) slot->specs.push_back(o);
    return *slot;
}

// `text` wrapped at `width` columns, its lines after the first indented by `indent`.
std::string wrapped(std::string_view text, std::size_t indent, std::size_t first_column, std::size_t width) {
    std::string out;
    std::size_t column = first_column;
    while (!text.empty()) {
        const auto space = text.find(' ');
        const auto word = text.substr(0, space);
        if (column > indent && column + 1 + word.size() > width) {
            out += "\n" + std::string(indent, ' ');
            column = indent;
        } else if (column > indent || (column == indent && !out.empty() && out.back() != ' ')) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
        if (space == std::string_view::npos) break;
        text.remove_prefix(space + 1);
    }
    return out;
}

std::string default_words(const api::parameter& p) {
    if (p.default_value.empty() || p.kind == api::value_kind::flag) return {};
    return " (default " + std::string(p.default_value) + ")";
}

}  // namespace

const api::command_spec& table_spec(std::string_view name) {
    const auto* spec = api::find_command(name);
    if (spec == nullptr) throw std::logic_error("the command table has no '" + std::string(name) + "'");
    return *spec;
}

std::string help_text(const table_command& command) {
    constexpr std::size_t width = 100;
    constexpr std::size_t help_column = 28;
    std::string text = "usage: onnxstream " + std::string(command.words) + " " + std::string(command.usage) + "\n\n";
    text += wrapped(command.spec.description, 0, 0, width) + "\n\n";
    for (const auto& p : command.spec.parameters) {
        if (!p.on(api::surface::cli) || p.hidden) continue;
        std::string left = "  ";
        if (p.positional) left += std::string(p.placeholder);
        else {
            if (!p.short_name.empty()) left += std::string(p.short_name) + ", ";
            left += "--" + std::string(p.name);
            if (p.kind != api::value_kind::flag) left += " " + std::string(p.placeholder);
            if (p.repeatable) left += "...";
        }
        if (left.size() + 1 >= help_column) left += "\n" + std::string(help_column, ' ');
        else left.resize(help_column, ' ');
        text += left + wrapped(api::parameter_help(command.spec, p) + default_words(p), help_column, help_column, width) + "\n";
    }
    text += "  --json" + std::string(help_column - 8, ' ') + "print a JSON document on stdout\n";
    text += "  -q, --quiet" + std::string(help_column - 13, ' ') + "print nothing but warnings and errors\n";
    if (!command.epilog.empty()) text += "\n" + std::string(command.epilog);
    return text;
}

prepared_values prepare(const table_command& command, std::span<const std::string> argv, std::span<const option_spec> extra) {
    prepared_values p;
    p.spec = &command.spec;
    auto parsed = parse_arguments(argv, options_for(command.spec, extra).specs);
    if (!parsed) {
        p.status = usage_error(command.words, parsed.error().message);
        return p;
    }
    if (parsed->flag("--help")) {
        const auto help = help_text(command);
        print_text(stdout, "%s", help.c_str());
        return p;
    }
    p.flags.quiet = parsed->flag("--quiet");
    p.flags.json = parsed->flag("--json");
    api::parameter_values values;
    std::size_t next = 0;  // the next positional word
    for (const auto& param : command.spec.parameters) {
        if (!param.on(api::surface::cli)) continue;
        if (param.positional) {
            if (next >= parsed->positionals.size()) continue;  // the reader says it is missing
            const std::size_t take = param.repeatable ? parsed->positionals.size() - next : 1;
            for (std::size_t i = 0; i < take; ++i) values.add(param.name, parsed->positionals[next++]);
            continue;
        }
        const std::string flag = "--" + std::string(param.name);
        for (auto& v : parsed->values(flag)) values.add(param.name, param.kind == api::value_kind::flag ? "1" : std::move(v));
    }
    if (next < parsed->positionals.size()) {
        std::string takes;
        for (const auto& param : command.spec.parameters)
            if (param.positional) takes += (takes.empty() ? "" : " ") + std::string(param.placeholder);
        p.status = usage_error(command.words, std::string(command.words) + " takes " + takes + ", not '" +
                                                  terminal_safe(parsed->positionals[next]) + "' too");
        return p;
    }
    const api::parameter_reader reader(command.spec.parameters, values, api::front_end::cli);
    if (auto checked = reader.check(); !checked) {
        p.status = usage_error(command.words, checked.error().message);
        return p;
    }
    p.values = std::move(values);
    return p;
}

int option_error(std::string_view command, const error& e, bool json) {
    if (e.code == error_code::invalid_argument && e.hint.empty()) return usage_error(command, e.message);
    return fail(e, json);
}

}  // namespace onnxstream::cli
