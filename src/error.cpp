#include <onnxstream/error.hpp>

namespace onnxstream {

const char* to_string(error_code code) noexcept {
    switch (code) {
        case error_code::io: return "io";
        case error_code::no_space: return "no_space";
        case error_code::malformed: return "malformed";
        case error_code::limit_exceeded: return "limit_exceeded";
        case error_code::not_onnx: return "not_onnx";
        case error_code::missing_data: return "missing_data";
        case error_code::truncated_data: return "truncated_data";
        case error_code::unsafe_location: return "unsafe_location";
        case error_code::invalid_tensor: return "invalid_tensor";
        case error_code::size_mismatch: return "size_mismatch";
        case error_code::checksum_mismatch: return "checksum_mismatch";
        case error_code::too_large: return "too_large";
        case error_code::output_exists: return "output_exists";
        case error_code::output_is_input: return "output_is_input";
        case error_code::interrupted: return "interrupted";
        case error_code::unsupported: return "unsupported";
        case error_code::invalid_argument: return "invalid_argument";
    }
    return "unknown";
}

const char* to_string(remedy change) noexcept {
    switch (change) {
        case remedy::replace_output: return "replace_output";
        case remedy::choose_output: return "choose_output";
        case remedy::give_data_file: return "give_data_file";
        case remedy::give_data_folder: return "give_data_folder";
        case remedy::give_data_location: return "give_data_location";
        case remedy::refuse_guesses: return "refuse_guesses";
        case remedy::accept_size_mismatch: return "accept_size_mismatch";
        case remedy::choose_data_name: return "choose_data_name";
        case remedy::repack_in_place: return "repack_in_place";
        case remedy::keep_external_data: return "keep_external_data";
        case remedy::embed_weights: return "embed_weights";
        case remedy::inspect_model: return "inspect_model";
        case remedy::optimize_first: return "optimize_first";
        case remedy::give_input_shape: return "give_input_shape";
        case remedy::choose_dialect: return "choose_dialect";
        case remedy::fewer_threads: return "fewer_threads";
        case remedy::leave_out_check: return "leave_out_check";
        case remedy::reuse_data: return "reuse_data";
        case remedy::choose_dtype: return "choose_dtype";
    }
    return "unknown";
}

std::string error::describe() const {
    std::string text = message;
    if (!field_path.empty()) text += " (at " + field_path + ")";
    if (offset != no_offset) text += " [byte " + std::to_string(offset) + "]";
    return text;
}

error os_failure(std::string what, std::error_code os, std::string hint) {
    error e;
    e.code = os == std::errc::no_space_on_device ? error_code::no_space : error_code::io;
    e.message = std::move(what) + ": " + os.message();
    e.hint = std::move(hint);
    e.os_error = os;
    return e;
}

std::string quoted_in_hint(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        out += c;
        if (c == '{') out += '{';
    }
    return out;
}

void add_remedy(error& e, std::string_view hint_tail, remedy_step step) {
    if (e.remedies.empty()) e.hint = quoted_in_hint(e.hint);
    const auto slot = "{" + std::to_string(e.remedies.size()) + "}";
    std::string tail(hint_tail);
    if (const auto at = tail.find("{N}"); at != std::string::npos) tail.replace(at, 3, slot);
    e.hint += tail;
    e.remedies.push_back(std::move(step));
}

error with_remedies(error e, std::string hint, std::vector<remedy_step> steps) {
    e.hint = std::move(hint);
    e.remedies = std::move(steps);
    return e;
}

}  // namespace onnxstream
