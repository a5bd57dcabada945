// The actions the page offers, as one table: each entry names the command, its form
// fields (the CLI's options, same defaults) and how to run it over the library. Adding a
// command to the page (convert, export) is one more entry in actions.cpp.
#pragma once

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

enum class field_kind : std::uint8_t { text, path, model, size, count, flag };

struct field_spec {
    std::string_view name;  // form field, the CLI option without dashes ("data-name")
    field_kind kind = field_kind::text;
    std::string_view default_value;  // as the CLI's default ("" when the CLI computes it)
    std::string_view help;
};

struct action_input {
    std::filesystem::path root;   // canonical
    std::filesystem::path model;  // a name for the model beneath root (see `locate`)
    std::map<std::string, std::string, std::less<>> fields;
    /// Turns a path field's value (relative to root) into a name to open: in a job's
    /// worker a name pinned beneath root by descriptor (served_folder::pin), in the server
    /// (which only checks fields and claims outputs) the place it shows.
    std::function<result<std::filesystem::path>(std::string_view field, std::string_view value)> locate;
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const ops::progress_event&)> on_progress;
    io::writer_backend writer = io::writer_backend::automatic;

    /// A field as a path inside root ("" when not given).
    [[nodiscard]] result<std::filesystem::path> path_field(std::string_view name) const;
    [[nodiscard]] std::string_view text(std::string_view name) const;
    [[nodiscard]] bool flag(std::string_view name) const;
};

struct action_outcome {
    std::string report_json;                     // report::to_json of the operation's report
    std::string report_text;                     // report::to_text of it: what the CLI prints
    std::vector<std::filesystem::path> outputs;  // files written, for download links
    bool passed = true;                          // verify: clean; diff: equivalent
};

struct action {
    std::string_view name;   // "merge": the command
    std::string_view title;  // "Merge": the button
    std::string_view summary;
    std::span<const field_spec> fields;
    std::string_view output_suffix;  // default output <stem>.<suffix>.onnx; empty: writes nothing
    result<action_outcome> (*run)(const action_input& input);
    /// The file a job claims when its default is not <stem>.<suffix>.onnx (convert's
    /// dtype, export's formats); null: from output_suffix.
    result<std::filesystem::path> (*claimed_output)(const action_input& input) = nullptr;
    /// A read-only action whose result depends only on the model and the fields: a job
    /// for a file whose identity (device, inode, size, modification time) and fields were
    /// seen before answers with that result at once (analyze, which the page runs on every
    /// model it opens).
    bool cached_result = false;
};

[[nodiscard]] std::span<const action> actions();

/// Remedies worded for the page: its fields, its buttons, dropping a file on it. JSON
/// documents for the page also list them as data ({"change", "argument"}).
[[nodiscard]] const report::hint_wording& page_wording() noexcept;
[[nodiscard]] const action* find_action(std::string_view name);

/// The model file an action will write (claimed so two jobs never write one output).
[[nodiscard]] result<std::filesystem::path> planned_output(const action& a, const action_input& input);

/// The action table as JSON for the page: [{"name","title","summary","writes","fields":[...]}].
[[nodiscard]] std::string actions_json();

}  // namespace onnxstream::server
