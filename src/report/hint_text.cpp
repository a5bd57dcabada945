#include <onnxstream/report/hint_text.hpp>

namespace onnxstream::report {

std::string worded_hint(std::string_view hint, std::span<const remedy_step> steps, const hint_wording& wording) {
    if (steps.empty()) return std::string(hint);
    std::string text;
    std::size_t at = 0;
    while (at < hint.size()) {
        const auto open = hint.find('{', at);
        if (open == std::string_view::npos) break;
        // Only "{" digit+ "}" naming a step is a slot.
        std::size_t close = open + 1;
        std::size_t index = 0;
        while (close < hint.size() && close - open <= 3 && hint[close] >= '0' && hint[close] <= '9')
            index = index * 10 + static_cast<std::size_t>(hint[close++] - '0');
        const bool slot = close > open + 1 && close < hint.size() && hint[close] == '}' && index < steps.size();
        text.append(hint.substr(at, open - at));
        if (open + 1 < hint.size() && hint[open + 1] == '{') {  // "{{": a quoted brace (quoted_in_hint)
            text += '{';
            at = open + 2;
        } else if (slot) {
            text += wording.word != nullptr ? wording.word(steps[index]) : std::string(to_string(steps[index].change));
            at = close + 1;
        } else {
            text += '{';
            at = open + 1;
        }
    }
    text.append(hint.substr(std::min(at, hint.size())));
    return text;
}

std::string worded_hint(const error& e, const hint_wording& wording) { return worded_hint(e.hint, e.remedies, wording); }

std::string worded_found(const onnx::how_found& how, const std::filesystem::path& file, const hint_wording& wording) {
    return wording.found != nullptr ? wording.found(how, file) : std::string(to_string(how.step));
}

}  // namespace onnxstream::report
