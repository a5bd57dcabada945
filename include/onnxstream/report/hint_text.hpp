// Hints worded for one front end. An error's hint names remedies by slot ({0}, {1} ...:
// see error.hpp); a front end supplies a `hint_wording` that words each remedy as its own
// control (the CLI as a flag, the page as a field or a button), and every renderer
// (report/text.hpp, report/json.hpp) fills the slots with it. The same wording says how a
// data file was found (onnx/how_found.hpp): "--data-dir DIR" on the command line, "in the
// folder you gave" on the page.
#pragma once

#include <onnxstream/error.hpp>
#include <onnxstream/onnx/how_found.hpp>

#include <filesystem>

#include <span>
#include <string>
#include <string_view>

namespace onnxstream::report {

struct hint_wording {
    /// The words for one remedy, as they fit in a sentence ("--force", "the field 'output'").
    std::string (*word)(const remedy_step& step) = nullptr;
    /// JSON documents also list the remedies as data ({"change", "argument"}), for a
    /// front end that offers them as buttons.
    bool list_remedies = false;
    /// How a data file was found, as it fits in "found: FILE (...)" ("--data-dir DIR",
    /// "in the folder you gave"); `file` is the file found. Null: the step's stable name.
    std::string (*found)(const onnx::how_found& how, const std::filesystem::path& file) = nullptr;
};

/// `hint` with each {i} replaced by the wording of steps[i] and each "{{" by "{" (text
/// quoted with quoted_in_hint). A slot with no step, or any other brace, stays as written.
/// A hint without steps is returned as it is (nothing in it was quoted).
[[nodiscard]] std::string worded_hint(std::string_view hint, std::span<const remedy_step> steps, const hint_wording& wording);
/// The error's hint, worded.
[[nodiscard]] std::string worded_hint(const error& e, const hint_wording& wording);

/// How `file` was found, worded by `wording.found` (or the step's stable name).
[[nodiscard]] std::string worded_found(const onnx::how_found& how, const std::filesystem::path& file,
                                       const hint_wording& wording);

}  // namespace onnxstream::report
