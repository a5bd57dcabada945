#include <onnxstream/passes/pass_registry.hpp>

#include <algorithm>

namespace onnxstream::passes {

// Every pass in the default order: each name is a function, defined in the pass's own
// file, that returns its entry.
#define ONNXSTREAM_PASS_LIST(X)  \
    X(dead_code_pass)            \
    X(constant_if_pass)          \
    X(shape_folding_pass)        \
    X(constant_folding_pass)     \
    X(nop_removal_pass)          \
    X(common_subexpression_pass) \
    X(identity_pass)             \
    X(batchnorm_folding_pass)    \
    X(fusion_pass)

#define ONNXSTREAM_DECLARE_PASS(entry) pass_entry entry();
ONNXSTREAM_PASS_LIST(ONNXSTREAM_DECLARE_PASS)
#undef ONNXSTREAM_DECLARE_PASS

std::span<const pass_entry> pass_registry() {
#define ONNXSTREAM_CALL_PASS(entry) entry(),
    static const std::vector<pass_entry> all{ONNXSTREAM_PASS_LIST(ONNXSTREAM_CALL_PASS)};
#undef ONNXSTREAM_CALL_PASS
    return all;
}

const pass_entry* find_pass(std::string_view name) {
    for (const auto& p : pass_registry())
        if (p.name == name) return &p;
    return nullptr;
}

std::string pass_names(std::string_view separator) {
    std::string out;
    for (const auto& p : pass_registry()) {
        if (!out.empty()) out += separator;
        out += p.name;
    }
    return out;
}

result<std::vector<const pass_entry*>> parse_pass_list(std::string_view list) {
    std::vector<const pass_entry*> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        const auto comma = list.find(',', start);
        const auto word = list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        const auto* pass = find_pass(word);
        if (pass == nullptr)
            return failure(error_code::invalid_argument,
                           "unknown pass '" + std::string(word) + "' (the passes are " + pass_names() + ")");
        if (std::find(out.begin(), out.end(), pass) != out.end())
            return failure(error_code::invalid_argument, "pass '" + std::string(word) + "' is given twice");
        out.push_back(pass);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace onnxstream::passes
