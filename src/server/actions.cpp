#include "actions.hpp"

#include <onnxstream/report/json_writer.hpp>

#include <mutex>

namespace onnxstream::server {

namespace fs = std::filesystem;

namespace {

std::string field(std::string_view name) { return "the field '" + std::string(name) + "'"; }

std::string page_words(const remedy_step& step) {
    switch (step.change) {
        case remedy::replace_output: return "tick 'force'";
        case remedy::choose_output: return field("output");
        case remedy::give_data_file: return field("data");
        case remedy::give_data_folder: return field("data-dir");
        case remedy::give_data_location:
            return "drop the file on the page to copy it beside the model, or give it in an action's 'data' or 'data-dir' field";
        case remedy::refuse_guesses: return "'strict'";
        case remedy::accept_size_mismatch: return "'allow-size-mismatch'";
        case remedy::choose_data_name: return field("data-name");
        case remedy::repack_in_place: return "Repack with 'force' ticked and no other output";
        case remedy::keep_external_data: return "Repack";
        case remedy::embed_weights: return "Merge";
        case remedy::inspect_model: return "the model's page";
        case remedy::optimize_first: return "Optimize";
        case remedy::give_input_shape: return field("input-shape");
        case remedy::choose_dialect: return field("dialect") + (step.argument.empty() ? "" : " set to " + step.argument);
        case remedy::fewer_threads: return field("threads");
        case remedy::leave_out_check: return "'check'";
        case remedy::reuse_data: return "'reuse-data'";
        case remedy::choose_dtype: return field("dtype") + (step.argument.empty() ? "" : " set to " + step.argument);
    }
    return to_string(step.change);
}

// How a data file was found, for people who never open a terminal (app.js words the
// model page's table the same way).
std::string page_found(const onnx::how_found& how, const fs::path&) {
    switch (how.step) {
        case onnx::found_by::data_flag: return "the data file you gave";
        case onnx::found_by::model_folder: return "next to the model";
        case onnx::found_by::data_dir: return "in the folder you gave";
        case onnx::found_by::data_dir_file_name: return "by its file name, in the folder you gave";
        case onnx::found_by::file_name_in_model_folder: return "guessed: a file of that name next to the model";
        case onnx::found_by::common_name: return "guessed: a usual name for a model's data";
        case onnx::found_by::only_data_file: return "guessed: the only data file next to the model";
    }
    return to_string(how.step);
}

constexpr report::hint_wording page_words_table{.word = page_words, .list_remedies = true, .found = page_found};

}  // namespace

const report::hint_wording& page_wording() noexcept { return page_words_table; }

namespace {

const char* to_string(api::value_kind kind) {
    switch (kind) {
        case api::value_kind::text: return "text";
        case api::value_kind::path: return "path";
        case api::value_kind::model: return "model";
        case api::value_kind::size: return "size";
        case api::value_kind::count: return "count";
        case api::value_kind::number: return "number";
        case api::value_kind::flag: return "flag";
        case api::value_kind::choice: return "choice";
    }
    return "text";
}

std::vector<action> make_actions() {
    std::vector<action> made;
    for (const auto& c : api::commands()) {
        if ((c.surfaces & api::surface::page) == 0) continue;
        action a{.command = &c, .name = c.name, .fields = {}, .cached_result = c.cached_result};
        for (const auto& p : c.parameters)
            if (p.on(api::surface::page) && p.name != "model") a.fields.push_back(&p);
        made.push_back(std::move(a));
    }
    return made;
}

const std::vector<action>& action_table() {
    static const std::vector<action> table = make_actions();
    return table;
}

}  // namespace

api::parameter_values action_input::values() const {
    api::parameter_values v;
    for (const auto& [name, value] : fields) v.add(name, value);
    v.set("model", model.string());
    return v;
}

std::span<const action> actions() { return action_table(); }

const action* find_action(std::string_view name) {
    for (const auto& a : action_table())
        if (a.name == name) return &a;
    return nullptr;
}

namespace {

// The model is a name the server or the worker made already; every other path goes
// through `locate`, which confines it beneath the folder.
api::path_locator locator(const action_input& input) {
    return [&input](std::string_view parameter, std::string_view value) -> result<fs::path> {
        if (parameter == "model") return input.model;
        if (!input.locate) return failure(error_code::invalid_argument, "it cannot be used here");
        return input.locate(parameter, value);
    };
}

}  // namespace

result<action_outcome> run_action(const action& a, const action_input& input) {
    const api::run_context context{
        .cancel = input.cancel, .on_progress = input.on_progress, .writer = input.writer, .wording = &page_wording()};
    return api::run_command(*a.command, input.values(), api::front_end::page, context, locator(input));
}

result<void> check_paths(const action& a, const action_input& input) {
    const auto values = input.values();
    const api::parameter_reader reader(a.command->parameters, values, api::front_end::page, locator(input));
    ONNXSTREAM_TRY(reader.check());
    for (const auto* f : a.fields)
        if (f->kind == api::value_kind::path || f->kind == api::value_kind::model) ONNXSTREAM_TRY(reader.paths(f->name));
    return {};
}

result<fs::path> planned_output(const action& a, const action_input& input) {
    const auto values = input.values();
    const api::parameter_reader reader(a.command->parameters, values, api::front_end::page, locator(input));
    return api::planned_output(*a.command, reader);
}

std::string default_output_name(const action& a, const fs::path& model,
                                const std::map<std::string, std::string, std::less<>>& fields) {
    if (!a.command->writes()) return {};
    action_input input;
    input.model = model;
    input.fields = fields;
    input.fields.erase("output");  // what it is when left empty
    // No locate: a name that depends on another path field is not guessed.
    const auto output = planned_output(a, input);
    return output ? output->generic_string() : std::string();
}

std::string actions_json() {
    report::json_writer json;
    json.begin_array();
    for (const auto& a : action_table()) {
        const auto& c = *a.command;
        json.begin_object().field("name", c.name).field("title", c.title).field("summary", c.summary);
        json.field("description", c.description).field("writes", c.writes()).key("fields").begin_array();
        for (const auto* f : a.fields) {
            json.begin_object().field("name", f->name).field("kind", to_string(f->kind)).field("default", f->default_value);
            json.field("help", api::parameter_help(c, *f)).field("label", f->label);
            json.key("choices").begin_array();
            for (const auto choice : f->choices) json.value(choice);
            json.end_array().field("repeatable", f->repeatable).field("required", f->required).end_object();
        }
        json.end_array().end_object();
    }
    json.end_array();
    return json.text();
}

}  // namespace onnxstream::server
