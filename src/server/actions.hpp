// The actions the page offers: the commands of the library's table (api/commands.hpp)
// that name the page among their front ends, each with its form fields. A command that
// joins the table with the page among its surfaces is on the page too.
#pragma once

#include <onnxstream/api/commands.hpp>
#include <onnxstream/ops/rewrite_options.hpp>
#include <onnxstream/report/hint_text.hpp>
#include <onnxstream/result.hpp>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream::server {

struct action_input {
    std::filesystem::path root;   // canonical
    std::filesystem::path model;  // a name for the model beneath root (see `locate`)
    std::map<std::string, std::string, std::less<>> fields;
    /// Turns a path field's value (relative to root) into a name to open: in a job's
    /// worker a name pinned beneath root by descriptor (served_folder::pin), in the server
    /// (which only checks fields and claims outputs) the place it shows.
    api::path_locator locate;
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const ops::progress_event&)> on_progress;
    io::writer_backend writer = io::writer_backend::automatic;

    /// The values as the command table reads them: the fields, and the model.
    [[nodiscard]] api::parameter_values values() const;
};

using action_outcome = api::command_outcome;

/// A command of the library's table that the page offers (api::surface::page).
struct action {
    const api::command_spec* command = nullptr;
    std::string_view name;
    std::vector<const api::parameter*> fields;  // the form: the page's parameters but the model
    bool cached_result = false;
};

/// Runs the action over the library's table, values read as the page names them.
[[nodiscard]] result<action_outcome> run_action(const action& a, const action_input& input);
/// Checks every path field (it must locate beneath root).
[[nodiscard]] result<void> check_paths(const action& a, const action_input& input);

[[nodiscard]] std::span<const action> actions();

/// Remedies worded for the page: its fields, its buttons, dropping a file on it. JSON
/// documents for the page also list them as data ({"change", "argument"}).
[[nodiscard]] const report::hint_wording& page_wording() noexcept;
[[nodiscard]] const action* find_action(std::string_view name);

/// The model file an action will write (claimed so two jobs never write one output).
[[nodiscard]] result<std::filesystem::path> planned_output(const action& a, const action_input& input);

/// The output an action writes when its output field is left empty, named as the command
/// line names it (<stem>.<suffix>.onnx beside `model`, or as the other `fields` choose:
/// convert's dtype, quantize's weights), with `model` relative to the served folder; ""
/// for an action that writes no model, or whose output depends on another path field.
/// Only names are computed: nothing is opened.
[[nodiscard]] std::string default_output_name(const action& a, const std::filesystem::path& model,
                                              const std::map<std::string, std::string, std::less<>>& fields);

/// The page's actions as JSON: the library's table (api::commands_json) reduced to what the
/// page shows: [{"name","title","summary","description","writes","fields":[{"name","kind",
/// "default","help","label","choices","repeatable","required"}]}].
[[nodiscard]] std::string actions_json();

}  // namespace onnxstream::server
