#include <onnxstream/onnx/how_found.hpp>

namespace onnxstream::onnx {

const char* to_string(found_by step) noexcept {
    switch (step) {
        case found_by::data_flag: return "data_flag";
        case found_by::model_folder: return "model_folder";
        case found_by::data_dir: return "data_dir";
        case found_by::data_dir_file_name: return "data_dir_file_name";
        case found_by::file_name_in_model_folder: return "file_name_in_model_folder";
        case found_by::common_name: return "common_name";
        case found_by::only_data_file: return "only_data_file";
    }
    return "unknown";
}

bool is_guess(found_by step) noexcept {
    return step == found_by::file_name_in_model_folder || step == found_by::common_name || step == found_by::only_data_file;
}

std::string guess_words(const how_found& how) {
    switch (how.step) {
        case found_by::file_name_in_model_folder: return "the file name in the model's folder";
        case found_by::common_name: return "common name " + how.common_name;
        case found_by::only_data_file: return "the only data file in the model's folder";
        case found_by::data_flag:
        case found_by::model_folder:
        case found_by::data_dir:
        case found_by::data_dir_file_name: break;
    }
    return {};
}

}  // namespace onnxstream::onnx
